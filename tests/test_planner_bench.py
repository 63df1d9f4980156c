"""The bench's planner rows: the planner of a fresh interpreter plans the store's own run directory."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.bench.planner import bench_planner, write_run_dir
from pipeline.bench.synth import write_store
from pipeline.planner.planjson import expanded
from pipeline.planner.run import plan_run


def test_the_planner_rows_time_a_plan_of_every_memory(tmp_path: Path) -> None:
    import json

    store = write_store(tmp_path / "s", 40)
    run = write_run_dir(store, tmp_path / "run")
    plan = expanded(json.loads(plan_run(run)), [])
    memories = sorted(p.name for p in store.layout.harness.glob("*_*.md"))
    assert plan["selected"] == memories and len(memories) == 40
    assert {op["kind"] for op in plan["operations"]} <= {"delete", "rewrite"} and plan["operations"]
    rows: list[tuple[str, list[float]]] = []

    def add(path: str, samples: list[float], floor: Any) -> None:
        rows.append((path, samples))

    before = {p.name: p.read_bytes() for p in store.layout.harness.iterdir()}
    bench_planner(store, tmp_path / "run", dict(os.environ), 2, add)
    parts = ["read", "parse", "staleness", "grouping", "conflicts", "print"]
    assert [path for path, _ in rows] == ["  planner imports (CPU)", "  planner plan (CPU)",
                                          *(f"    {part} (CPU)" for part in parts)]
    assert all(len(s) == 2 and all(v >= 0 for v in s) for _, s in rows)
    figures = dict(rows)
    assert all(v > 0 for v in figures["  planner plan (CPU)"] + figures["    grouping (CPU)"])
    # The parts are timed inside the plan and do not overlap: together they are at most the plan.
    for i in range(2):
        assert sum(figures[f"    {part} (CPU)"][i] for part in parts) <= figures["  planner plan (CPU)"][i] + 0.5
    assert {p.name: p.read_bytes() for p in store.layout.harness.iterdir()} == before  # the planner only reads
