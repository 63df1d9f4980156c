"""The plan bound: units that land together, the part of a plan that fits, the error when none does."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from planner_golden import Store, stores, write_run
from test_planner_support import apply_plan, check_plan

from pipeline.planner.bound import DEFERRED_REASON, PlanBoundError, deferred_count, lean, stored_size, units
from pipeline.planner.planjson import PRINT_LINE_BUDGET, compacted, plan_json
from pipeline.planner.run import main, plan_run
from pipeline.planner.work import Fate, Work
from pipeline.store.memory import Memory
from pipeline.store.state import Limits


def _memory(title: str) -> Memory:
    return Memory(name=title, description=f"about {title}", type="project", visibility="private",
                  created="2026-01-01", modified="2026-01-02T00:00:00Z", body="- a fact\n")


def test_a_unit_holds_a_memory_with_all_deleted_into_it_and_a_rename_with_the_deletion_freeing_its_title() -> None:
    names = ["a.md", "b.md", "c.md", "d.md", "e.md", "f.md", "g.md", "h.md"]
    original = {n: _memory(f"title {n[0]}") for n in names}
    original["f.md"] = _memory("shared (x)")  # the title e.md is renamed to, free once f.md is merged away
    work = Work(original=original, live=dict(original), fixed={}, limits=Limits(), today="2026-11-30")
    work.fates = {"b.md": Fate("SUBSUMED", "merged", "a duplicate of a.md", "a.md"),
                  "c.md": Fate("SUBSUMED", "merged", "a duplicate of b.md", "b.md"),  # b.md went on into a.md
                  "d.md": Fate("DORMANT", "deleted", "expired"),
                  "f.md": Fate("SUPERSEDED", "deleted", "superseded by g.md", "g.md")}
    for name in work.fates:
        del work.live[name]
    work.live["e.md"] = original["e.md"].with_changes(name="shared (x)")
    ops = [{"name": "a.md", "kind": "rewrite"}, {"name": "b.md", "kind": "delete", "into": "a.md"},
           {"name": "c.md", "kind": "delete", "into": "a.md"}, {"name": "d.md", "kind": "delete"},
           {"name": "e.md", "kind": "rewrite"}, {"name": "f.md", "kind": "delete", "into": "g.md"},
           {"name": "g.md", "kind": "rewrite"}]
    assert units({"operations": ops}, work) == [["a.md", "b.md", "c.md"], ["d.md"], ["e.md", "f.md", "g.md"]]


def test_a_memory_deleted_into_an_unchanged_one_lands_with_it() -> None:
    original = {n: _memory(f"title {n[0]}") for n in ("a.md", "b.md", "c.md")}
    work = Work(original=original, live={"a.md": original["a.md"], "c.md": original["c.md"]}, fixed={},
                limits=Limits(), today="2026-11-30")
    work.fates = {"b.md": Fate("SUBSUMED", "merged", "an exact copy of a.md", "a.md")}
    assert units({"operations": [{"name": "b.md", "kind": "delete", "into": "a.md"}]}, work) == [["a.md", "b.md"]]


def _run(tmp_path: Path, store: Store, bound: int) -> Path:
    store.limits = {"maxPlanBytes": bound}
    base = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    return write_run(base, store)


def _open(tmp_path: Path) -> None:
    for d in tmp_path.rglob("*"):
        if d.is_dir():
            d.chmod(0o700)


@pytest.fixture
def valued() -> Store:
    return stores()["valued-300-seed1"][0]()


@pytest.mark.parametrize("bound", [140_000, 200_000, 260_000])
def test_a_plan_past_its_bound_prints_whole_units_of_the_full_plan_within_it(
        tmp_path: Path, valued: Store, bound: int) -> None:
    whole = lean(json.loads(plan_run(_run(tmp_path, valued, 1 << 30))))
    run = _run(tmp_path, valued, bound)
    data = plan_run(run)
    _open(tmp_path)
    part = json.loads(data)
    assert len(plan_json(part)) <= bound < len(plan_json(compacted(whole)))
    from pipeline.planner.planjson import expanded

    full = expanded(part, part["selected"])
    assert check_plan(full, valued.selected, valued.files, run.parent / "project") == []
    assert sorted(full["grounding"], key=lambda g: str(g["name"])) == whole["grounding"]
    # Every change printed is the whole plan's, byte for byte; the rest are reported as deferred.
    ops = {op["name"]: op for op in whole["operations"]}
    assert part["operations"] and all(op == ops[op["name"]] for op in part["operations"])
    done = {op["name"] for op in part["operations"]}
    deferred = {i["name"] for i in full["staleness"] if i.get("reason") == DEFERRED_REASON}
    assert deferred and not deferred & done and set(ops) - done <= deferred
    assert {i["name"] for i in full["report"] if i["summary"] == DEFERRED_REASON} == deferred
    # A delete lands with the memory it goes into.
    assert all(op["into"] in done or op["into"] not in ops for op in part["operations"] if op.get("into"))
    assert deferred_count(part["notes"]) == len(deferred)
    assert not any(n.startswith("the index stays over capacity") for n in part["notes"])


def test_consolidating_again_settles_on_what_one_unbounded_run_gives(tmp_path: Path, valued: Store) -> None:
    def settle(bound: int) -> tuple[dict[str, bytes], int]:
        files, candidates, runs = dict(valued.files), valued.candidates, 0
        while True:
            plan = json.loads(plan_run(_run(tmp_path, Store(files, valued.repo, candidates), bound)))
            runs += 1
            if not plan["operations"] or runs > 6:
                return files, runs
            files, candidates = apply_plan(files, plan), []

    bounded, runs = settle(200_000)
    unbounded, once = settle(1 << 30)
    _open(tmp_path)
    assert (runs, once) == (3, 2)  # two runs change the store under the bound, one without it
    assert bounded == unbounded


def test_a_store_whose_smallest_part_passes_the_bound_is_an_error_naming_the_key(
        tmp_path: Path, valued: Store) -> None:
    run = _run(tmp_path, valued, 20_000)
    with pytest.raises(PlanBoundError) as caught:
        plan_run(run)
    assert caught.value.code == "planner.plan-bound" and caught.value.exit_code == 4
    assert "raise limits.plan_bytes" in caught.value.message and caught.value.data["needed"] > 20_000
    out, err = io.BytesIO(), io.StringIO()
    assert main(["--run-dir", str(run)], stdout=out, stderr=err) == 4
    _open(tmp_path)
    assert out.getvalue() == b"" and "[planner.plan-bound]" in err.getvalue()


def test_the_stored_size_is_the_length_of_plan_json(valued: Store, tmp_path: Path) -> None:
    plan: dict[str, Any] = json.loads(plan_run(_run(tmp_path, valued, 1 << 30)))
    _open(tmp_path)
    for shape in (plan, compacted(plan)):
        printed = plan_json(shape, PRINT_LINE_BUDGET // 64)
        assert printed.count(b"\n") > 1
        assert stored_size(printed, shape) == len(plan_json(json.loads(printed)))


def test_lean_leaves_a_delete_reason_that_says_more_than_its_staleness() -> None:
    plan = {"staleness": [{"name": "a.md", "verdict": "DORMANT", "reason": "expired"},
                          {"name": "b.md", "verdict": "SUBSUMED", "reason": "a copy"}],
            "operations": [{"name": "a.md", "kind": "delete", "reason": "DORMANT: expired"},
                           {"name": "b.md", "kind": "delete", "into": "c.md", "reason": "SUBSUMED: a copy of c"}]}
    assert lean(plan)["operations"] == [{"name": "a.md", "kind": "delete"}, plan["operations"][1]]


def test_the_changes_from_session_candidates_are_taken_first(tmp_path: Path, valued: Store) -> None:
    # A new note from the session, whose file name comes last of the store: only the order takes it.
    valued.candidates = [{"body": "- the zyxwv job retries 7 times", "name": "zyxwv retries", "type": "user"}]
    whole = json.loads(plan_run(_run(tmp_path, valued, 1 << 30)))
    part = json.loads(plan_run(_run(tmp_path, valued, 140_000)))
    _open(tmp_path)
    created = [op for op in whole["operations"] if op["kind"] == "create"]
    assert [op["name"] for op in created] == ["user_zyxwv-retries.md"]
    assert max(op["name"] for op in whole["operations"]) == "user_zyxwv-retries.md"
    assert created[0] in part["operations"] and deferred_count(part["notes"]) > 0
