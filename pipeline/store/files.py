"""A root's files by name, each read and hashed once per identity and not at all when vouched for."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from functools import partial

from ..errors import StaleState
from ..fsutil import read_bounded, sha256_bytes


class Stored(tuple[str, int, str, int]):
    """A file not read yet: (where it is, its size, the sha256 its bytes must have, its size bound).

    A tuple, so that a read of a whole store builds one per file in C (``stored_entry``)."""

    __slots__ = ()

    @property
    def path(self) -> str:
        return self[0]

    @property
    def size(self) -> int:
        return self[1]

    @property
    def digest(self) -> str:
        return self[2]

    @property
    def limit(self) -> int:
        return self[3]

    def __repr__(self) -> str:
        return f"Stored({self[0]!r}, {self[1]}, {self[2][:12]})"

    def load(self) -> bytes:
        """The bytes, refused (exit 5) unless they hash to the digest the state was read with."""
        path = self[0]
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            data, digest = read_settled(path, st, self[3])
            if digest == self[2]:
                return data
        raise StaleState(f"{path} changed while memfold was reading the store (nothing was written)",
                         code="state.stale", hint="retry the command")


stored_entry: Callable[[tuple[str, int, str, int]], Stored] = partial(tuple.__new__, Stored)


class Files(MutableMapping[str, bytes]):
    """A root's files by name. A file the state cache vouches for is read only when its bytes are asked
    for (its hash and size are known without reading), so a write need not read the whole store."""

    __slots__ = ("_entries", "_digests")

    def __init__(self, entries: Mapping[str, bytes | Stored] | None = None,
                 digests: dict[str, tuple[bytes, str]] | None = None) -> None:
        self._entries: dict[str, bytes | Stored] = dict(entries or {})
        # Digests of entries loaded from a Stored, while they still hold those very bytes.
        self._digests: dict[str, tuple[bytes, str]] = dict(digests or {})

    def __repr__(self) -> str:
        return f"Files({self._entries!r})"

    def __getitem__(self, name: str) -> bytes:
        value = self._entries[name]
        if isinstance(value, Stored):
            data = value.load()
            self._entries[name] = data
            self._digests[name] = (data, value.digest)
            return data
        return value

    def __setitem__(self, name: str, data: bytes) -> None:
        self._entries[name] = data
        self._digests.pop(name, None)

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._digests.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def copy(self) -> Files:
        return Files(self._entries, self._digests)

    def subset(self, names: Iterable[str]) -> Files:
        """The named files only (still unread where they were)."""
        return Files({n: self._entries[n] for n in names},
                     {n: self._digests[n] for n in names if n in self._digests})

    def stored(self, name: str, data: bytes | Stored) -> None:
        """Enter a file as read from disk, bytes or not yet read."""
        self._entries[name] = data

    def loaded(self) -> Iterator[tuple[str, bytes]]:
        """The files whose bytes are in memory."""
        return ((n, v) for n, v in self._entries.items() if not isinstance(v, Stored))

    def digest_of(self, name: str) -> str | None:
        """The sha256 of the file when known without hashing (it is unchanged since it was read)."""
        value = self._entries.get(name)
        if isinstance(value, Stored):
            return value.digest
        hit = self._digests.get(name)
        return hit[1] if hit is not None and hit[0] is value else None

    def known_digests(self) -> dict[str, str]:
        """``digest_of`` for every file whose hash is known without hashing, in one pass."""
        digests = self._digests
        out = {n: v[2] for n, v in self._entries.items() if type(v) is Stored}
        for name, (data, digest) in digests.items():
            if self._entries.get(name) is data:
                out[name] = digest
        return out

    def size_of(self, name: str) -> int:
        value = self._entries[name]
        return value[1] if type(value) is Stored else len(value)

    def total_size(self) -> int:
        """The bytes of every file, none read (a store of 20,000 files is summed in about a millisecond)."""
        return sum([v[1] if type(v) is Stored else len(v) for v in self._entries.values()])


def known_digest(files: Mapping[str, bytes], name: str) -> str | None:
    return files.digest_of(name) if isinstance(files, Files) else None


def size_of(files: Mapping[str, bytes], name: str) -> int:
    return files.size_of(name) if isinstance(files, Files) else len(files[name])


def same_file(a: Mapping[str, bytes], b: Mapping[str, bytes], name: str) -> bool:
    """Whether both hold ``name`` with equal bytes; known hashes answer without reading."""
    if name not in a or name not in b:
        return (name in a) == (name in b)
    da, db = known_digest(a, name), known_digest(b, name)
    if da is not None and db is not None:
        return da == db
    return a[name] == b[name]


# A file changed this recently may change again within one timestamp tick unseen (git's "racy" case):
# such a file is read again every time until it has settled.
_SETTLED_NS = 2_000_000_000
_KNOWN_MAX_BYTES = 64 << 20
# path -> ((st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns), bytes, sha256)
_known: dict[str, tuple[tuple[int, int, int, int, int], bytes, str]] = {}
_known_bytes = [0]


def read_settled(path: str, st: os.stat_result, limit: int) -> tuple[bytes, str]:
    """A file's bytes and hash, re-read only when its identity changed since a settled earlier read.

    Any write to a file, in place or by rename, changes its (device, inode, size, mtime, ctime), and a
    long-lived process (the MCP server) re-reads both roots several times per transaction.
    """
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _known.get(path)
    if hit is not None and hit[0] == key and st.st_size <= limit:
        return hit[1], hit[2]
    started = time.time_ns()
    data = read_bounded(path, limit)
    digest = sha256_bytes(data)
    if started - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS and len(data) == st.st_size:
        if hit is not None:
            _known_bytes[0] -= len(hit[1])
        if _known_bytes[0] + len(data) > _KNOWN_MAX_BYTES:
            _known.clear()
            _known_bytes[0] = 0
        _known[path] = (key, data, digest)
        _known_bytes[0] += len(data)
    return data, digest
