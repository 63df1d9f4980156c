"""The consolidation rows: the real command, the same run without the CLI shell, and its stage rows.

Each repetition consolidates its own copy of the synthetic store. A user's store was written by
earlier commands, seconds to months ago, and its state cache (``<project home>/cache/state.bin``)
holds what they learned: identities and hashes of files past the racy window, parsed frontmatter,
clean privacy verdicts. A copy made just before the run has none of that (a copy changes every
inode and ctime), so it measures a store that was rewritten a moment ago, which no user has. The
settled rows therefore consolidate copies prepared in advance: copied, left to settle past the
racy window, given the state an earlier transaction leaves (``python -m pipeline.commands.benchbody
settle HOME PROJECT`` reads both roots and privacy-checks the mirror through the state cache, as
the gate of a write does, and builds both search indexes, as every commit leaves them), then moved
into place by renaming their directories, which changes no file's identity. "consolidate (cold)"
keeps the copy-just-before figure next to them.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..apply.commit import COMMIT_PARTS
from . import floors

if TYPE_CHECKING:
    from ..worker.extract import ExtractLimits
    from .common import Cli, Plan, Row

STAGES = ("recover", "read", "snapshot", "manifest", "worker", "extraction", "validation", "stale-check",
          "index", "post-verify", "commit", *COMMIT_PARTS)
# Every stage's floor, by the name of a floor measured in the same run.
STAGE_FLOORS = {"read": "read+hash", "stale-check": "read+hash", "worker": "python+read+hash",
                "commit": "staged-writes+read+hash", COMMIT_PARTS[0]: "staged-writes"}
GOALS = {200: 200.0, 20_000: 5000.0}
# The row of what the stage rows leave out: the interpreter's start, the imports, config and rules,
# the lock, the run dir, the summary, the output and the process's exit.
OUTSIDE = "outside stages"


def outside_stages(total_ms: float, timings: dict[str, float]) -> float:
    """``total_ms`` minus the stages the transaction timed (a commit's parts are inside its own row)."""
    return max(0.0, total_ms - sum(ms for stage, ms in timings.items() if stage not in COMMIT_PARTS))
# Past this the CLI row is left out (the driver's row is the same run minus the CLI shell): the full
# bench stays within minutes.
CLI_CONSOLIDATE_MAX = 2000
PARTS = ("project", "home/projects")
RACY_S = 2.1


def _copy(pristine: Path, target: Path) -> None:
    for part in PARTS:
        (target / part).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(("cp", "-a", str(pristine / part), str(target / part)), check=True)


RETIRED = "retired"
MiB = 1 << 20


def raised_limits() -> ExtractLimits:
    """Output bounds no measured size reaches, for the runs timed inside this process."""
    from ..worker.extract import ExtractLimits

    return ExtractLimits(max_stdout_bytes=1024 * MiB, max_lines=4_000_000, max_line_bytes=64 * MiB,
                         max_plan_bytes=1024 * MiB)


def _retire(live: Path) -> None:
    """Move the previous run's parts aside instead of deleting them: on this kind of disk a file made
    in a directory where many were just freed costs about a millisecond more (ext4 passes over the
    freed inodes), which the next sample would count as its own. ``remove_retired`` deletes them
    between samples' sets."""
    for part in PARTS:
        if (live / part).exists():
            aside = live.parent / RETIRED / f"{time.monotonic_ns()}-{part.replace('/', '-')}"
            aside.parent.mkdir(parents=True, exist_ok=True)
            os.rename(live / part, aside)


def remove_retired(live: Path) -> None:
    shutil.rmtree(live.parent / RETIRED, ignore_errors=True)


def _swap_in(source: Path, live: Path) -> None:
    """Put ``source``'s parts at ``live`` by renaming directories (no file's identity changes), then
    write back what the bench left dirty (``_quiesce``)."""
    _retire(live)
    for part in PARTS:
        os.rename(source / part, live / part)
    _quiesce()


def _quiesce() -> None:
    """Write back every dirty page before a sample. A large commit makes its batch durable with one
    syncfs, which also writes back whatever else is dirty on the filesystem: here the copies, search
    indexes and run dirs the bench itself just made (at 20,000 memories that put 0.2-0.3 s of the
    bench's own writes into "commit: apply" and slowed the worker beside the writeback)."""
    os.sync()


def _swap_out(live: Path, target: Path) -> None:
    for part in PARTS:
        (target / part).parent.mkdir(parents=True, exist_ok=True)
        os.rename(live / part, target / part)


def restore_cold(pristine: Path, live: Path) -> None:
    """A copy made just now: every inode and ctime new, no state cache (config.yaml untouched)."""
    _retire(live)
    _copy(pristine, live)
    _quiesce()


@contextmanager
def settled_copies(pristine: Path, live: Path, count: int, env: dict[str, str]) -> Iterator[list[Path]]:
    """``count`` copies of the store, settled and with the state an earlier transaction leaves; each
    is swapped in by ``_swap_in`` before its run. Removed afterwards."""
    base = live.parent / "settled"
    copies = [base / str(i) for i in range(count)]
    for copy in copies:
        _copy(pristine, copy)
    time.sleep(RACY_S)
    home, project = live / "home", live / "project"
    try:
        for copy in copies:
            _swap_in(copy, live)
            subprocess.run([sys.executable, "-m", "pipeline.commands.benchbody", "settle", str(home), str(project)],
                           env=env, check=True, capture_output=True)
            _swap_out(live, copy)
        yield copies
    finally:
        shutil.rmtree(base, ignore_errors=True)
        remove_retired(live)
        if not (live / "project").exists():
            _copy(pristine, live)


def _driver(store: Any, env: dict[str, str]) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "pipeline.commands.benchbody", "consolidate", str(store.home),
            str(store.project)]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    ms = floors.ms_since(start)
    if proc.returncode != 0:
        raise RuntimeError(f"consolidate exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    summary: dict[str, Any] = json.loads(proc.stdout)
    return ms, summary


def bench_consolidate(plan: Plan, n: int, cli: Cli, add: Callable[..., Row], pristine: Path, live: Path,
                      env: dict[str, str], reps: int) -> dict[str, tuple[list[int], int]]:
    """The consolidate rows for one size; returns the files the last commit wrote (for the floors)."""
    from .common import changed_files, write_places

    store, small = cli.store, n <= 200
    fl = plan.floors[str(n)]
    cli_row = None
    if n <= CLI_CONSOLIDATE_MAX:
        plan.progress(f"n={n}: memfold consolidate (CLI) x{reps}")
        cli_totals = []
        with settled_copies(pristine, live, reps, env) as copies:
            for copy in copies:
                _swap_in(copy, live)
                cli_totals.append(cli.run("--json", "consolidate", "--no-context")[0])
        cli_row = add("consolidate (CLI)", cli_totals, None, "<= 1000 ms at 200" if small else "",
                      (lambda r: r.median <= 1000) if small else None)
    plan.progress(f"n={n}: consolidate x{reps} (settled) and x{reps} (cold)")
    totals: list[float] = []
    stages: dict[str, list[float]] = {s: [] for s in (*STAGES, OUTSIDE)}
    changed: dict[str, tuple[list[int], int]] = {}
    with settled_copies(pristine, live, reps, env) as copies:
        for copy in copies:
            _swap_in(copy, live)
            ms, summary = _driver(store, env)
            totals.append(ms)
            for stage in STAGES:
                stages[stage].append(float(summary["timings"].get(stage, 0.0)))
            stages[OUTSIDE].append(outside_stages(ms, summary["timings"]))
            changed = changed_files(Path(summary["receipt"]), store.layout)
    cold = []
    for _ in range(reps):
        restore_cold(pristine, live)
        cold.append(_driver(store, env)[0])
    remove_retired(live)
    fl["staged-writes"] = statistics.median(floors.staged_writes(changed, 3, where=plan.workdir,
                                                                  places=write_places(store.layout)))
    fl["python+read+hash"] = fl["python"] + fl["read+hash"]
    fl["staged-writes+read+hash"] = fl["staged-writes"] + fl["read+hash"]
    fl["consolidate"] = 2 * fl["python"] + fl["read+hash"] + fl["staged-writes"]
    fl["writtenFiles"] = sum(len(sizes) for sizes, _ in changed.values())
    fl["deletedFiles"] = sum(deleted for _, deleted in changed.values())
    goal = GOALS.get(n)
    add("consolidate", totals, "consolidate", f"<= {goal:g} ms at {n}" if goal else "",
        (lambda r: r.median <= goal) if goal else None)
    add("consolidate (cold)", cold, "consolidate")
    if cli_row is not None:
        cli_row.floor_name, cli_row.floor_ms = "consolidate", fl["consolidate"]
    for stage in (*STAGES, OUTSIDE):
        floor = STAGE_FLOORS.get(stage)
        tgt = "<= 150 ms at 2000" if stage == "validation" and n == 2000 else ""
        add(f"  {stage}", stages[stage], floor, tgt, (lambda r: r.median <= 150) if tgt else None)
    return changed


def bench_apply(store: Any, pristine: Path, live: Path, env: dict[str, str], reps: int) -> list[float]:
    """``apply_changes`` alone, once in each of ``reps`` consolidations of settled copies in this process.

    A first consolidation is run untimed: it imports the later stages and starts the fsync thread
    pool, which a process pays once, not per apply. Each copy is swapped in before its run. At most
    2,000 memories, at least three samples are taken.
    """
    import datetime as dt

    from ..apply import commit
    from ..config import load_config
    from ..privacy import load_ruleset
    from ..transaction import ConsolidateRequest, consolidate

    cfg = load_config(store.home / "config.yaml")
    svc = commit.Services(layout=store.layout, limits=cfg.store_limits(),
                          clock=lambda: dt.datetime.now(dt.UTC), ruleset=load_ruleset(),
                          keep_runs=cfg.runs.keep)
    reps = max(reps, 3) if store.count <= CLI_CONSOLIDATE_MAX else reps
    samples: list[float] = []
    original = commit.apply_changes

    def timed_apply(*args: Any, **kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            original(*args, **kwargs)
        finally:
            samples.append(floors.ms_since(start))

    commit.apply_changes = timed_apply
    try:
        with settled_copies(pristine, live, reps + 1, env) as copies:
            for copy in copies:
                _swap_in(copy, live)
                consolidate(svc, ConsolidateRequest(parent_env=dict(os.environ), extract_limits=raised_limits()))
    finally:
        commit.apply_changes = original
    if len(samples) != reps + 1:
        raise RuntimeError(f"{reps + 1} consolidations applied {len(samples)} times")
    return samples[1:]
