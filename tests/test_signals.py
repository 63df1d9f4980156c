"""evidence.signals and the built-in planner: cited code that drifted flags a memory (kept), and a memory
nobody used is DORMANT, deleted only when usage.forget_dormant is on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_planner_support import manifest_for

from pipeline.evidence.signals import task_section
from pipeline.planner.plan import build_plan
from pipeline.store.citecheck import anchor
from pipeline.store.memory import Memory, render_memory

SOURCE = b"serve:\n\tpython -m http.server 8080\n"


def _store(*memories: tuple[str, Memory]) -> dict[str, tuple[bytes, Memory]]:
    return {name: (render_memory(m), m) for name, m in memories}


def _plan(tmp_path: Path, signals: dict[str, Any] | None) -> dict[str, Any]:
    cited = Memory("Port", "the dev server listens on 8080", evidence=(anchor("Makefile", SOURCE, 2, 2),),
                   created="2026-01-01", body="make serve\n")
    idle = Memory("Idle", "the staging bucket is called assets-stage", created="2026-01-01", body="assets-stage\n")
    memories = _store(("project_port.md", cited), ("project_idle.md", idle))
    return build_plan(manifest_for(sorted(memories)), memories, {}, tmp_path, signals=signals)


def _verdicts(plan: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["verdict"] for s in plan["staleness"]}


def test_the_planner_checks_citations_itself_without_signals_and_flags_changed_code(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_bytes(SOURCE.replace(b"8080", b"9090"))
    plan = _plan(tmp_path, None)
    assert _verdicts(plan) == {"project_idle.md": "KEEP", "project_port.md": "CONTRADICTED"}
    assert plan["operations"] == []
    report = {r["name"]: r for r in plan["report"]}["project_port.md"]
    assert report["status"] == "flagged" and "Makefile:2" in report["summary"]
    grounding = {g["name"]: g for g in plan["grounding"]}["project_port.md"]
    assert grounding["observations"][0] == {"path": "Makefile", "status": "updated", "note": "cited Makefile:2: changed"}


def test_an_unused_memory_is_reported_dormant_and_kept_unless_deletion_is_on(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_bytes(SOURCE)
    signals = {"evidence": {}, "unused": {"project_idle.md": "never used since 2026-01-02"}, "dormantDays": 90,
               "forgetDormant": False}
    kept = _plan(tmp_path, signals)
    assert _verdicts(kept)["project_idle.md"] == "DORMANT" and kept["operations"] == []
    gone = _plan(tmp_path, {**signals, "forgetDormant": True})
    assert _verdicts(gone)["project_idle.md"] == "DORMANT"
    assert [(op["name"], op["kind"]) for op in gone["operations"]] == [("project_idle.md", "delete")]


def test_the_task_section_shows_each_citation_status_and_the_changed_lines() -> None:
    signals = {"evidence": {"project_port.md": [{"cited": "Makefile:2", "status": "changed",
                                                 "diff": ["-\tpython -m http.server 8080", "+\t... 9090"]}]},
               "unused": {"project_idle.md": "never used"}, "dormantDays": 30, "forgetDormant": False}
    text = task_section(signals)
    assert "- `project_port.md` cites:\n  - `Makefile:2`: changed\n        -\tpython -m http.server 8080" in text
    assert "not used in 30 days" in text and "`project_idle.md`" in text and "is off" in text
