"""The receipt log's files: one ``<seq>-<runId>.json`` per transaction, listed in chain order."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..frozen import Frozen

# A run id as a receipt may name it (the engine's own, or an imported log's): no path separators.
RUN_ID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class LogEntry(Frozen):
    """One receipt file of the log (immutable)."""

    __slots__ = ("seq", "run_id", "path")
    seq: int
    run_id: str
    path: Path

    def __init__(self, seq: int, run_id: str, path: Path) -> None:
        self._set(seq=seq, run_id=run_id, path=path)


def log_entries(receipts: Path) -> list[LogEntry]:
    """The receipt log in chain order (file names are ``<seq>-<runId>.json``)."""
    entries = []
    try:
        names = os.listdir(receipts)
    except FileNotFoundError:
        return []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        seq, _, run_id = name[:-5].partition("-")
        if seq.isdigit() and run_id:
            entries.append(LogEntry(int(seq), run_id, receipts / name))
    return sorted(entries, key=lambda e: e.seq)


def log_name(seq: int, run_id: str) -> str:
    return f"{seq:08d}-{run_id}.json"
