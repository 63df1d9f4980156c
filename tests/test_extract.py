"""Plan extraction from worker stdout: sources, bounds, ambiguity and agent failures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.errors import WorkerFailed
from pipeline.planner.planjson import plan_json
from pipeline.worker.extract import Extracted, ExtractLimits, extract_plan

LIMITS = ExtractLimits()
PLAN: dict[str, Any] = {"kind": "memory-consolidation-plan", "schemaVersion": 1, "runId": "r1", "operations": []}
OTHER: dict[str, Any] = {**PLAN, "runId": "r2"}


def jl(*records: Any) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def code_of(stdout: bytes, limits: ExtractLimits = LIMITS) -> str:
    with pytest.raises(WorkerFailed) as err:
        extract_plan(stdout, limits)
    assert err.value.exit_code == 4
    return err.value.code


def check(result: Extracted, source: str) -> None:
    assert result.source == source
    assert result.plan == PLAN
    assert result.plan_bytes == plan_json(PLAN)


def claude_result(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", "is_error": False, "result": text, "session_id": "s", **extra}


def assistant(text: str, mid: str = "msg_1") -> dict[str, Any]:
    return {"type": "assistant", "parent_tool_use_id": None, "session_id": "s",
            "message": {"id": mid, "role": "assistant", "content": [{"type": "text", "text": text}]}}


# --- sources ---------------------------------------------------------------


def test_bare_json_pretty_with_whitespace() -> None:
    check(extract_plan(b"\n  " + json.dumps(PLAN, indent=2).encode() + b"\n\n", LIMITS), "bare-json")


def test_plan_bytes_are_canonical_dump() -> None:
    compact = json.dumps(PLAN, separators=(",", ":")).encode()
    assert extract_plan(compact, LIMITS).plan_bytes == extract_plan(json.dumps(PLAN, indent=4).encode(), LIMITS).plan_bytes


def test_jsonl_event_among_other_output() -> None:
    out = b"starting worker\n" + jl({"type": "progress", "n": 1}, {"type": "consolidation_plan", "plan": PLAN}) + b"done\n"
    check(extract_plan(out, LIMITS), "jsonl-event")


def test_claude_result_object_and_verbose_array() -> None:
    check(extract_plan(json.dumps(claude_result(json.dumps(PLAN))).encode(), LIMITS), "claude-result")
    array = [{"type": "system", "subtype": "init"}, assistant(json.dumps(PLAN)), claude_result(json.dumps(PLAN))]
    check(extract_plan(json.dumps(array).encode(), LIMITS), "claude-result")


def test_claude_stream_json() -> None:
    out = jl({"type": "system", "subtype": "init", "session_id": "s"}, assistant("thinking aloud", "m0"),
             {"type": "rate_limit_event"}, claude_result(json.dumps(PLAN)))
    check(extract_plan(out, LIMITS), "claude-stream")


def test_claude_stream_without_result_uses_split_assistant_lines() -> None:
    body = json.dumps(PLAN)
    half = len(body) // 2
    out = jl({"type": "system", "subtype": "init"}, assistant(body[:half], "m9"), assistant(body[half:], "m9"))
    check(extract_plan(out, LIMITS), "claude-stream")


def test_pi_json_last_assistant_message_end() -> None:
    def end(role: str, text: str, stop: str = "stop") -> dict[str, Any]:
        return {"type": "message_end", "message": {"role": role, "content": [{"type": "text", "text": text}], "stopReason": stop}}

    out = jl({"type": "session", "version": 3, "id": "x"}, {"type": "agent_start"}, end("user", "go"),
             end("assistant", "working on it", "toolUse"), end("assistant", json.dumps(PLAN)), {"type": "agent_end", "messages": []})
    check(extract_plan(out, LIMITS), "pi-json")


def test_codex_json_last_agent_message() -> None:
    out = jl({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
             {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": "Let me look."}},
             {"type": "item.completed", "item": {"id": "i1", "type": "command_execution", "command": "ls", "exit_code": 0}},
             {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": json.dumps(PLAN)}},
             {"type": "turn.completed", "usage": {}})
    check(extract_plan(out, LIMITS), "codex-json")
    drift = jl({"type": "item.completed", "item": {"id": "i", "item_type": "assistant_message", "text": json.dumps(PLAN)}})
    check(extract_plan(drift, LIMITS), "codex-json")


def test_codex_legacy() -> None:
    out = jl({"id": "0", "msg": {"type": "agent_message", "message": "hm"}},
             {"id": "1", "msg": {"type": "task_complete", "last_agent_message": json.dumps(PLAN)}})
    check(extract_plan(out, LIMITS), "codex-legacy")


def test_fenced_json_block_accepted() -> None:
    text = "```json\n" + json.dumps(PLAN, indent=2) + "\n```"
    check(extract_plan(json.dumps(claude_result(text)).encode(), LIMITS), "claude-result")


# --- bounds ----------------------------------------------------------------


def test_line_count_boundary() -> None:
    limits = ExtractLimits()
    event = json.dumps({"type": "consolidation_plan", "plan": PLAN}).encode()
    exact = b"x\n" * (limits.max_lines - 1) + event + b"\n"
    check(extract_plan(exact, limits), "jsonl-event")
    assert code_of(b"x\n" + exact, limits) == "worker.too-many-lines"
    # Without the trailing newline the count is the same.
    check(extract_plan(exact[:-1], limits), "jsonl-event")


def test_line_length_boundary() -> None:
    limits = ExtractLimits()
    ok = b" " * (limits.max_line_bytes - len(json.dumps(PLAN))) + json.dumps(PLAN).encode()
    assert len(ok) == limits.max_line_bytes
    check(extract_plan(ok + b"\n", limits), "bare-json")
    assert code_of(b" " + ok + b"\n", limits) == "worker.line-too-long"


def test_output_and_plan_size_bounds() -> None:
    assert code_of(b" " * (16 * 1024 * 1024 + 1)) == "worker.output-too-large"
    small = ExtractLimits(max_plan_bytes=64)
    assert code_of(json.dumps(PLAN).encode(), small) == "worker.plan-too-large"


def test_plan_event_then_output_over_a_bound() -> None:
    event = jl({"type": "consolidation_plan", "plan": PLAN})
    assert code_of(event + b"y" * (1024 * 1024 + 1) + b"\n") == "worker.line-too-long"
    assert code_of(event + b"y\n" * 65_536) == "worker.too-many-lines"
    assert code_of(event + b" " * (16 * 1024 * 1024)) == "worker.output-too-large"


# --- ambiguity and non-plans ---------------------------------------------


def test_plan_event_with_non_object_plan() -> None:
    for bad in ([], "plan", None, 3):
        assert code_of(jl({"type": "consolidation_plan", "plan": bad})) == "worker.bad-plan-event"


def test_two_different_plans_rejected_same_plan_twice_ok() -> None:
    ev = lambda p: {"type": "consolidation_plan", "plan": p}  # noqa: E731
    assert code_of(jl(ev(PLAN), ev(OTHER))) == "worker.multiple-plans"
    check(extract_plan(jl(ev(PLAN), ev(dict(reversed(list(PLAN.items()))))), LIMITS), "jsonl-event")
    # An event and a differing final agent message are two plans as well.
    stream = jl({"type": "system", "subtype": "init"}, ev(PLAN), claude_result(json.dumps(OTHER)))
    assert code_of(stream) == "worker.multiple-plans"


def test_event_wins_over_prose_final_message() -> None:
    stream = jl({"type": "system", "subtype": "init"}, {"type": "consolidation_plan", "plan": PLAN}, claude_result("Done."))
    check(extract_plan(stream, LIMITS), "jsonl-event")


@pytest.mark.parametrize("stdout, fragment", [
    (b"All checks PASSED\n", "All checks PASSED"),
    (b"PASSED", "PASSED"),
    (b"", "empty"),
    (b'{"ok": true}', "no kind"),
    (b'{"kind": "something-else"}', "something-else"),
    (b"[1, 2]", "array"),
    (b"Here is the plan:\n" + json.dumps(PLAN).encode() + b"\n", "among other output"),
])
def test_no_plan_reasons(stdout: bytes, fragment: str) -> None:
    with pytest.raises(WorkerFailed) as err:
        extract_plan(stdout, LIMITS)
    assert err.value.code == "worker.no-plan"
    assert fragment in err.value.message
    assert len(err.value.message) < 300


@pytest.mark.parametrize("text", [
    "All checks PASSED",
    "Here it is: " + json.dumps(PLAN),
    json.dumps(PLAN) + "\nLet me know!",
    json.dumps(PLAN) + "\n" + json.dumps(PLAN),
    "Plan below\n```json\n" + json.dumps(PLAN) + "\n```",
    "```json\n" + json.dumps(PLAN) + "\n```\n```json\n" + json.dumps(PLAN) + "\n```",
    json.dumps({"steps": ["a"]}),
    "[" + json.dumps(PLAN) + "]",
    "",
])
def test_final_message_must_be_exactly_one_plan(text: str) -> None:
    assert code_of(json.dumps(claude_result(text)).encode()) == "worker.no-plan"


def test_long_prose_is_not_echoed() -> None:
    secretish = "x" * 10_000
    with pytest.raises(WorkerFailed) as err:
        extract_plan(json.dumps(claude_result("Result: " + secretish)).encode(), LIMITS)
    assert len(err.value.message) < 200


# --- agent failures ------------------------------------------------------


def test_claude_error_results() -> None:
    err_subtype = {"type": "result", "subtype": "error_max_turns", "is_error": False, "errors": ["max turns reached"]}
    api_error = claude_result("API Error: 529 overloaded", is_error=True)
    for record in (err_subtype, api_error):
        with pytest.raises(WorkerFailed) as err:
            extract_plan(json.dumps(record).encode(), LIMITS)
        assert err.value.code == "worker.agent-error"
    with pytest.raises(WorkerFailed) as err:
        extract_plan(jl({"type": "system", "subtype": "init"}, api_error), LIMITS)
    assert err.value.code == "worker.agent-error" and "529 overloaded" in err.value.message


def test_pi_aborted() -> None:
    msg = {"role": "assistant", "content": [], "stopReason": "aborted", "errorMessage": "Request was aborted"}
    with pytest.raises(WorkerFailed) as err:
        extract_plan(jl({"type": "agent_start"}, {"type": "message_end", "message": msg}), LIMITS)
    assert err.value.code == "worker.agent-error" and "Request was aborted" in err.value.message


def test_codex_turn_failed_and_incomplete() -> None:
    failed = jl({"type": "turn.started"},
                {"type": "item.completed", "item": {"type": "agent_message", "text": json.dumps(PLAN)}},
                {"type": "turn.failed", "error": {"message": "stream disconnected"}})
    with pytest.raises(WorkerFailed) as err:
        extract_plan(failed, LIMITS)
    assert err.value.code == "worker.agent-error" and "stream disconnected" in err.value.message
    cut = jl({"type": "turn.started"}, {"type": "item.completed", "item": {"type": "agent_message", "text": json.dumps(PLAN)}})
    assert code_of(cut) == "worker.agent-error"


def test_lone_surrogate_in_plan() -> None:
    assert code_of(b'{"kind": "memory-consolidation-plan", "x": "\\udc00"}') == "worker.bad-plan-text"


def test_deep_output_is_no_plan_not_a_crash() -> None:
    assert code_of(b"[" * 100_000) == "worker.no-plan"
    assert code_of(b'{"kind": "memory-consolidation-plan", "x": ' + b"[" * 200 + b"]" * 200 + b"}") == "worker.no-plan"


# --- robustness ----------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_only_worker_failed(data: bytes) -> None:
    try:
        result = extract_plan(data, ExtractLimits(max_lines=16, max_line_bytes=512, max_depth=8))
    except WorkerFailed:
        return
    assert result.plan_bytes == plan_json(result.plan)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12)
    | st.sampled_from(["result", "success", "assistant", "message_end", "item.completed", "agent_message",
                       "consolidation_plan", "memory-consolidation-plan", "turn.failed", "error", "aborted"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "subtype", "is_error", "result", "message", "role", "content", "text", "item",
                         "msg", "plan", "kind", "stopReason", "errors", "id", "parent_tool_use_id"]),
        inner, max_size=6),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_json_values, max_size=5))
def test_arbitrary_json_streams_only_worker_failed(records: list[Any]) -> None:
    for data in (jl(*records), json.dumps(records).encode()):
        try:
            extract_plan(data, LIMITS)
        except WorkerFailed:
            pass


def test_a_bound_error_names_its_config_key_or_calls_a_built_in_overrun_a_bug() -> None:
    stdout = b"x" * 2048 + b"\n"
    limits = ExtractLimits(max_line_bytes=1024)
    with pytest.raises(WorkerFailed) as third_party:
        extract_plan(stdout, limits)
    assert third_party.value.code == "worker.line-too-long"
    assert "limits.worker_output_line_bytes" in (third_party.value.hint or "")
    with pytest.raises(WorkerFailed) as builtin:
        extract_plan(stdout, ExtractLimits(max_line_bytes=1024, builtin=True))
    assert "bug in memfold" in (builtin.value.hint or "") and "limits.worker_output_line_bytes" in (
        builtin.value.hint or "")
    with pytest.raises(WorkerFailed) as lines:
        extract_plan(b"{}\n" * 20, ExtractLimits(max_lines=16))
    assert lines.value.code == "worker.too-many-lines" and "limits.worker_output_lines" in (lines.value.hint or "")


def test_the_config_sets_every_extraction_bound(tmp_path: Any) -> None:
    from pipeline.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text("limits: {worker_output_line_bytes: 2048, plan_depth: 16, worker_output_lines: 99}\n")
    limits = load_config(path).extract_limits()
    assert (limits.max_line_bytes, limits.max_depth, limits.max_lines) == (2048, 16, 99)
