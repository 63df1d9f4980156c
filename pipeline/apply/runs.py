"""Run directories: ids, creation (0700, no symlinks), lookup and pruning to the newest N."""

from __future__ import annotations

import datetime as dt
import os
import re
from _thread import allocate_lock  # threading itself only once a run dir is removed
from pathlib import Path

from ..fsutil import ensure_dir, refuse_symlinks, remove_tree
from ..paths import RUN_ID_PATTERN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUN_ID_RE = re.compile(RUN_ID_PATTERN)


def new_run_id(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(4).hex()


def create_run_dir(runs: Path, home: Path, run_id: str, *, scratch: bool = True) -> Path:
    """A new run dir; ``scratch`` (the worker's only writable dir) only for a run that has a worker."""
    refuse_symlinks(runs, home)
    run_dir = runs / run_id
    ensure_dir(runs, home)
    os.mkdir(run_dir, 0o700)
    if scratch:
        (run_dir / "scratch").mkdir(mode=0o700)
    return run_dir


def list_runs(runs: Path) -> list[str]:
    """Run ids, oldest first (by the run dir's mtime: ids made in the same second sort randomly)."""
    try:
        with os.scandir(runs) as entries:
            return _by_age(list(entries))
    except FileNotFoundError:
        return []


def _by_age(entries: list[os.DirEntry[str]]) -> list[str]:
    runs = [e for e in entries if RUN_ID_RE.match(e.name) and e.is_dir(follow_symlinks=False)]
    return [e.name for e in sorted(runs, key=lambda e: (e.stat(follow_symlinks=False).st_mtime_ns, e.name))]


PRUNED_PREFIX = ".memfold-pruned-"


def prune_runs(runs: Path, keep: int, protect: set[str], *, later: bool = False) -> list[str]:
    """Delete all but the newest ``keep`` run dirs. The receipt log is never pruned.

    Each run dir leaves under its own name in one rename, under the caller's lock: a process killed
    while its files are removed leaves a hidden dir that nothing reads as a run (and the next prune
    removes), never a run dir with some of its files gone (a receipt whose manifest is missing).
    With ``later`` (a long-lived process) the renamed dirs are removed on a kept thread, so the
    answer does not wait for a dozen unlinks that no guarantee needs; the process waits for that
    removal before it exits.
    """
    try:
        with os.scandir(runs) as found:
            entries = list(found)
    except FileNotFoundError:
        entries = []
    leftovers = [e.name for e in entries if e.name.startswith(PRUNED_PREFIX)]
    # The mtimes that order the runs are read only when there may be more runs than are kept.
    names = _by_age(entries) if sum(1 for e in entries if RUN_ID_RE.match(e.name)) > keep else []
    doomed = [n for n in names[: max(len(names) - keep, 0)] if n not in protect]
    if not doomed and not leftovers:
        return doomed
    for name in doomed:
        try:
            os.rename(runs / name, runs / f"{PRUNED_PREFIX}{name}")
        except OSError:
            continue  # left in place, whole: the next prune tries again
        leftovers.append(f"{PRUNED_PREFIX}{name}")
    if later:
        _remove_later([runs / name for name in leftovers])
        return doomed
    for name in leftovers:
        remove_tree(runs / name)
    return doomed


# Retired run dirs being removed by this process, and the jobs removing them.
_REMOVING: set[Path] = set()
_REMOVERS: list[Any] = []
_REMOVING_LOCK = allocate_lock()


def _remove_later(paths: list[Path]) -> None:
    from ..background import run_beside

    if not _FORK_HOOK:
        # A child forked meanwhile has none of the removing threads, and maybe a lock held by one.
        os.register_at_fork(after_in_child=_forget_removals)
        _FORK_HOOK.append(True)
    with _REMOVING_LOCK:
        paths = [path for path in paths if path not in _REMOVING]
        _REMOVING.update(paths)
        _REMOVERS[:] = [job for job in _REMOVERS if job.alive()]
    if not paths:
        return
    if not _EXIT_HOOK:
        # The kept threads are daemons: an exiting process waits for its removals first (one killed
        # leaves them to the next prune).
        import atexit

        atexit.register(settle_pruned)
        _EXIT_HOOK.append(True)
    job = run_beside(lambda: _remove(paths), "memfold-prune")
    with _REMOVING_LOCK:
        _REMOVERS.append(job)


_FORK_HOOK: list[bool] = []
_EXIT_HOOK: list[bool] = []


def _forget_removals() -> None:
    global _REMOVING_LOCK
    _REMOVING_LOCK = allocate_lock()
    _REMOVING.clear()
    _REMOVERS.clear()


def _remove(paths: list[Path]) -> None:
    try:
        for path in paths:
            remove_tree(path)
    finally:
        with _REMOVING_LOCK:
            _REMOVING.difference_update(paths)


def settle_pruned() -> None:
    """Wait until every retired run dir this process started removing is gone (tests, the bench, exit)."""
    with _REMOVING_LOCK:
        jobs = list(_REMOVERS)
    for job in jobs:
        job.join()

