"""Run every measured path on synthetic stores, each with its floor, and collect one result."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import floors, importing
from . import mcp as mcp_bench
from .consolidate import bench_apply, bench_consolidate, remove_retired, restore_cold
from .planner import bench_planner
from .prompt import bench_prompt
from .synth import Synthetic, write_store
from .writes import bench_writes


@dataclass
class Row:
    path: str
    n: int
    samples: list[float]
    floor_name: str | None = None
    floor_ms: float | None = None
    target: str = ""
    met: bool | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def ratio(self) -> float | None:
        return self.median / self.floor_ms if self.floor_ms else None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "n": self.n, "medianMs": round(self.median, 2), "minMs": round(min(self.samples), 2),
                "maxMs": round(max(self.samples), 2), "reps": len(self.samples), "floor": self.floor_name,
                "floorMs": None if self.floor_ms is None else round(self.floor_ms, 2),
                "ratio": None if self.ratio is None else round(self.ratio, 2), "target": self.target, "met": self.met}


@dataclass
class Plan:
    sizes: tuple[int, ...]
    reps: int
    consolidate_reps: int
    workdir: Path
    progress: Callable[[str], None] = lambda _msg: None
    rows: list[Row] = field(default_factory=list)
    floors: dict[str, dict[str, float]] = field(default_factory=dict)


def cli_env(workdir: Path) -> dict[str, str]:
    """What a user's shell gives memfold: bytecode cached (as after `pip install`), no pinned clock."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MEMFOLD_NOW", "MEMFOLD_HOME")}
    package_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def compile_bytecode(env: dict[str, str]) -> None:
    """Compile the package first, as `pip install` does, so that no measured run pays for compiling it.

    Commands read bytecode from the bench's cache prefix. The sandboxed worker gets no such variable
    and may not write, so it reads the package's own ``__pycache__``, which is compiled too.
    """
    package = str(Path(__file__).resolve().parents[1])
    in_tree = {k: v for k, v in env.items() if k != "PYTHONPYCACHEPREFIX"}
    for where in (env, in_tree):
        subprocess.run([sys.executable, "-m", "compileall", "-q", package], env=where, capture_output=True,
                       check=False)


class Cli:
    def __init__(self, store: Synthetic, env: dict[str, str]) -> None:
        self.store = store
        self.env = env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "pipeline", "--home", str(self.store.home), "--project",
                str(self.store.project), *args]

    def run(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> tuple[float, bytes]:
        start = time.perf_counter()
        proc = subprocess.run(self.argv(*args), input=stdin, capture_output=True, env=self.env, check=False)
        elapsed = floors.ms_since(start)
        if proc.returncode not in ok:
            raise RuntimeError(f"memfold {' '.join(args)} exited {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace')[-2000:]}")
        return elapsed, proc.stdout

    def timed(self, reps: int, *args: str, stdin: bytes | None = None) -> list[float]:
        self.run(*args, stdin=stdin)  # warm-up: bytecode cached, as for an installed tool
        return [self.run(*args, stdin=stdin)[0] for _ in range(reps)]


def _settle(path: Path) -> None:
    """inject caches its config section only once the file is 2 s old (racy-timestamp rule)."""
    age = time.time() - path.stat().st_ctime
    if age < 2.1:
        time.sleep(2.1 - age)


def write_places(layout: Any) -> dict[str, Path]:
    """The directories a write of the store touches, by the keys of ``_changed_files``: where the
    staged-writes floor stages its files (see ``floors.staged_writes``)."""
    places = {"receipts": layout.receipts, "run": layout.runs, "harness": layout.harness}
    if layout.mirror is not None:
        places["public"] = layout.mirror
    return places


def _changed_files(receipt_path: Path, layout: Any) -> dict[str, tuple[list[int], int]]:
    """Every file the commit writes, by directory, with its size as it landed (the post-state is on
    disk now), and the files it deletes: both roots' differences, indexes included, the receipt log
    entry, and the run dir's pre receipt (and its post receipt where it is a copy, not a link)."""
    receipt = json.loads(receipt_path.read_bytes())
    run_dir = layout.runs / receipt["runId"]
    # The run's post receipt is a second name of the log entry where the filesystem links: not written.
    run_files = ("pre-receipt.json",) if (run_dir / "post-receipt.json").samefile(receipt_path) \
        else ("post-receipt.json", "pre-receipt.json")
    plan: dict[str, tuple[list[int], int]] = {
        "receipts": ([receipt_path.stat().st_size], 0),
        "run": ([(run_dir / name).stat().st_size for name in run_files], 0),
    }
    for root, folder in (("harness", layout.harness), ("public", layout.mirror)):
        before, after = receipt["sourceHashes"][root], receipt["finalHashes"][root]
        changed = [name for name in set(before) | set(after) if before.get(name) != after.get(name)]
        plan[root] = ([(folder / name).stat().st_size for name in sorted(changed) if name in after],
                      sum(1 for name in changed if name not in after))
    return plan


def bench_size(plan: Plan, n: int, env: dict[str, str], python_ms: float) -> None:
    base = plan.workdir / f"n{n}"
    plan.progress(f"n={n}: writing the synthetic store")
    store = write_store(base / "live", n)
    live, pristine = base / "live", base / "pristine"
    subprocess.run(("cp", "-a", str(live), str(pristine)), check=True)
    _settle(store.home / "config.yaml")
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
    shutil.rmtree(base, ignore_errors=True)


def row_adder(plan: Plan, n: int) -> Callable[..., Row]:
    """What appends a row of size ``n`` to the plan, its floor looked up among the size's floors."""
    fl = plan.floors.setdefault(str(n), {})

    def add(path: str, samples: list[float], floor: str | None, target: str = "",
            met: Callable[[Row], bool] | None = None) -> Row:
        row = Row(path, n, samples, floor, fl.get(floor) if floor else None, target)
        row.met = met(row) if met is not None else None
        plan.rows.append(row)
        return row

    return add


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    except OSError:
        pass
    try:
        load = round(os.getloadavg()[0], 1)
    except OSError:
        load = None
    return {"python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cpus": os.cpu_count(), "loadavg1": load}


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


def format_table(result: dict[str, Any]) -> str:
    head = f"{'path':<22} {'N':>6} {'median':>9} {'min':>9} {'max':>9}  {'floor':<24} {'x floor':>7}  target"
    lines = [head, "-" * len(head)]
    for r in result["rows"]:
        floor = "" if r["floor"] is None else f"{r['floor']} {r['floorMs']:.1f}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        verdict = "" if r["met"] is None else (" ok" if r["met"] else " MISSED")
        lines.append(f"{r['path']:<22} {r['n']:>6} {r['medianMs']:>9.1f} {r['minMs']:>9.1f} {r['maxMs']:>9.1f}  "
                     f"{floor:<24} {ratio:>7}  {r['target']}{verdict}")
    scaling = result.get("scaling")
    if scaling:
        verdict = "ok" if scaling["met"] else "MISSED"
        lines.append(f"consolidate t(20000)/t(2000) = {scaling['consolidate t(20000)/t(2000)']} "
                     f"(target {scaling['target']}) {verdict}")
    if result.get("importScaling"):
        lines.append(importing.scaling_line(result["importScaling"]))
    m = result["machine"]
    lines.append(f"machine: {m['cpu']} x{m['cpus']}, {m['platform']}, Python {m['python']}, "
                 f"load {m['loadavg1']}; times in ms")
    return "\n".join(lines) + "\n"


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

