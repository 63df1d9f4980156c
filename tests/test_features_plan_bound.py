"""Step definitions for features/plan_bound.feature: the real CLI, the built-in planner in its sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, _receipts, tree_hashes
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline.planner.bound import NOTE_PREFIX
from pipeline.store.memory import Memory, render_memory

pytestmark = pytest.mark.integration

scenarios("plan_bound.feature")

LETTERS = "bcdfghjklmnpqrstvwxz"


def _word(n: int) -> str:
    """A word no other number gives, so no two groups of the store share a token."""
    out = ""
    for _ in range(3):
        n, digit = divmod(n, len(LETTERS))
        out += LETTERS[digit]
    return "qu" + out + "on"


def _store(pairs: int, expired: int) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for i in range(pairs):
        w = [_word(i * 10 + k) for k in range(6)]
        for copy, day in (("", "20"), ("-copy", "10")):
            memory = Memory(name=f"{w[0]} {w[1]}", description=f"the {w[0]} {w[1]} service reads the {w[2]} queue",
                            type="project", visibility="safe" if i % 2 else "private", created="2026-06-01",
                            modified=f"2026-10-{day}T08:00:00Z", body=f"- {w[3]} {w[4]} rotates every {w[5]} hour\n")
            files[f"project_{w[0]}-{w[1]}{copy}.md"] = render_memory(memory)
    for i in range(expired):
        w = [_word(9000 + i * 10 + k) for k in range(4)]
        memory = Memory(name=f"{w[0]} {w[1]}", description=f"the {w[0]} {w[1]} trial uses the {w[2]} flag",
                        type="project", visibility="private", created="2026-01-01", modified="2026-02-01T08:00:00Z",
                        expires="2026-03-01", body=f"- {w[3]} is on for the trial\n")
        files[f"project_{w[0]}-{w[1]}.md"] = render_memory(memory)
    return files


def _project(base: Path, files: dict[str, bytes], bound: int | None) -> Env:
    env = Env(base / "home", base / "project")
    env.project.mkdir(parents=True)
    assert env.run("init").code == 0
    for name, data in files.items():
        (env.harness / name).write_bytes(data)
    if bound is not None:
        (env.home / "config.yaml").write_text(f"limits:\n  plan_bytes: {bound}\n")
    return env


def _consolidate(env: Env, ctx: dict[str, Any]) -> None:
    result = env.run("consolidate", "--no-context", "--json")
    ctx["result"] = result
    if result.code == 0:
        ctx.setdefault("summaries", []).append(result.json())


def _plan_bytes(summary: dict[str, Any]) -> int:
    return len((Path(summary["runDir"]) / "plan.json").read_bytes())


@given(parsers.parse("a store of {pairs:d} duplicate pairs and {expired:d} expired memories, consolidated with "
                     "limits.plan_bytes {bound:d}"))
def bounded_store(tmp_path: Path, ctx: dict[str, Any], pairs: int, expired: int, bound: int) -> None:
    ctx["files"], ctx["bound"] = _store(pairs, expired), bound
    ctx["bounded"] = _project(tmp_path / "bounded", ctx["files"], bound)
    ctx["before"] = tree_hashes(ctx["bounded"].harness)


@given("a second project holding the same store with the default limits")
def whole_store(tmp_path: Path, ctx: dict[str, Any]) -> None:
    ctx["whole"] = _project(tmp_path / "whole", ctx["files"], None)


@when("I consolidate the bounded project")
def consolidate_bounded(ctx: dict[str, Any]) -> None:
    _consolidate(ctx["bounded"], ctx)


@when("I consolidate the bounded project again until a run leaves nothing")
def consolidate_until_settled(ctx: dict[str, Any]) -> None:
    while ctx["summaries"][-1].get("deferred") and len(ctx["summaries"]) < 10:
        _consolidate(ctx["bounded"], ctx)
        assert ctx["result"].code == 0, ctx["result"].err
    _consolidate(ctx["bounded"], ctx)  # one more: the store has settled, so it changes nothing
    assert ctx["result"].code == 0 and ctx["summaries"][-1]["noOp"]


@when("I consolidate the second project once")
def consolidate_whole(ctx: dict[str, Any]) -> None:
    ctx["summaries"] = []
    _consolidate(ctx["whole"], ctx)
    assert ctx["result"].code == 0, ctx["result"].err


@then(parsers.parse("the run's plan.json on disk is at most {bound:d} bytes"))
def plan_within(ctx: dict[str, Any], bound: int) -> None:
    summary = ctx["summaries"][-1]
    assert 0 < _plan_bytes(summary) <= bound
    assert summary["merged"] and summary["memories"]["after"] < summary["memories"]["before"]


@then("the receipt's outcome says how many memories' changes were left for the next run")
def receipt_says(ctx: dict[str, Any]) -> None:
    env: Env = ctx["bounded"]
    receipt = json.loads(_receipts(env)[-1].read_text())
    deferred = receipt["outcome"]["deferred"]
    plan = json.loads((Path(ctx["summaries"][-1]["runDir"]) / "plan.json").read_text())
    assert deferred["note"] in plan["notes"] and deferred["note"].startswith(NOTE_PREFIX)
    left = deferred["memories"]
    # The memories left are those the plan reports as deferred: each stays byte for byte as it was.
    report = plan["report"] + [{"name": n, **plan["defaults"]["report"]} for n in plan["selected"]
                               if n not in {r["name"] for r in plan["report"]}]
    waiting = [r["name"] for r in report if r["summary"].startswith("deferred:")]
    assert left == len(waiting) > 0 and f"leaves the changes of {left} memories" in deferred["note"]
    now = tree_hashes(env.harness)
    assert all(now[n] == ctx["before"][n] for n in waiting)
    assert not {op["name"] for op in plan["operations"]} & set(waiting)


@then("the summary prints the same note")
def summary_note(ctx: dict[str, Any]) -> None:
    from pipeline.apply.summary import summary_text

    summary = ctx["summaries"][-1]
    note = json.loads(_receipts(ctx["bounded"])[-1].read_text())["outcome"]["deferred"]["note"]
    assert summary["deferred"]["note"] == note and note in summary_text(summary).split("\n")
    assert ctx["bounded"].run("verify").code == 0


@then("status calls a consolidation due because changes were left")
def status_due(ctx: dict[str, Any]) -> None:
    status = ctx["bounded"].run("status", "--json")
    assert status.code == 0
    assert status.json()["due"] is True and "left the changes of" in status.json()["dueReason"]


@then(parsers.parse("{runs:d} runs changed the store and each plan.json on disk was at most {bound:d} bytes"))
def runs_changed(ctx: dict[str, Any], runs: int, bound: int) -> None:
    changing = [s for s in ctx["summaries"] if not s["noOp"]]
    assert len(changing) == runs
    assert all(_plan_bytes(s) <= bound for s in ctx["summaries"])
    assert [bool(s.get("deferred")) for s in changing] == [True] * (runs - 1) + [False]


@then("its receipt leaves nothing for a next run")
def whole_receipt(ctx: dict[str, Any]) -> None:
    receipt = json.loads(_receipts(ctx["whole"])[-1].read_text())
    assert "deferred" not in receipt["outcome"] and "deferred" not in ctx["summaries"][-1]
    assert _plan_bytes(ctx["summaries"][-1]) > ctx["bound"]


@then("both projects hold the same files with the same hashes in both roots")
def same_roots(ctx: dict[str, Any]) -> None:
    bounded, whole = ctx["bounded"], ctx["whole"]
    assert tree_hashes(bounded.harness) == tree_hashes(whole.harness)
    assert tree_hashes(bounded.mirror) == tree_hashes(whole.mirror)
    assert len(tree_hashes(bounded.harness)) == 30 + 1  # one memory a pair, and the index


@then(parsers.parse('the error names "{code}" and "{key}"'))
def error_names(ctx: dict[str, Any], code: str, key: str) -> None:
    text = ctx["result"].out + ctx["result"].err
    assert code in text and key in text


@then("the store holds the same files as before")
def store_unchanged(ctx: dict[str, Any]) -> None:
    assert tree_hashes(ctx["bounded"].harness) == ctx["before"]
