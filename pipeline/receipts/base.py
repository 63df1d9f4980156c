"""Finding the base of a sync in the receipt log: the receipt this user's head in the work tree names.

See ``state.base`` for what the base is. The head is read where the work tree keeps it (``witness``);
a head counts only when the log holds the receipt it names with that very digest. Without one, the
newest receipt written from this work tree stands in (each receipt's ``sync.worktree`` says where it
ran), else the newest of the log.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UnsafePath
from ..state.base import NO_BASE, Base
from .log import LogEntry, log_entries, log_name
from .receipt import file_digest, load_receipt, log_ends, normalize_maps, strip_prefix
from .witness import Head, head_file, heads_in

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store.statecache import StateCache


def find_head(receipts: Path, heads: Path, mirror: Path, cache: StateCache | None = None) -> Head | None:
    """The newest head in the work tree that names a receipt of this store's log, by its digest."""
    ends = log_ends(receipts)
    if ends is None:
        return None
    try:
        chain = file_digest(ends[0].path, cache)
        found = head_file(heads, mirror, chain)
    except (OSError, ValueError, UnsafePath):
        return None
    if found.data is None:
        return None
    good = [head for head in heads_in(found.data) if head.chain == chain and head.seq <= ends[1].seq
            and _digest(receipts / log_name(head.seq, head.run_id), cache) == head.receipt]
    return max(good, key=lambda head: head.seq) if good else None


def _digest(path: Path, cache: StateCache | None) -> str | None:
    try:
        return file_digest(path, cache)
    except (OSError, ValueError):
        return None


def find_base(receipts: Path, heads: Path, mirror: Path, worktree: Path, cache: StateCache | None = None,
              head: Head | None = None) -> Base:
    """The base of a sync in ``worktree`` (``head``: the one ``find_head`` found, if the caller has it)."""
    if head is None:
        head = find_head(receipts, heads, mirror, cache)
    if head is not None:
        receipt = _load(receipts / log_name(head.seq, head.run_id))
        if receipt is not None:
            return _base(receipt, head.seq, head.receipt, "head", None)
    entries = log_entries(receipts)
    if not entries:
        return NO_BASE
    seen = _Seen(entries)
    newest: tuple[LogEntry, dict[str, Any]] | None = None
    for entry in reversed(entries):
        receipt = _load(entry.path)
        if receipt is None:
            continue
        if newest is None:
            newest = (entry, receipt)
        sync = receipt.get("sync")
        if isinstance(sync, dict) and sync.get("worktree") == str(worktree):
            return _base(receipt, entry.seq, _digest(entry.path, cache), "worktree", seen.holds)
    if newest is None:
        return NO_BASE
    return _base(newest[1], newest[0].seq, _digest(newest[0].path, cache), "log", seen.holds)


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return load_receipt(path)
    except (OSError, ValueError, RecursionError):
        return None


def _base(receipt: dict[str, Any], seq: int, digest: str | None, source: str, seen: Any) -> Base:
    public = normalize_maps(receipt.get("finalHashes"))["public"]
    return Base(public, agreed_versions(receipt), seq=seq, receipt=digest, source=source, seen=seen)


def agreed_versions(receipt: dict[str, Any]) -> dict[str, str | None]:
    """For each name a receipt's sync kept apart (held, in conflict), the version last agreed on."""
    sync = receipt.get("sync")
    out: dict[str, str | None] = {}
    if not isinstance(sync, dict):
        return out
    for key in ("held", "conflicts"):
        rows = sync.get(key)
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and isinstance(row.get("name"), str):
                agreed = row.get("agreed")
                out[row["name"]] = strip_prefix(agreed) if isinstance(agreed, str) else None
    return out


class _Seen:
    """Every (name, sha256) the log's receipts ever recorded in the mirror, read on the first question."""

    def __init__(self, entries: list[LogEntry]) -> None:
        self.entries = entries
        self.pairs: set[tuple[str, str]] | None = None

    def holds(self, name: str, digest: str) -> bool:
        if self.pairs is None:
            self.pairs = set()
            for entry in self.entries:
                receipt = _load(entry.path)
                if receipt is None:
                    continue
                for key in ("sourceHashes", "finalHashes"):
                    self.pairs.update(normalize_maps(receipt.get(key))["public"].items())
        return (name, digest) in self.pairs
