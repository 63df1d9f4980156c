"""Run every measured path on synthetic stores, each with its floor, and collect one result."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from typing import Any

from . import floors, importing
from . import mcp as mcp_bench
from .common import Cli, Plan, Row, cli_env, compile_bytecode, machine, row_adder, settle_file
from .consolidate import bench_apply, bench_consolidate, remove_retired, restore_cold
from .memtool import bench_memory_tool
from .planner import bench_planner
from .prompt import EVIDENCE_AT, bench_evidence, bench_prompt
from .synth import write_store
from .team import PULLED, bench_team
from .writes import bench_writes


def bench_size(plan: Plan, n: int, env: dict[str, str], python_ms: float) -> None:
    base = plan.workdir / f"n{n}"
    plan.progress(f"n={n}: writing the synthetic store")
    store = write_store(base / "live", n)
    live, pristine = base / "live", base / "pristine"
    subprocess.run(("cp", "-a", str(live), str(pristine)), check=True)
    settle_file(store.home / "config.yaml")
    cli = Cli(store, env)
    layout = store.layout
    assert layout.mirror is not None
    roots = [layout.harness, layout.mirror]
    read_ms = statistics.median(floors.read_hash(roots, max(plan.reps, 3)))
    fl = plan.floors.setdefault(str(n), {})
    fl["python"] = python_ms
    fl["read+hash"] = read_ms
    # The largest stores take seconds a run: fewer repetitions there keep the full bench in minutes.
    reps = plan.reps if n <= 2000 else max(2, plan.reps // 3)
    consolidate_reps = plan.consolidate_reps if n <= 2000 else max(1, plan.consolidate_reps - 1)

    add = row_adder(plan, n)

    small = n <= 200
    plan.progress(f"n={n}: inject, hook, search, memory_search, list")
    # The per-prompt paths cost the same at every size and take milliseconds: all repetitions at every
    # size (fewer at 20,000 left one cold sample deciding the median).
    bench_prompt(cli, add, store, n, plan.reps)
    if n == EVIDENCE_AT:
        plan.progress(f"n={n}: inject --prompt where {n // 2} memories cite code")
        bench_evidence(Cli(write_store(base / "cited", n, cited=n // 2), env), add, n, plan.reps)
    if small:
        sdk, init = mcp_bench.samples(store.home, store.project, env, reps)
        fl["import mcp SDK"] = statistics.median(sdk)
        add("mcp initialize", init, "import mcp SDK", "<= 1.2x floor", lambda r: (r.ratio or 0) <= 1.2)
    add("list", cli.timed(reps, "list"), "python")
    plan.progress(f"n={n}: add")
    adds = []
    for i in range(reps + 1):
        ms, _ = cli.run("add", f"project_bench-note-{i}", "-d", f"benchmark note {i} about the release checklist",
                        "-b", f"Step {i}: run the smoke tests before tagging.")
        adds.append(ms)
    add("add", adds[1:], "python", "<= 200 ms at 200" if small else "",
        (lambda r: r.median <= 200) if small else None)

    bench_consolidate(plan, n, cli, add, pristine, live, env, consolidate_reps)
    restore_cold(pristine, live)
    remove_retired(live)
    bench_planner(store, base / "planner-run", env, consolidate_reps, add)

    plan.progress(f"n={n}: apply in-process x{consolidate_reps}")
    add("  apply (in-process)", bench_apply(store, pristine, live, env, consolidate_reps), "staged-writes",
        "<= 1.5x floor", lambda r: (r.ratio or 0) <= 1.5)

    plan.progress(f"n={n}: verify, audit")
    add("verify", cli.timed(reps, "verify"), "python+read+hash")
    add("audit", cli.timed(reps, "audit"), "python+read+hash")
    bench_writes(plan, n, cli, add)
    bench_memory_tool(plan, n, store, env, add, reps)
    if n <= 2000:
        plan.progress(f"n={n}: a pull of {PULLED} teammates' memories, then a prompt and an add")
        bench_team(cli, add, store, pristine, live, env, n, reps, fl)
    shutil.rmtree(base, ignore_errors=True)


def run_bench(plan: Plan) -> dict[str, Any]:
    plan.workdir.mkdir(parents=True, exist_ok=True)
    env = cli_env(plan.workdir)
    compile_bytecode(env)
    plan.progress("floor: python -c pass")
    python_ms = statistics.median(floors.interpreter(env, max(plan.reps, 5)))
    plan.progress("floor: python -c 'import typer' (the commands outside the typer-free table import it, and "
                  "it imports pydantic)")
    typer_ms = floors.interpreter(env, max(plan.reps, 5), "import typer")
    plan.rows.append(Row("floor: import typer", 0, typer_ms, "python", python_ms))
    # The import rows go first: each size below removes its copies of the store (hundreds of thousands
    # of files at 20,000), and for a minute or more after that ext4 scans past the freed inodes at
    # every file it creates. 3,000 imported files took 3.7 s measured after the sizes and 1.1 s before,
    # the floor of staging them 1.55 s against 0.44 s: that was the bench's own disk, not an import.
    first = len(plan.rows)
    import_scaling = importing.bench_import(plan, env, python_ms, Row)
    imported = plan.rows[first:]
    del plan.rows[first:]
    for n in plan.sizes:
        bench_size(plan, n, env, python_ms)
    plan.rows += imported  # printed last, as before
    scaling = _scaling(plan)
    return {"machine": machine(), "sizes": list(plan.sizes), "reps": plan.reps,
            "consolidateReps": plan.consolidate_reps, "floors": plan.floors,
            "rows": [r.as_dict() for r in plan.rows], "scaling": scaling, "importScaling": import_scaling}


def _scaling(plan: Plan) -> dict[str, Any] | None:
    totals = {r.n: r.median for r in plan.rows if r.path == "consolidate"}
    if 2000 in totals and 20_000 in totals:
        ratio = totals[20_000] / totals[2000]
        return {"consolidate t(20000)/t(2000)": round(ratio, 2), "target": "<= 12", "met": ratio <= 12}
    return None


def missed(result: dict[str, Any]) -> list[str]:
    """Every target the run missed, one line each (``--strict`` exits 1 when there is any)."""
    out = [f"{r['path'].strip()} at {r['n']}: {r['medianMs']:.1f} ms, target {r['target']}"
           for r in result["rows"] if r["met"] is False]
    for key in ("scaling", "importScaling"):
        figures = result.get(key)
        if figures and figures["met"] is False:
            label = next(k for k in figures if "t(" in k)
            out.append(f"{label} = {figures[label]}, target {figures['target']}")
    return out


def as_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True) + "\n"

