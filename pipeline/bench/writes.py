"""The write-path and audit-path rows: CLI ``add``, a warm server's ``memory_add``, and the
``validate``/``verify``/``audit`` processes, each against a floor measured in the same run.

Floors: an add must at least start Python, read both roots and wait for the fsyncs of what it writes
(the same files, sizes and directories, issued together as apply issues them); a warm server pays
only those fsyncs. The audit paths are held to a minimal JSON Schema validation of the same run's
plan, manifest and post receipt in a fresh interpreter (python + jsonschema), the least any
reference validator of these files does.

``python -m pipeline.bench.writes mcp HOME PROJECT REPS [FILL]`` is the warm-server driver: one process,
one warm-up add (FILL untimed adds first: a store that keeps its last runs, each write then retiring
the oldest), then REPS adds through the server's own backend; it prints the samples as JSON.
``python -m pipeline.bench.writes add [--reps R] [N...]`` prints the ``add (CLI)`` rows alone.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import floors

if TYPE_CHECKING:
    from .common import Cli, Plan

ADD_TARGETS = {2000: ("<= 2x floor at 2000", 2.0), 20_000: ("<= 150 ms at 20000", None)}
SCHEMA_FLOOR = "python+jsonschema"


def _settle(root: Path) -> None:
    """Wait until every file of the store is past the racy window, as in a store not written just now."""
    newest = max((e.stat().st_ctime for e in os.scandir(root) if e.is_file(follow_symlinks=False)), default=0.0)
    wait = newest + 2.1 - time.time()
    if wait > 0:
        time.sleep(wait)


def _newest_receipt(layout: Any) -> Path:
    folder: Path = layout.receipts
    return max(folder.iterdir(), key=lambda p: p.name)


def bench_writes(plan: Plan, n: int, cli: Cli, add: Any) -> None:
    """Append the add, memory_add and audit-path rows for a store of ``n`` memories (``add`` is
    run.py's row helper; ``cli`` runs memfold on the store)."""
    from .common import changed_files, write_places

    store = cli.store
    layout = store.layout
    fl = plan.floors.setdefault(str(n), {})
    reps = plan.reps if n <= 2000 else max(2, plan.reps // 3)
    bench_add(plan, n, cli, add, reps)

    if n <= 2000:
        plan.progress(f"n={n}: memory_add (warm server) against its fsync waits")
        mcp_samples = _warm_driver(store, cli.env, reps, 0)
        changed = changed_files(_newest_receipt(layout), layout)
        fl["memory_add fsync"] = statistics.median(floors.staged_writes(changed, 3, where=plan.workdir,
                                                                        places=write_places(layout)))
        add("memory_add (warm)", mcp_samples, "memory_add fsync", "<= 2x floor",
            lambda r: (r.ratio or 0) <= 2.0)

    run_dir = _consolidation_run(layout)
    if run_dir is not None:
        plan.progress(f"n={n}: validate, verify, audit against {SCHEMA_FLOOR}")
        fl[SCHEMA_FLOOR] = statistics.median(schema_floor(run_dir, cli.env, max(reps, 3)))
        for name, args in (("validate (process)", ("validate", "--run", run_dir.name)),
                           ("verify (process)", ("verify",)), ("audit (process)", ("audit",))):
            add(name, cli.timed(reps, *args), SCHEMA_FLOOR, "<= 1x floor", lambda r: (r.ratio or 0) <= 1.0)
    if n <= 2000:
        # A server's store in steady use holds its last runs: each write also retires the oldest. Last,
        # since those writes prune the consolidation run the rows above read.
        plan.progress(f"n={n}: memory_add (warm server) on a store that keeps its last {_RUNS_KEPT} runs")
        add("memory_add (runs kept)", _warm_driver(store, cli.env, reps, _RUNS_KEPT), "memory_add fsync")


_RUNS_KEPT = 50  # runs.keep's default


def _warm_driver(store: Any, env: dict[str, str], reps: int, fill: int) -> list[float]:
    """The warm-server driver in a process of its own: ``reps`` timed adds after ``fill`` untimed ones."""
    proc = subprocess.run([sys.executable, "-m", "pipeline.bench.writes", "mcp", str(store.home),
                           str(store.project), str(reps), str(fill)], capture_output=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory_add driver exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    samples: list[float] = json.loads(proc.stdout)
    return samples


def bench_add(plan: Plan, n: int, cli: Cli, add: Any, reps: int) -> None:
    """The ``add (CLI)`` row against python + read + fsync, and the stat floor beside it."""
    from .common import changed_files, write_places

    layout = cli.store.layout
    roots = [layout.harness, layout.mirror]
    fl = plan.floors.setdefault(str(n), {})
    _settle(layout.harness)
    plan.progress(f"n={n}: add (CLI) against python + read + fsync")
    samples = []
    for i in range(reps + 1):
        ms, _ = cli.run("add", f"project_write-probe-{i}", "-d", f"write probe {i} for the release checklist",
                        "-b", f"Probe {i}: tag after the smoke tests.")
        samples.append(ms)
    changed = changed_files(_newest_receipt(layout), layout)
    fl["add fsync"] = statistics.median(floors.staged_writes(changed, 3, where=plan.workdir,
                                                              places=write_places(layout)))
    fl["add read"] = statistics.median(floors.read_hash([r for r in roots if r is not None], 3))
    fl["add floor"] = fl["python"] + fl["add read"] + fl["add fsync"]
    # What a stat-validated write cannot go below: python's start and one lstat of every store file (a
    # hand edit must still show). At 20,000 memories this alone is near the 150 ms target on a small VM.
    stat_samples = stat_roots([r for r in roots if r is not None], max(reps, 3))
    fl["python+stat"] = fl["python"] + statistics.median(stat_samples)
    add("floor: stat both roots", stat_samples, None)
    # The receipt contract's own floor: the log entry and the run's two receipts, each with both roots'
    # full hash maps, written and fsynced as apply does, plus that lstat of every store file.
    receipts = {key: changed[key] for key in ("receipts", "run")}
    written = floors.staged_writes(receipts, len(stat_samples), where=plan.workdir, places=write_places(layout))
    add("floor: receipts+stat", [w + s for w, s in zip(written, stat_samples, strict=True)], None)
    target, factor = ADD_TARGETS.get(n, ("", None))
    add("add (CLI)", samples[1:], "add floor", target,
        (lambda r: (r.ratio or 0) <= factor) if factor else (lambda r: r.median <= 150) if target else None)


def add_rows(sizes: tuple[int, ...], reps: int) -> str:
    """The ``add (CLI)`` rows alone, each on a fresh synthetic store with its floors, as a table."""
    from .common import Cli, rows_alone

    python: list[float] = []

    def measure(plan: Plan, n: int, store: Any, env: dict[str, str], add: Any) -> None:
        if not python:
            python.append(statistics.median(floors.interpreter(env, 5)))
        plan.floors.setdefault(str(n), {})["python"] = python[0]
        bench_add(plan, n, Cli(store, env), add, reps if n <= 2000 else max(2, reps // 3))

    return rows_alone(sizes, reps, measure)


def stat_roots(roots: list[Path], reps: int) -> list[float]:
    """scandir + lstat of every entry of the roots, as a write's state check does (by name, in the
    root opened once)."""

    def run() -> None:
        for root in roots:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for entry in os.scandir(root):
                    os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)

    run()
    return floors.repeat(run, reps)


def _consolidation_run(layout: Any) -> Path | None:
    """The newest run whose plan is a consolidation plan (direct edits write their own plan kind)."""
    folder: Path = layout.runs
    try:
        runs = sorted(folder.iterdir(), key=lambda p: p.name, reverse=True)
    except OSError:
        return None
    for run in runs:
        try:
            plan = json.loads((run / "plan.json").read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(plan, dict) and plan.get("kind") == "memory-consolidation-plan" \
                and (run / "post-receipt.json").exists():
            return run
    return None


_SCHEMA_CHECK = """
import json, sys
from jsonschema import Draft202012Validator
schemas, run = sys.argv[1], sys.argv[2]
for doc, schema in (("plan.json", "plan.schema.json"), ("manifest.json", "manifest.schema.json"),
                    ("post-receipt.json", "receipt.schema.json")):
    with open(f"{schemas}/{schema}", "rb") as fh:
        validator = Draft202012Validator(json.load(fh))
    with open(f"{run}/{doc}", "rb") as fh:
        errors = list(validator.iter_errors(json.load(fh)))
    if errors:
        raise SystemExit(f"{doc}: {errors[0].message}")
"""


def schema_floor(run_dir: Path, env: dict[str, str], reps: int) -> list[float]:
    """A fresh interpreter validating the run's plan, manifest and post receipt with jsonschema."""
    from ..resources import data_dir

    argv = (sys.executable, "-c", _SCHEMA_CHECK, str(data_dir("schemas")), str(run_dir))

    def run() -> None:
        subprocess.run(argv, env=env, check=True, capture_output=True)

    run()
    return floors.repeat(run, reps)


def _warm_adds(home: Path, project: Path, reps: int, fill: int = 0) -> list[float]:
    """A server's backend, built once as `memfold mcp` builds it, then timed add by add."""
    import datetime as dt

    from ..apply.commit import Services
    from ..apply.due import DuePolicy
    from ..config import load_config
    from ..hosts.mcp_server import Backend
    from ..paths import make_layout
    from ..privacy import load_ruleset

    cfg = load_config(home / "config.yaml")
    svc = Services(layout=make_layout(home, project), limits=cfg.store_limits(),
                   clock=lambda: dt.datetime.now(dt.UTC),
                   ruleset=load_ruleset(cfg.privacy.rules or None, cfg.privacy.allowlist or None),
                   keep_runs=cfg.runs.keep)
    backend = Backend(svc=svc, lock_timeout=5.0, workers={}, due_policy=DuePolicy())
    samples = []
    tag = f"f{fill}-" if fill else ""
    for i in range(fill + reps + 1):
        start = time.perf_counter()
        out = backend.add(f"project_server-probe-{tag}{i}", f"server probe {tag}{i} about the deploy window",
                          f"Probe {tag}{i}: deploys wait for the window.", "project", "private", None)
        samples.append(floors.ms_since(start))
        if not out.get("ok"):
            raise RuntimeError(f"memory_add failed: {out}")
    return samples[fill + 1:]


def main(argv: list[str]) -> int:
    if argv[:1] == ["add"]:
        reps, sizes = 5, argv[1:]
        if sizes[:1] == ["--reps"] and len(sizes) >= 2 and sizes[1].isdigit():
            reps, sizes = int(sizes[1]), sizes[2:]
        if all(size.isdigit() for size in sizes):
            sys.stdout.write(add_rows(tuple(int(size) for size in sizes) or (200, 2000), reps))
            return 0
    if len(argv) not in (4, 5) or argv[0] != "mcp" or not all(arg.isdigit() for arg in argv[3:]):
        sys.stderr.write("usage: python -m pipeline.bench.writes mcp HOME PROJECT REPS [FILL]\n"
                         "       python -m pipeline.bench.writes add [--reps R] [N...]\n")
        return 2
    fill = int(argv[4]) if len(argv) == 5 else 0
    sys.stdout.write(json.dumps(_warm_adds(Path(argv[1]), Path(argv[2]), int(argv[3]), fill)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
