"""Run directories: ids, creation (0700, no symlinks), lookup and pruning to the newest N."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

from ..errors import UsageError
from ..fsutil import ensure_dir, refuse_symlinks

RUN_ID_RE = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")


def new_run_id(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(4).hex()


def create_run_dir(runs: Path, home: Path, run_id: str) -> Path:
    refuse_symlinks(runs, home)
    run_dir = runs / run_id
    ensure_dir(runs, home)
    os.mkdir(run_dir, 0o700)
    (run_dir / "scratch").mkdir(mode=0o700)
    return run_dir


def find_run(runs: Path, run_id: str) -> Path:
    if not RUN_ID_RE.match(run_id):
        raise UsageError(f"{run_id!r} is not a run id (like 20261130T082517Z-1a2b3c4d)", code="usage.run-id")
    run_dir = runs / run_id
    if not run_dir.is_dir() or run_dir.is_symlink():
        raise UsageError(f"no run {run_id} in {runs}", code="usage.no-run",
                         hint="`memfold status` shows the last run; old run dirs are pruned, receipts are not")
    return run_dir


def list_runs(runs: Path) -> list[str]:
    """Run ids, oldest first (by the run dir's mtime: ids made in the same second sort randomly)."""
    try:
        entries = [e for e in os.scandir(runs) if RUN_ID_RE.match(e.name) and e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    return [e.name for e in sorted(entries, key=lambda e: (e.stat(follow_symlinks=False).st_mtime_ns, e.name))]


PRUNED_PREFIX = ".memfold-pruned-"


def prune_runs(runs: Path, keep: int, protect: set[str]) -> list[str]:
    """Delete all but the newest ``keep`` run dirs. The receipt log is never pruned.

    Each run dir leaves under its own name in one rename before its files are removed: a process
    killed while removing them leaves a hidden dir that nothing reads as a run (and the next prune
    removes), never a run dir with some of its files gone (a receipt whose manifest is missing).
    """
    names = list_runs(runs)
    doomed = [n for n in names[: max(len(names) - keep, 0)] if n not in protect]
    try:
        leftovers = [e.name for e in os.scandir(runs) if e.name.startswith(PRUNED_PREFIX)]
    except FileNotFoundError:
        leftovers = []
    if not doomed and not leftovers:
        return doomed
    import shutil  # only when a run dir is pruned

    for name in doomed:
        try:
            os.rename(runs / name, runs / f"{PRUNED_PREFIX}{name}")
        except OSError:
            continue  # left in place, whole: the next prune tries again
        leftovers.append(f"{PRUNED_PREFIX}{name}")
    for name in leftovers:
        shutil.rmtree(runs / name, ignore_errors=True)
    return doomed


def write_artifact(run_dir: Path, name: str, data: bytes) -> str:
    """Write one run-dir file once (never replaced); returns its sha256."""
    from ..fsutil import safe_join, write_new

    return write_new(safe_join(run_dir, name), data)
