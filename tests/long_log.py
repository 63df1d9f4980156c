"""A receipt log grown long without a thousand real commits, and a count of how often a process lists it.

``grow_log`` appends receipts that each repeat the newest one's final state (a no-op transaction), every
one linked to the digest of the one before, so `memfold audit` walks a whole valid chain. They are what
an older version left: no log pointer (``newest-receipt.json``) names them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pipeline.receipts.log import log_entries, log_name
from pipeline.receipts.newest import NEWEST
from pipeline.receipts.receipt import receipt_digest
from pipeline.store.jsontext import dump_json

_LISTED: list[str] = []
_WATCHED: list[str] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _WATCHED and event in ("os.listdir", "os.scandir") and args and args[0] is not None:
        path = os.path.realpath(os.fsdecode(args[0])) if isinstance(args[0], (str, bytes, os.PathLike)) else ""
        if path in _WATCHED:
            _LISTED.append(path)


sys.addaudithook(_hook)


class Listings:
    """Counts the listings of ``folder`` made by this process between ``start`` and ``stop``."""

    def __init__(self, folder: Path) -> None:
        self.folder = os.path.realpath(folder)

    def __enter__(self) -> Listings:
        _LISTED.clear()
        _WATCHED[:] = [self.folder]
        return self

    def __exit__(self, *_exc: object) -> None:
        _WATCHED.clear()
        self.count = len(_LISTED)


def grow_log(project_home: Path, count: int, *, drop_pointer: bool = True) -> None:
    """Append ``count`` no-op receipts to the log, as an older version writes them (no pointer names them)."""
    receipts = project_home / "receipts"
    last = log_entries(receipts)[-1]
    newest: dict[str, Any] = json.loads(last.path.read_bytes())
    seq = last.seq
    for i in range(count):
        seq += 1
        run_id = f"20261130T11{i // 60 % 60:02d}{i % 60:02d}Z-{seq:08x}"
        receipt = {**newest, "runId": run_id, "sourceHashes": newest["finalHashes"], "operations": [],
                   "selected": [], "previous": receipt_digest(newest)}
        (receipts / log_name(seq, run_id)).write_bytes(dump_json(receipt))
        newest = receipt
    if drop_pointer:
        (project_home / NEWEST).unlink(missing_ok=True)
