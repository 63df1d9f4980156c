"""memory_tool: the real Anthropic SDK's tool runner against a scripted model on 127.0.0.1, memfold behind it.

Every test checks what the model received back (the ``tool_result`` blocks the fake server logged),
the files, and the receipts; refusals also the stable code in memfold's log.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from conftest import REPO, Env, held_lock
from fake_model_server import FakeModelServer
from memtool_support import (
    SLACK_TOKEN,
    Session,
    answered,
    log_entries,
    receipt_commands,
    receipts,
    refused,
    use,
)

from pipeline.hosts.memory_tool import AsyncMemfoldMemoryTool, MemfoldMemoryTool, MemoryToolRefused

pytestmark = pytest.mark.integration


def _file(env: Env, name: str) -> bytes:
    return (env.harness / name).read_bytes()


def _text(env: Env, name: str) -> str:
    """The file's text after memfold's frontmatter."""
    data = _file(env, name).decode()
    return data.split("\n---\n", 1)[1]


def test_the_runner_sends_the_tool_definition_and_each_command_is_answered_and_receipted(
        env: Env, tool_session: Session, scripted_model: FakeModelServer) -> None:
    results = tool_session.run(
        [use("view", path="/memories")],
        [use("create", path="/memories/deploy.md", file_text="# Deploy\nBlue/green via ops/deploy.sh\n")],
        [use("str_replace", path="/memories/deploy.md", old_str="Blue/green", new_str="Canary then blue/green")],
        [use("insert", path="/memories/deploy.md", insert_line=1, insert_text="Owner: the platform team")],
        [use("view", path="/memories/deploy.md")],
        [use("rename", old_path="/memories/deploy.md", new_path="/memories/release.md")],
        [use("view", path="/memories")],
        [use("delete", path="/memories/release.md")],
        [use("view", path="/memories")],
    )
    first = scripted_model.model_calls()[0].body
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    texts = [answered(r) for r in results]
    header = "Here are the memory files in /memories (one flat folder, no directories), with the size of each:"
    assert texts[0] == f"{header}\n0B\t/memories"
    assert texts[1] == "File created successfully at: /memories/deploy.md"
    assert texts[2] == ("The memory file /memories/deploy.md has been edited. Here is a snippet of it with line "
                        "numbers:\n     1\t# Deploy\n     2\tCanary then blue/green via ops/deploy.sh\n     3\t")
    assert texts[3] == "The file /memories/deploy.md has been edited."
    assert texts[4] == ("Here's the content of /memories/deploy.md with line numbers:\n     1\t# Deploy\n"
                        "     2\tOwner: the platform team\n     3\tCanary then blue/green via ops/deploy.sh\n     4\t")
    assert texts[5] == "Successfully renamed /memories/deploy.md to /memories/release.md"
    size = len("# Deploy\nOwner: the platform team\nCanary then blue/green via ops/deploy.sh\n")
    assert texts[6] == f"{header}\n{size}B\t/memories\n{size}B\t/memories/release.md"
    assert texts[7] == "Successfully deleted /memories/release.md"
    assert texts[8] == f"{header}\n0B\t/memories"
    assert receipt_commands(env) == ["memory-tool create", "memory-tool str_replace", "memory-tool insert",
                                     "memory-tool rename", "memory-tool delete"]
    assert not (env.harness / "release.md").exists() and not (env.harness / "deploy.md").exists()
    assert [e["ok"] for e in log_entries(env)] == [True] * 9
    assert env.run("audit").code == 0


def test_a_created_file_is_a_private_reference_memory_with_derived_frontmatter(env: Env, tool_session: Session) -> None:
    answered(tool_session.one(use("create", path="/memories/ci_notes.md",
                             file_text="\n## CI runs on every push\nand on tags\n\n")))
    data = _file(env, "ci_notes.md").decode()
    head, text = data.split("\n---\n", 1)
    assert head.splitlines()[1:5] == ["name: ci_notes", "description: CI runs on every push", "type: reference",
                                      "visibility: private"]
    assert text == "\n## CI runs on every push\nand on tags\n\n"
    assert not (env.mirror / "ci_notes.md").exists()
    shown = env.run("show", "ci_notes", "--json").json()
    assert shown["visibility"] == "private" and shown["type"] == "reference"


@pytest.mark.parametrize(("path", "code"), [
    ("/memories/../../etc/passwd", "memtool.traversal"),
    ("/memories/./notes.md", "memtool.traversal"),
    ("/etc/passwd", "memtool.outside"),
    ("/memoriesx/notes.md", "memtool.outside"),
    ("memories/notes.md", "memtool.outside"),
    ("/memories/%2e%2e/notes.md", "memtool.encoded"),
    ("/memories/..%2fnotes.md", "memtool.encoded"),
    ("/memories/sub\\notes.md", "memtool.encoded"),
    ("/memories/sub\u2215notes.md", "memtool.encoded"),
    ("/memories/sub/notes.md", "memtool.directory"),
    ("/memories/MEMORY.md", "memtool.reserved"),
    ("/memories/notes.txt", "memory.name"),
    ("/memories/.hidden.md", "memory.name"),
    ("/memories/aux.md", "memory.name-reserved"),
    ("/memories/notes\x00.md", "memtool.path"),
])
def test_hostile_paths_are_refused_with_their_code_and_nothing_is_written(
        env: Env, tool_session: Session, tmp_path: Path, path: str, code: str) -> None:
    answered(tool_session.one(use("create", path="/memories/keep.md", file_text="kept")))
    before, logged = env.snapshot(), len(log_entries(env))
    results = tool_session.run([use("create", path=path, file_text="owned"), use("view", path=path),
                           use("str_replace", path=path, old_str="kept", new_str="owned"),
                           use("delete", path=path), use("rename", old_path="/memories/keep.md", new_path=path)])
    for result in results:
        text = refused(result)
        assert "/memories/<name>.md" in text or "/memories/" in text, text
    assert [e["code"] for e in log_entries(env)[logged:]] == [code] * 5
    assert env.snapshot() == before
    assert len(receipts(env)) == 1
    assert not (tmp_path / "etc").exists() and not (env.harness.parent / "notes.md").exists()


def test_a_symlink_planted_in_the_store_is_refused_and_what_it_points_at_is_untouched(
        env: Env, tool_session: Session, tmp_path: Path) -> None:
    answered(tool_session.one(use("create", path="/memories/keep.md", file_text="kept")))
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"---\ndescription: outside\n---\nnot ours\n")
    (env.harness / "link.md").symlink_to(outside)
    results = tool_session.run([use("view", path="/memories"), use("view", path="/memories/link.md"),
                           use("str_replace", path="/memories/link.md", old_str="not ours", new_str="ours")])
    for result in results:
        text = refused(result)
        assert "symlink" in text and str(env.home) not in text and "<memfold home>" in text
    assert {e["code"] for e in log_entries(env)[1:]} == {"path.symlink"}
    assert outside.read_bytes() == b"---\ndescription: outside\n---\nnot ours\n"
    assert len(receipts(env)) == 1


def test_a_huge_file_text_is_refused_before_anything_is_written(env: Env, tool_session: Session) -> None:
    result = tool_session.one(use("create", path="/memories/dump.md", file_text="x" * (4 << 20)))
    text = refused(result)
    assert "65536" in text and "Nothing was written" in text and "x" * 50 not in text
    assert log_entries(env)[-1]["code"] == "bounds.file-size"
    assert not (env.home / "projects").exists() or not (env.harness / "dump.md").exists()
    assert receipts(env) == []


def test_a_secret_written_to_a_private_memory_is_refused_when_a_person_later_makes_it_safe(
        env: Env, tool_session: Session) -> None:
    answered(tool_session.one(use("create", path="/memories/slack.md", file_text=f"bot token {SLACK_TOKEN}\n")))
    assert SLACK_TOKEN.encode() in _file(env, "slack.md")  # private: the store may hold it, the mirror never
    count = len(receipts(env))
    published = env.run("update", "slack.md", "--visibility", "safe")
    assert published.code == 1 and "slack" in published.err.lower() and SLACK_TOKEN not in published.err
    assert not (env.mirror / "slack.md").exists() and len(receipts(env)) == count


def test_a_secret_written_into_a_safe_memory_is_refused_naming_the_rule_not_the_value(
        env: Env, tool_session: Session) -> None:
    answered(tool_session.one(use("create", path="/memories/chat.md", file_text="Team chat: #dev\n")))
    assert env.run("update", "chat.md", "--visibility", "safe").code == 0
    answered(tool_session.one(use("str_replace", path="/memories/chat.md", old_str="#dev", new_str="#deploys")))
    assert (env.mirror / "chat.md").read_bytes() == _file(env, "chat.md")  # a safe memory's edit is mirrored
    assert _text(env, "chat.md") == "Team chat: #deploys\n"
    mirror_before, count = (env.mirror / "chat.md").read_bytes(), len(receipts(env))
    text = refused(tool_session.one(use("str_replace", path="/memories/chat.md", old_str="#deploys",
                                   new_str=f"#deploys, bot {SLACK_TOKEN}")))
    assert "slack-token at line 1 of its text" in text and SLACK_TOKEN not in text and "shared with the team" in text
    assert log_entries(env)[-1]["code"].startswith("privacy.")
    assert (env.mirror / "chat.md").read_bytes() == mirror_before == _file(env, "chat.md")
    assert len(receipts(env)) == count
    assert SLACK_TOKEN not in (env.home / "logs" / "memory-tool.jsonl").read_text()


def test_a_safe_memory_may_not_take_on_the_wording_of_a_private_one(env: Env, tool_session: Session) -> None:
    wording = "The staging database password rotates on the first Monday; ask Priya for the vault path"
    answered(tool_session.one(use("create", path="/memories/staging.md", file_text=wording)))
    answered(tool_session.one(use("create", path="/memories/shared.md", file_text="Shared notes\n")))
    assert env.run("update", "shared.md", "--visibility", "safe").code == 0
    before = env.snapshot()
    text = refused(tool_session.one(use("insert", path="/memories/shared.md", insert_line=1, insert_text=wording)))
    assert "staging.md" in text and "shared with the team" in text
    assert log_entries(env)[-1]["code"] == "privacy.publish-near-copy"
    assert env.snapshot() == before


def test_str_replace_with_zero_or_several_matches_and_insert_past_the_end_change_nothing(
        env: Env, tool_session: Session) -> None:
    answered(tool_session.one(use("create", path="/memories/todo.md", file_text="- a\n- b\n- a\n")))
    before = env.snapshot()
    none, several, past, negative = tool_session.run([
        use("str_replace", path="/memories/todo.md", old_str="- z", new_str="- y"),
        use("str_replace", path="/memories/todo.md", old_str="- a", new_str="- y"),
        use("insert", path="/memories/todo.md", insert_line=4, insert_text="- c"),
        use("insert", path="/memories/todo.md", insert_line=-1, insert_text="- c"),
    ])
    assert "did not appear verbatim in /memories/todo.md" in refused(none)
    assert "appears 2 times in /memories/todo.md (lines 1, 3)" in refused(several)
    assert "insert_line 4 is outside /memories/todo.md, which has 3 lines" in refused(past)
    assert "insert_line -1 is outside" in refused(negative)
    assert [e["code"] for e in log_entries(env)[1:]] == ["memtool.no-match", "memtool.several-matches",
                                                        "memtool.insert-line", "memtool.insert-line"]
    assert env.snapshot() == before and len(receipts(env)) == 1


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_malformed_inputs_get_an_error_naming_the_field(env: Env, tool_session: Session) -> None:
    results = tool_session.run([
        use("create", path="/memories/a.md"),
        use("create", path=7, file_text="x"),
        use("insert", path="/memories/a.md", insert_line=True, insert_text="x"),
        use("insert", path="/memories/a.md", insert_line="2", insert_text="x"),
        use("view", path="/memories", view_range=[1, "x"]),
        use("view", path="/memories", view_range=[3, 1]),
        use("move", path="/memories/a.md"),
        {"path": "/memories/a.md"},
        {"type": "tool_use", "id": "toolu_list", "name": "memory", "input": ["view", "/memories"]},
    ])
    texts = [refused(r) for r in results]
    assert "'file_text' is required" in texts[0]
    assert "'path'" in texts[1] and "string" in texts[1]
    assert "'insert_line'" in texts[2] and "'insert_line'" in texts[3]
    assert "'view_range.1'" in texts[4]
    assert "view_range [3, 1] is not a range" in texts[5]
    for text in texts[6:]:
        assert "view, create, str_replace, insert, delete, rename" in text
    logged = log_entries(env)
    assert [e["code"] for e in logged] == ["memtool.arguments"] * 5 + ["memtool.view-range"] + \
        ["memtool.arguments"] * 3
    assert [e["paths"] for e in logged[:3]] == [["/memories/a.md"], [], ["/memories/a.md"]]
    assert receipts(env) == []


def test_create_refuses_an_existing_file_and_a_name_differing_only_by_case(env: Env, tool_session: Session) -> None:
    answered(tool_session.one(use("create", path="/memories/notes.md", file_text="one")))
    before = env.snapshot()
    same, case = tool_session.run([use("create", path="/memories/notes.md", file_text="two"),
                              use("create", path="/memories/Notes.md", file_text="two")])
    assert "File /memories/notes.md already exists" in refused(same)
    assert "clashes with /memories/notes.md" in refused(case)
    missing = refused(tool_session.one(use("view", path="/memories/NOTES.md")))
    assert "does not exist; did you mean /memories/notes.md?" in missing
    assert env.snapshot() == before and len(receipts(env)) == 1


def test_the_count_bound_is_a_clear_tool_error(env: Env, scripted_model: FakeModelServer) -> None:
    env.home.mkdir()
    (env.home / "config.yaml").write_text("limits:\n  max_files: 2\n")
    tool = MemfoldMemoryTool(env.project, home=env.home)
    chat = Session(scripted_model, tool)
    results = chat.run([use("create", path=f"/memories/n{i}.md", file_text=f"note {i}") for i in range(3)])
    assert [r.get("is_error") is True for r in results] == [False, False, True]
    assert "the store holds 2 memory files, memfold's bound" in refused(results[2])
    assert log_entries(env)[-1]["code"] == "bounds.file-count"
    assert sorted(p.name for p in env.harness.glob("n*.md")) == ["n0.md", "n1.md"]
    tool.close()


def test_a_busy_store_answers_with_the_lock_holder_and_writes_nothing_while_view_takes_no_lock(
        env: Env, scripted_model: FakeModelServer, holder: Any) -> None:
    (env.home / "config.yaml").write_text("lock:\n  timeout: 0.2\n")
    tool = MemfoldMemoryTool(env.project, home=env.home)
    chat = Session(scripted_model, tool)
    seen, write = chat.run([use("view", path="/memories/early.md"),
                            use("create", path="/memories/late.md", file_text="late")])
    assert answered(seen).endswith("     1\twritten before the lock\n     2\t")
    text = refused(write)
    assert "20261130T120000Z-0badc0de" in text
    assert log_entries(env)[-1]["code"] == "lock.held"
    assert not (env.harness / "late.md").exists()
    tool.close()


@pytest.fixture
def holder(env: Env) -> Iterator[Any]:
    assert env.run("add", "early.md", "-d", "a memory from before", "-b", "written before the lock").code == 0
    with held_lock(env) as proc:
        yield proc


def test_without_a_project_the_tool_uses_the_global_store_of_the_home_memfold_home_names(
        env: Env, scripted_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_HOME", str(env.home))
    tool = MemfoldMemoryTool()
    answered(Session(scripted_model, tool).one(use("create", path="/memories/tabs.md", file_text="Prefers tabs")))
    listed = env.run("list", "--global", "--json").json()
    assert [m["file"] for m in listed["memories"]] == ["tabs.md"]
    assert not (env.home / "projects").exists()
    assert tool.last_result is not None and tool.last_result.run_id is not None
    assert env.run("audit", "--global").code == 0
    tool.close()


def test_the_async_runner_drives_the_async_tool(env: Env, scripted_model: FakeModelServer) -> None:
    tool = AsyncMemfoldMemoryTool(env.project, home=env.home)
    scripted_model.turns = [[{"type": "tool_use", "id": "toolu_a1", "name": "memory",
                     "input": use("create", path="/memories/async.md", file_text="from the async runner")}],
                   [{"type": "tool_use", "id": "toolu_a2", "name": "memory",
                     "input": use("view", path="/memories/../async.md")}]]

    async def talk() -> None:
        client = anthropic.AsyncAnthropic(base_url=scripted_model.url, api_key="test-key", max_retries=0)
        runner = client.beta.messages.tool_runner(model="claude-test", max_tokens=64, tools=[tool],
                                                  messages=[{"role": "user", "content": "remember"}])
        await runner.until_done()

    asyncio.run(talk())
    blocks = [b for r in scripted_model.model_calls() for m in r.body.get("messages", [])
              if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == "tool_result"]
    assert answered(blocks[0]) == "File created successfully at: /memories/async.md"
    assert "'..'" in refused(blocks[1])
    assert _text(env, "async.md") == "from the async runner"
    tool.tool.close()


def test_a_refusal_raised_outside_the_runner_carries_memfolds_code(env: Env) -> None:
    tool = MemfoldMemoryTool(env.project, home=env.home)
    with pytest.raises(MemoryToolRefused) as caught:
        tool.call({"command": "view", "path": "/memories/missing.md"})
    assert caught.value.code == "memtool.not-found"
    assert caught.value.content == "The path /memories/missing.md does not exist; view /memories to see the files there"
    tool.close()


def test_the_log_holds_codes_and_paths_never_the_text_written(env: Env, tool_session: Session) -> None:
    tool_session.run([use("create", path="/memories/pw.md", file_text=f"token {SLACK_TOKEN}"),
                 use("create", path="/memories/pw.md", file_text=f"token {SLACK_TOKEN}")])
    log = (env.home / "logs" / "memory-tool.jsonl").read_text()
    assert SLACK_TOKEN not in log
    entries = log_entries(env)
    assert [(e["command"], e["paths"], e["ok"], e.get("code")) for e in entries] == [
        ("create", ["/memories/pw.md"], True, None), ("create", ["/memories/pw.md"], False, "memtool.exists")]
    assert entries[0]["runId"] == json.loads(receipts(env)[0].read_bytes())["runId"]
    digest = hashlib.sha256(_file(env, "pw.md")).hexdigest()
    assert json.loads(receipts(env)[0].read_bytes())["finalHashes"]["harness"]["pw.md"].removeprefix("sha256:") \
        == digest


def test_the_example_on_the_docs_page_runs_and_is_under_thirty_lines(
        env: Env, scripted_model: FakeModelServer) -> None:
    page = (REPO / "docs" / "hosts" / "memory-tool.md").read_text()
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(example.splitlines()) < 30
    scripted_model.turns = [
        [{"type": "tool_use", "id": "toolu_doc1", "name": "memory",
          "input": use("create", path="/memories/deploys.md", file_text="Deploys go through ops/deploy.sh\n")}],
        [{"type": "text", "text": "Noted."}],
    ]
    proc = subprocess.run([sys.executable, "-c", example], cwd=env.project, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "MEMFOLD_HOME": str(env.home),
                                            "ANTHROPIC_BASE_URL": scripted_model.url, "ANTHROPIC_API_KEY": "test-key"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    run_id = json.loads(receipts(env)[-1].read_bytes())["runId"]
    assert proc.stdout.splitlines() == ["Noted.", f"undo the last write with: memfold undo {run_id}"]
    assert _text(env, "deploys.md") == "Deploys go through ops/deploy.sh\n"


def test_without_the_sdk_the_import_says_which_extra_to_install() -> None:
    code = ("import sys\nsys.modules['anthropic'] = None\n"
            "try:\n    import pipeline.hosts.memory_tool\nexcept ImportError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.strip() == "memfold's memory tool needs the Anthropic SDK: pip install 'memfold[anthropic]'"
