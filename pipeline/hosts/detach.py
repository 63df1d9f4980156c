"""A consolidation started in the background for a host: its own session, its output in a log file.

A host command that must return at once (Claude Code's ``/consolidate`` waits for its command's output
before the model answers) starts the run here and tells the user where its progress and result go.
The run is the ordinary ``memfold consolidate``: it takes the project lock like any other run, so
``memfold status`` names it while it runs, and its receipt is the proof that it ended well.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


def log_path(logs: Path, scope_key: str, stamp: str) -> Path:
    """``<logs>/consolidate-<scope key prefix>-<stamp>.log``: one file per background run (the stamp
    holds the time and the starting process)."""
    return logs / f"consolidate-{scope_key[:12]}-{stamp}.log"


def start_detached(argv: Sequence[str], log: Path, env: Mapping[str, str], cwd: Path) -> int:
    """Start ``argv`` in a session of its own with stdin closed and stdout and stderr appended to ``log``
    (0600, never through a symlink); returns its pid. Nothing of the caller's stays open in it, so the
    caller (and the host waiting on the caller's output) can end while it runs."""
    log.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        proc = subprocess.Popen(tuple(argv), stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd=str(cwd),
                                env=dict(env), start_new_session=True, close_fds=True)
    finally:
        os.close(fd)
    return proc.pid  # not waited for: the run outlives this process
