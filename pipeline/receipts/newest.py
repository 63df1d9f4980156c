"""The receipt log's pointer to its newest and first entries, so a commit finds the chain head without listing the log.

``<project home>/newest-receipt.json`` names the newest receipt (sequence number and run id) and the
first one (the chain's name). Every commit stages it with the receipt it names, under the same journal,
so after any crash and recovery it names the receipt that landed last (a roll-back puts the old one
back from the run's ``backup/``). It is a hint, never evidence: it holds only while the log's
directory has not changed after it (by change time) and both files it names exist as regular files;
otherwise the log is listed as before. ``memfold audit`` always walks the listed log.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InputRejected
from ..store.jsontext import dump_json, read_json
from .log import RUN_ID_NAME

NEWEST = "newest-receipt.json"
NEWEST_KIND = "memfold-receipt-log-newest"
_MAX_BYTES = 4096
_KEYS = {"kind", "schemaVersion", "seq", "runId", "firstRunId"}


def newest_bytes(seq: int, run_id: str, first_run_id: str) -> bytes:
    return dump_json({"kind": NEWEST_KIND, "schemaVersion": 1, "seq": seq, "runId": run_id,
                      "firstRunId": first_run_id})


def read_newest(receipts: Path) -> tuple[int, str, str] | None:
    """(seq, newest run id, first run id) when the pointer beside the log ``receipts`` is well formed
    and both entries it names exist."""
    from .log import log_name

    pointer = receipts.parent / NEWEST
    try:
        # Each commit renames the pointer into place after its log entry, so the log's directory has
        # not changed since unless its change time is later than the pointer's: an entry added, removed
        # or renamed since by anything else (an older version, a hand edit, a sweep of temps).
        if os.lstat(receipts).st_ctime_ns > os.lstat(pointer).st_ctime_ns:
            return None
        data = read_json(pointer, _MAX_BYTES)
    except (OSError, ValueError, InputRejected):
        return None  # missing, a symlink, oversized or torn: the log is listed
    if not isinstance(data, dict) or set(data) != _KEYS or data["kind"] != NEWEST_KIND \
            or data["schemaVersion"] != 1:
        return None
    seq, run_id, first = data["seq"], data["runId"], data["firstRunId"]
    if type(seq) is not int or seq < 1 or not all(isinstance(v, str) and RUN_ID_NAME.match(v) for v in (run_id, first)):
        return None
    if seq == 1 and run_id != first:
        return None
    names = (log_name(seq, run_id), log_name(1, first))
    for name in names:
        try:
            if not stat.S_ISREG(os.lstat(receipts / name).st_mode):
                return None
        except OSError:
            return None
    return seq, run_id, first
