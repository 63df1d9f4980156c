"""The built-in planner alone: its imports, its plan and its parts, CPU ms in a fresh interpreter per sample."""

# The consolidate rows time the whole worker stage (the launcher, its confinement and the planner);
# these isolate the planner's part, on the run directory a consolidation of the same store gives it:
# the manifest, an empty snapshot, and the store's own roots, read in place.

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..store.jsontext import dump_json
from ..store.memory import INDEX_NAME
from .synth import Synthetic

# What the worker process does: import the planner, turn the cyclic collector off, plan one run. The
# planner's parts are timed where the planner calls them (module attributes, looked up at each call).
_SAMPLE = """
import gc, json, sys, time
t0 = time.process_time()
from pipeline.planner.run import plan_run
from pipeline.planner import conflicts, dedupe, run, staleness
from pathlib import Path
parts = dict.fromkeys(sys.argv[2:], 0.0)

def timed(module, name, part):
    inner = getattr(module, name)

    def call(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            parts[part] += time.process_time() - start

    setattr(module, name, call)

for module, name, part in ((run, "read_root", "read"), (run, "parse_memory", "parse"),
                           (staleness, "verdict", "staleness"), (dedupe, "groups", "grouping"),
                           (conflicts, "resolve", "conflicts"), (run, "plan_json", "print")):
    timed(module, name, part)
t1 = time.process_time()
gc.disable()
data = plan_run(Path(sys.argv[1]))
t2 = time.process_time()
print(json.dumps({"imports": (t1 - t0) * 1000, "plan": (t2 - t1) * 1000, "bytes": len(data),
                  **{part: spent * 1000 for part, spent in parts.items()}}))
"""
# The parts of a plan with a row each: reading and parsing the store, the date-staleness pass, the
# duplicate grouping, the conflict stage (all passes) and printing the plan.
PARTS = ("read", "parse", "staleness", "grouping", "conflicts", "print")


def write_run_dir(store: Synthetic, where: Path) -> Path:
    """A run directory for a consolidation of every memory of ``store``, with the default plan bound."""
    layout = store.layout
    where.mkdir(parents=True, exist_ok=True)
    selected = sorted(p.name for p in layout.harness.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME)
    manifest = {"kind": "memory-consolidation-manifest", "schemaVersion": 1, "runId": "bench-planner",
                "scopeKey": "0" * 64, "scopeDigest": "0" * 64, "artifactHash": "0" * 64, "selected": selected,
                "scope": "all", "createdAt": "2026-11-30T12:00:00Z",
                "limits": {"maxFileBytes": 65536, "maxFiles": max(50_000, store.count * 2),
                           "indexLines": max(200, store.count * 2), "indexBytes": max(25_600, store.count * 400),
                           "maxPlanBytes": 8 << 20},
                "roots": {"harness": str(layout.harness), "public": str(layout.mirror),
                          "project": str(store.project), "runDir": str(where)}}
    (where / "manifest.json").write_bytes(dump_json(manifest))
    (where / "snapshot.json").write_bytes(dump_json({"kind": "memfold-context-snapshot", "candidates": []}))
    return where


def samples(run_dir: Path, env: dict[str, str], reps: int) -> dict[str, list[float]]:
    """CPU ms of ``reps`` fresh interpreters, the process itself: imports, plan, and each of PARTS."""
    out: dict[str, list[float]] = {key: [] for key in ("imports", "plan", *PARTS)}
    for _ in range(reps):
        proc = subprocess.run([sys.executable, "-c", _SAMPLE, str(run_dir), *PARTS], env=env, capture_output=True,
                              check=True)
        figures: dict[str, Any] = json.loads(proc.stdout)
        for key, values in out.items():
            values.append(float(figures[key]))
    return out


def bench_planner(store: Synthetic, where: Path, env: dict[str, str], reps: int, add: Callable[..., Any]) -> None:
    figures = samples(write_run_dir(store, where), env, reps)
    add("  planner imports (CPU)", figures["imports"], None)
    add("  planner plan (CPU)", figures["plan"], None)
    for part in PARTS:
        add(f"    {part} (CPU)", figures[part], None)
