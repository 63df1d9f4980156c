"""The audit report's plain model (runs, changes, entries) and the memory texts it shows by content hash."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import InputRejected
from ..fsutil import read_bounded, sha256_bytes
from ..store.memory import INDEX_NAME, is_memory_name, parse_memory

# Verdicts by which a deleted memory lives on in another one of its cluster.
MERGE_VERDICTS = frozenset({"SUBSUMED", "SUPERSEDED"})


@dataclass(frozen=True)
class Change:
    """One memory touched by one receipt; text is None where absent, hidden or no longer on disk."""

    name: str
    kind: str  # created | rewritten | merged | deleted
    reclassified: str | None  # "safe → private" and the reverse
    verdict: str | None
    reason: str | None
    into: tuple[str, ...]
    before: str | None
    after: str | None
    missing_text: bool
    lost: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    seq: int
    run_id: str
    file: str
    command: str
    created_at: str
    worker: str
    sandbox: str
    ok: bool
    findings: tuple[str, ...]
    chain_break: bool
    memories: int
    mirror: int
    run_dir: bool
    undoes: str | None
    hand_edits: tuple[str, ...]
    hidden_hand_edits: int
    changes: tuple[Change, ...]


@dataclass(frozen=True)
class Chain:
    public: bool
    scope_key: str
    project: str | None
    generated_at: str
    audit_ok: bool
    receipts_total: int
    entries: tuple[Entry, ...]
    findings: tuple[str, ...]
    hand_edits_now: tuple[str, ...]
    hidden_hand_edits_now: int
    memories: int
    by_type: dict[str, int] = field(default_factory=dict)
    by_visibility: dict[str, int] = field(default_factory=dict)
    capacity: tuple[int, int, int, int] = (0, 0, 0, 0)


def normalised(line: str) -> str:
    return " ".join(line.split())


def lost_lines(before: str, after_bodies: Iterable[str]) -> list[str]:
    """The non-empty lines of ``before`` that no post-state body still carries (whitespace normalised)."""
    return lost_from(before, carried_lines(after_bodies))


def carried_lines(bodies: Iterable[str]) -> set[str]:
    return {normalised(line) for body in bodies for line in body.splitlines()}


def lost_from(before: str, carried: set[str]) -> list[str]:
    out: list[str] = []
    for line in before.splitlines():
        key = normalised(line)
        if key and key not in carried and key not in out:
            out.append(key)
    return out


# A long chain names the same files in every receipt: each name is judged once.
_is_memory = lru_cache(maxsize=1 << 16)(is_memory_name)


def memory_names(files: dict[str, str]) -> list[str]:
    return sorted(n for n in files if n != INDEX_NAME and _is_memory(n))


class Texts:
    """Memory file bytes by sha256, from every place that still holds some; each checked against its hash."""

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._bodies: dict[str, str] = {}

    def add(self, data: bytes) -> None:
        self._data.setdefault(sha256_bytes(data), data)

    def add_dir(self, folder: Path, prefix: str = "") -> None:
        """Every regular file of ``folder`` whose name starts with ``prefix``."""
        try:
            names = sorted(p for p in folder.iterdir()
                           if p.name.startswith(prefix) and p.is_file() and not p.is_symlink())
        except OSError:
            return
        for path in names:
            try:
                self.add(read_bounded(path, 1 << 20))
            except OSError:
                continue

    def text(self, digest: str | None) -> str | None:
        data = self._data.get(digest or "")
        return None if data is None else data.decode("utf-8", "replace")

    def body(self, digest: str, name: str) -> str | None:
        """The Markdown body (the whole text if it does not parse as a memory)."""
        if digest not in self._bodies:
            data = self._data.get(digest)
            if data is None:
                return None
            try:
                self._bodies[digest] = parse_memory(data, name).body
            except InputRejected:  # any unreadable shape still has lines a reader can compare
                self._bodies[digest] = data.decode("utf-8", "replace")
        return self._bodies[digest]
