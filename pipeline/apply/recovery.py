"""Recovery under the lock: finish or discard the transaction a crash or a power loss interrupted."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import RecoveryNeeded
from ..fsutil import TEMP_PREFIX, temp_name
from .journal import JOURNAL, PENDING, read_journal, roll_back, roll_forward, silent_unlink, write_journal
from .roots import RootResolver

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def recover(
    project_home: Path, runs: Path, resolver_for: Callable[[Path], RootResolver], roots: Iterable[str]
) -> str | None:
    """Finish or discard an interrupted transaction. Returns what was done, or None if nothing was."""
    pending = project_home / PENDING
    try:
        run_id = pending.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        # A kill inside atomic_write of `pending` itself (or of lock.json) leaves its temp here, with no
        # `pending` to point at it; we hold the lock, so no live writer owns such a temp.
        _sweep_temps(project_home)
        return None
    outcome = "discarded"
    run_dir = runs / run_id if run_id and "/" not in run_id and run_id not in (".", "..") else runs / "-"
    resolve = resolver_for(run_dir)
    journal = run_dir / JOURNAL
    unrenamed = _unrenamed_journal(run_dir, run_id)
    if unrenamed is not None:
        # Staged and durable, but its rename was lost (a power loss before the run dir's fsync): some of
        # the renames it names may have landed, so the pre-state is put back from the backups.
        roll_back(run_dir, resolve, unrenamed)
        outcome = "rolled-back"
    elif journal.exists():
        body = read_journal(journal)
        state = body.get("state")
        if state == "committed":
            roll_forward(resolve, body["entries"])
            write_journal(run_dir, {**body, "state": "done"})
            outcome = "rolled-forward"
        elif state == "rolling-back":
            roll_back(run_dir, resolve, body)
            outcome = "rolled-back"
        else:
            outcome = "finished"
    # The project home's temps go last: a commit stages the log's pointer there, rolled forward above.
    for folder in (*(resolve(key) for key in (*roots, "run")), project_home):
        _sweep_temps(folder)
    silent_unlink(pending)
    return f"{outcome} run {run_id}"


def _unrenamed_journal(run_dir: Path, run_id: str) -> dict[str, Any] | None:
    """The committed journal still under its temp name with no ``journal.json`` beside it, if whole.

    Its bytes were fsynced before any rename of the transaction was made, so a temp that fails its
    checksum means nothing was renamed: it is swept with the other temps.
    """
    if not run_id:
        return None
    temp = run_dir / temp_name(JOURNAL, run_id[-12:])
    if (run_dir / JOURNAL).exists() or not temp.is_file() or temp.is_symlink():
        return None
    try:
        body = read_journal(temp)
    except RecoveryNeeded:
        return None
    return body if body.get("state") == "committed" and body.get("runId") == run_id else None


def _sweep_temps(folder: Path) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(TEMP_PREFIX):
            silent_unlink(folder / name)
