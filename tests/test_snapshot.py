"""Context snapshot: format normalisation, candidates, bounds and byte stability."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.context.snapshot import ContextLimits, build_snapshot
from pipeline.errors import InputRejected
from pipeline.fsutil import sha256_bytes
from pipeline.store.jsontext import dump_json

DATA = Path(__file__).parent / "data" / "transcripts"
LIMITS = ContextLimits()


def snap(name: str, limits: ContextLimits = LIMITS) -> dict[str, Any]:
    obj, _ = build_snapshot((DATA / name).read_bytes(), source=str(DATA / name), limits=limits)
    return obj


def test_disabled_context() -> None:
    obj, data = build_snapshot(None, source="", limits=LIMITS)
    assert obj == {
        "kind": "memfold-context-snapshot",
        "schemaVersion": 1,
        "contextMode": "disabled",
        "format": "none",
        "source": "",
        "entries": [],
        "candidates": [],
        "stats": {"lines": 0, "skipped": 0, "entries": 0},
    }
    assert data == dump_json(obj)


@pytest.mark.integration
def test_a_disabled_context_does_not_import_yaml() -> None:
    code = ("import sys\n"
            "from pipeline.context.snapshot import ContextLimits, build_snapshot\n"
            "build_snapshot(None, source='', limits=ContextLimits())\n"
            "print('yaml' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"False\n"


def test_claude_main_chain_after_rewind() -> None:
    obj = snap("claude-rewind.jsonl")
    assert obj["format"] == "claude-jsonl"
    assert obj["source"] == "claude-rewind.jsonl"
    assert obj["contextMode"] == "transcript"
    memory_path = "/home/u/.claude/projects/-w-app/memory/use-pnpm.md"
    content = (
        "---\nname: use-pnpm\ndescription: the project uses pnpm, never npm\ntype: feedback\n---\n"
        "Use pnpm, never npm.\n"
    )
    # The abandoned branch, the sidechain and the meta line are gone; msg_3's
    # three split lines form one response (thinking dropped).
    assert obj["entries"] == [
        {"role": "user", "text": "Set up the project.\nremember: we deploy with ops/deploy.sh"},
        {"role": "assistant", "text": "First answer"},
        {"role": "user", "text": "Actually, use pnpm."},
        {"role": "assistant", "text": "Saving that."},
        {"role": "assistant", "text": "", "tool": {"name": "Write", "input": {"file_path": memory_path, "content": content}}},
        {"role": "tool", "text": "File created successfully"},
        {"role": "assistant", "text": "Done."},
    ]
    assert obj["candidates"] == [
        {"body": "we deploy with ops/deploy.sh", "origin": "remember-line"},
        {
            "name": "use-pnpm",
            "description": "the project uses pnpm, never npm",
            "type": "feedback",
            "body": "Use pnpm, never npm.\n",
            "origin": "tool-call",
        },
    ]
    assert obj["stats"] == {"lines": 17, "skipped": 2, "entries": 7}


def test_claude_parallel_tool_results_beside_the_chain() -> None:
    def line(kind: str, uid: str, parent: str | None, content: Any, mid: str | None = None) -> str:
        message: dict[str, Any] = {"role": kind, "content": content}
        if mid:
            message["id"] = mid
        return json.dumps({"type": kind, "uuid": uid, "parentUuid": parent, "message": message})

    lines = [
        line("user", "u1", None, "go"),
        line("assistant", "a1", "u1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}], "m1"),
        line("assistant", "a2", "a1", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"p": 2}}], "m1"),
        line("user", "r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]),
        line("user", "r2", "a2", [{"type": "tool_result", "tool_use_id": "t2", "content": "two"}]),
        line("assistant", "a3", "r2", [{"type": "text", "text": "both read"}], "m2"),
    ]
    obj, _ = build_snapshot("\n".join(lines).encode(), source="s.jsonl", limits=LIMITS)
    assert [(e["role"], e["text"]) for e in obj["entries"]] == [
        ("user", "go"),
        ("assistant", ""),
        ("assistant", ""),
        ("tool", "one"),
        ("tool", "two"),
        ("assistant", "both read"),
    ]


def test_pi_session_leaf_branch() -> None:
    obj = snap("pi-session.jsonl")
    assert obj["format"] == "pi-session"
    assert obj["entries"] == [
        {"role": "user", "text": "plan it"},
        {"role": "user", "text": "note: CI runs on Fridays"},
        {
            "role": "assistant",
            "text": "",
            "tool": {"name": "write", "input": {"path": "/w/app/.pi/memory/ci-schedule.md", "content": "CI runs on Fridays."}},
        },
        {"role": "tool", "text": "Successfully wrote 19 bytes"},
        {"role": "assistant", "text": "Saved."},
    ]
    # The note and the write are one fact: the write, which names it, is the candidate.
    assert obj["candidates"] == [{"name": "ci-schedule", "body": "CI runs on Fridays.", "origin": "tool-call"}]


def test_pi_json_stream() -> None:
    obj = snap("pi-stream.jsonl")
    assert obj["format"] == "pi-json"
    tool_input = {"name": "indent-style", "description": "indentation uses tabs", "body": "Use tabs."}
    assert obj["entries"] == [
        {"role": "user", "text": "remember: tabs, not spaces"},
        {"role": "assistant", "text": "", "tool": {"name": "memory_add", "input": tool_input}},
        {"role": "tool", "text": "ok"},
        {"role": "assistant", "text": "Done."},
    ]
    assert obj["candidates"] == [
        {"body": "tabs, not spaces", "origin": "remember-line"},
        {**tool_input, "origin": "tool-call"},
    ]


def test_codex_rollout_wrapped() -> None:
    obj = snap("codex-rollout.jsonl")
    assert obj["format"] == "codex-rollout"
    # The environment preamble is dropped; event_msg copies of messages are not doubled.
    assert obj["entries"] == [
        {"role": "user", "text": "note: staging lives at staging.example.test"},
        {"role": "assistant", "text": "", "tool": {"name": "shell", "input": {"command": ["ls"]}}},
        {"role": "tool", "text": "README.md"},
        {"role": "assistant", "text": "All good."},
    ]
    assert obj["candidates"] == [{"body": "staging lives at staging.example.test", "origin": "remember-line"}]


def test_codex_rollout_early_flat_records() -> None:
    obj = snap("codex-flat.jsonl")
    assert obj["format"] == "codex-rollout"
    assert obj["entries"] == [
        {"role": "user", "text": "remember: run make lint before pushing"},
        {
            "role": "assistant",
            "text": "",
            "tool": {"name": "memfold__memory_add", "input": {"name": "lint-first", "body": "Run make lint before pushing."}},
        },
        {"role": "tool", "text": "stored"},
        {"role": "assistant", "text": "Noted."},
    ]
    assert obj["candidates"] == [{"name": "lint-first", "body": "Run make lint before pushing.", "origin": "tool-call"}]


def test_plain_json_with_candidates() -> None:
    obj = snap("plain-candidates.json")
    assert obj["format"] == "json"
    assert obj["entries"] == [{"role": "user", "text": "hi"}, {"role": "assistant", "text": "hello"}]
    assert obj["candidates"] == [
        {
            "name": "deploy",
            "description": "deploys go through ops/deploy.sh",
            "type": "project",
            "visibility": "safe",
            "body": "Use ops/deploy.sh.",
            "origin": "candidates-array",
        },
        {
            "name": "db",
            "description": "tests use a real database",
            "type": "feedback",
            "visibility": "safe",
            "body": "Never mock the DB.",
            "origin": "record",
        },
    ]


def test_remember_lines_only_from_user_text() -> None:
    obj = snap("remember-lines.jsonl")
    assert obj["format"] == "json"
    assert obj["candidates"] == [
        {"type": "user", "body": "a record line", "origin": "record"},
        {"body": "the API is versioned", "origin": "remember-line"},
        {"body": "docs live in docs/", "origin": "remember-line"},
        {"body": "trim me", "origin": "remember-line"},
    ]


def test_list_of_messages_and_memory_file_rules() -> None:
    def write(path: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": path, "content": "x"}}

    doc = [
        {"role": "assistant", "content": [write("/p/memory/MEMORY.md"), write("/p/memory/a.txt"), write("/p/notes/b.md")]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "e", "name": "Edit",
                                           "input": {"file_path": "/p/memory/c.md", "old_string": "a", "new_string": "b"}}]},
    ]
    obj, _ = build_snapshot(json.dumps(doc).encode(), source="x", limits=LIMITS)
    assert obj["format"] == "json"
    assert obj["candidates"] == [{"name": "c", "body": "b", "origin": "tool-call"}]


def test_skipped_lines_and_unknown_types_are_counted_not_fatal() -> None:
    data = b'\n\xff\xfe not json\n{"type":"weird"}\n[1,2]\n{"role":"user","content":"caf\xc3\xa9"}\n'
    obj, _ = build_snapshot(data, source="C:\\Users\\me\\t.jsonl", limits=LIMITS)
    assert obj["source"] == "t.jsonl"
    assert obj["entries"] == [{"role": "user", "text": "café"}]
    assert obj["stats"] == {"lines": 5, "skipped": 3, "entries": 1}


def test_determinism_and_copy(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copy(DATA / "claude-rewind.jsonl", path)
    data = path.read_bytes()
    first = build_snapshot(data, source=str(path), limits=LIMITS)[1]
    path.write_text('{"role":"user","content":"changed"}\n')
    second = build_snapshot(data, source=str(path), limits=LIMITS)[1]
    assert first == second
    assert sha256_bytes(first) == sha256_bytes(second)
    assert json.loads(first)["entries"][0]["text"].startswith("Set up the project.")


def test_too_large_checked_before_parsing() -> None:
    limits = ContextLimits(max_input_bytes=1024)
    build_snapshot(b" " * 1024, source="x", limits=limits)
    with pytest.raises(InputRejected) as err:
        build_snapshot(b"[" * 1025, source="x", limits=limits)
    assert err.value.code == "context.too-large"


def test_real_size_bound() -> None:
    with pytest.raises(InputRejected) as err:
        build_snapshot(b" " * (32 * 1024 * 1024 + 1), source="x", limits=LIMITS)
    assert err.value.code == "context.too-large"


@pytest.mark.parametrize("data", [b"[" * 200, b"[" * 200 + b"]" * 200, b"[" * 100_000, b'{"a":' * 5000])
def test_too_deep_without_recursion(data: bytes) -> None:
    with pytest.raises(InputRejected) as err:
        build_snapshot(data, source="x", limits=LIMITS)
    assert err.value.code == "context.too-deep"


def test_depth_boundary() -> None:
    obj, _ = build_snapshot(b"[" * 128 + b"]" * 128, source="x", limits=LIMITS)
    assert obj["format"] == "json" and obj["entries"] == []
    with pytest.raises(InputRejected) as err:
        build_snapshot(b"[" * 129 + b"]" * 129, source="x", limits=LIMITS)
    assert err.value.code == "context.too-deep"
    # One deep line inside a JSONL file is rejected as well.
    jsonl = b'{"role":"user","content":"hi"}\n' + b'{"a":' * 129 + b"1" + b"}" * 129 + b"\n"
    with pytest.raises(InputRejected) as err:
        build_snapshot(jsonl, source="x", limits=LIMITS)
    assert err.value.code == "context.too-deep"
    # A pretty-printed deep document shows its depth only as a whole.
    pretty = json.dumps(json.loads("[" * 129 + "]" * 129), indent=1).encode()
    with pytest.raises(InputRejected):
        build_snapshot(pretty, source="x", limits=LIMITS)


def test_brackets_inside_strings_do_not_count() -> None:
    text = "[" * 500
    obj, _ = build_snapshot(json.dumps({"messages": [{"role": "user", "content": text}]}).encode(), source="x", limits=LIMITS)
    assert obj["entries"] == [{"role": "user", "text": text}]


def test_entry_and_candidate_bounds() -> None:
    limits = ContextLimits(max_entries=2, max_candidates=1, max_text_bytes=8)
    two = b'{"role":"user","content":"aaa"}\n{"role":"assistant","content":"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"}\n'
    obj, _ = build_snapshot(two, source="x", limits=limits)
    assert obj["entries"] == [
        {"role": "user", "text": "aaa"},
        {"role": "assistant", "text": "éééé", "truncated": True},
    ]
    with pytest.raises(InputRejected) as err:
        build_snapshot(two + b'{"role":"user","content":"b"}\n', source="x", limits=limits)
    assert err.value.code == "context.too-many-entries"
    with pytest.raises(InputRejected) as err:
        build_snapshot(b'{"role":"user","content":"note: a\\nnote: b"}', source="x", limits=limits)
    assert err.value.code == "context.too-many-candidates"


def test_large_tool_input_is_cut() -> None:
    limits = ContextLimits(max_text_bytes=64)
    doc = {"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "x" * 500}}]}]}
    obj, _ = build_snapshot(json.dumps(doc).encode(), source="x", limits=limits)
    entry = obj["entries"][0]
    assert entry["truncated"] is True
    assert entry["tool"]["name"] == "Bash"
    assert isinstance(entry["tool"]["input"], str) and len(entry["tool"]["input"]) == 64


def test_lone_surrogates_and_nan_do_not_break_encoding() -> None:
    data = b'{"role":"user","content":"bad \\ud800 text"}\n{"role":"user","content":NaN}\n'
    obj, raw = build_snapshot(data, source="x", limits=LIMITS)
    assert obj["entries"] == [{"role": "user", "text": "bad ? text"}]
    assert obj["stats"]["skipped"] == 1
    assert raw == dump_json(obj)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_only_input_rejected(data: bytes) -> None:
    try:
        obj, raw = build_snapshot(data, source="x", limits=ContextLimits(max_depth=8))
    except InputRejected:
        return
    assert raw == dump_json(obj)


@settings(max_examples=200, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "role", "content", "message", "uuid", "parentUuid", "payload", "id", "parentId"]),
        inner, max_size=5),
    max_leaves=30,
))
def test_arbitrary_json_shapes_only_input_rejected(value: Any) -> None:
    for data in (json.dumps(value).encode(), (json.dumps(value) + "\n") * 3):
        raw_bytes = data if isinstance(data, bytes) else data.encode()
        try:
            build_snapshot(raw_bytes, source="x", limits=ContextLimits(max_depth=8))
        except InputRejected:
            pass


def test_a_fact_mentioned_then_written_by_a_memory_tool_is_one_candidate_with_the_tools_fields() -> None:
    from pipeline.context.candidates import fold_duplicates

    mention = {"body": "we deploy on Fridays after 14:00 UTC.", "origin": "remember-line"}
    write = {"name": "deploy-day", "description": "production deploys happen on Fridays after 14:00 UTC",
             "type": "project", "body": "We deploy on Fridays after 14:00 UTC.\n", "origin": "tool-call"}
    other = {"body": "the cache lives in ops/cache.sh", "origin": "remember-line"}
    assert fold_duplicates([mention, other, write]) == [write, other]
    # A richer mention keeps what the bare write lacks; words inside other words are not a match.
    named = {"name": "ci", "body": "CI runs nightly", "origin": "record"}
    assert fold_duplicates([named, {"body": "CI runs nightly, on main", "visibility": "safe",
                                    "origin": "tool-call"}]) == [
        {"name": "ci", "body": "CI runs nightly, on main", "visibility": "safe", "origin": "tool-call"}]
    assert len(fold_duplicates([{"body": "deploy", "origin": "x"}, {"body": "redeploy often", "origin": "x"}])) == 2
