"""Both roots' files by identity, kept in the private home, so a write reads and hashes only what changed.

Git's index does the same for a work tree: each entry is a file's identity (device, inode, size, mtime
and ctime, in ns) with the sha256 of its bytes. Any write to a file, in place or by rename, changes
that identity, so an entry whose identity matches describes the bytes on disk. A file changed less
than two seconds before it was read may change again within one timestamp tick unseen (git's "racy
clean" case): it is never entered, and is read again every time until it has settled.

Besides the entries, the cache keeps values derived from content alone, keyed by content hash: a
memory's parsed frontmatter, its near-duplicate keys, and which (name, hash) pairs the privacy rules
found clean, under the digest of the rule set that scanned them. A value keyed by a content hash can
never describe other bytes, so a hand edit, a forget or a recovery only makes entries unused.

The cache is advisory: missing, unreadable, foreign or torn, it is simply rebuilt.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

VERSION = 1
FOLDER = "cache"
NAME = "state.json"
SETTLED_NS = 2_000_000_000
# Derived values by kind, each keyed by "<name> <hash>" ("clean": "<ruleset digest> <name> <hash>");
# "receipt" holds a receipt file's digest by the sha256 of its bytes, and by the file's identity once
# it has settled ("<file> @"): in a small file of its own, written whenever it changes (the chain head
# is read back by every commit).
KINDS = ("memory", "fold", "clean", "receipt")
RECEIPTS_NAME = "receipts.json"

Identity = tuple[int, int, int, int, int]


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class StateCache:
    """One project's cache as loaded, with what this process learned since; ``flush`` writes it."""

    __slots__ = ("path", "roots", "derived", "dirty", "seen", "loaded", "changes", "receipts_dirty")

    def __init__(self, path: str | None) -> None:
        self.path = path
        # root path -> file name -> [dev, ino, size, mtime_ns, ctime_ns, sha256]
        self.roots: dict[str, dict[str, list[Any]]] = {}
        self.derived: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self.dirty = False
        self.changes = 0  # entries and values added, changed or dropped since loaded
        self.receipts_dirty = False
        self.seen: set[str] = set()  # content hashes read or written by this process
        self.loaded: tuple[int, ...] | None = None

    def digest(self, root: str, name: str, ident: Identity) -> str | None:
        """The sha256 of the file when its identity is the one entered, else None."""
        entry = self.roots.get(root, {}).get(name)
        if not isinstance(entry, list) or len(entry) != 6 or tuple(entry[:5]) != ident:
            return None
        sha: str = entry[5]
        self.seen.add(sha)
        return sha

    def enter(self, root: str, name: str, ident: Identity, sha: str, read_started_ns: int) -> None:
        """Record a file just read, unless it changed too recently to trust its identity."""
        self.seen.add(sha)
        if read_started_ns - max(ident[3], ident[4]) <= SETTLED_NS:
            self.drop(root, name)
            return
        entries = self.roots.setdefault(root, {})
        entry = [*ident, sha]
        if entries.get(name) != entry:
            entries[name] = entry
            self._changed()

    def drop(self, root: str, name: str) -> None:
        if self.roots.get(root, {}).pop(name, None) is not None:
            self._changed()

    def keep_only(self, root: str, names: set[str]) -> None:
        """Forget the entries of files that are gone from the root (forgotten, renamed)."""
        entries = self.roots.get(root)
        if entries is None:
            return
        for name in [n for n in entries if n not in names]:
            del entries[name]
            self._changed()

    def get(self, kind: str, key: str) -> Any:
        return self.derived[kind].get(key)

    def put(self, kind: str, key: str, value: Any) -> None:
        table = self.derived[kind]
        if table.get(key) != value:
            table[key] = value
            if kind == "receipt":
                self.receipts_dirty = True
            else:
                self._changed()

    def _changed(self) -> None:
        self.dirty = True
        self.changes += 1

    def worth_writing(self) -> bool:
        """Whether enough changed to rewrite the file. Rewriting it costs O(store); an entry not written
        only means that file is read again next time, so a few changes wait for more (at most 64,
        or an eighth of the entries in a small store)."""
        size = sum(len(entries) for entries in self.roots.values())
        return self.dirty and (self.changes >= 64 or self.changes * 8 >= size)

    def flush_receipts(self) -> None:
        """Write the receipt digests this process used or made (the head and the chain's first)."""
        if not self.receipts_dirty or self.path is None:
            return
        table = {k: v for k, v in self.derived["receipt"].items() if _content_of(k, v) in self.seen}
        _write(os.path.join(os.path.dirname(self.path), RECEIPTS_NAME),
               json.dumps({"version": VERSION, "receipt": table}, sort_keys=True).encode("utf-8"))
        self.receipts_dirty = False

    def flush(self) -> None:
        """Write the cache if this process learned something; values of hashes no file holds go."""
        self.flush_receipts()
        if not self.dirty or self.path is None:
            return
        live = self.seen | {entry[5] for entries in self.roots.values() for entry in entries.values()}
        for kind, table in self.derived.items():
            for key in [k for k in table if k.rsplit(" ", 1)[-1] not in live and kind != "receipt"]:
                del table[key]
        kept = {kind: table for kind, table in self.derived.items() if kind != "receipt"}
        payload = json.dumps({"version": VERSION, "roots": self.roots, "derived": kept},
                             separators=(",", ":"), ensure_ascii=False, check_circular=False)
        _write(self.path, payload.encode("utf-8"))
        self.dirty = False
        self.changes = 0
        try:
            self.loaded = identity_of(os.stat(self.path, follow_symlinks=False))
        except OSError:
            self.loaded = None


def _content_of(key: str, value: Any) -> Any:
    """The content hash a receipt entry describes: the key's tail, or for an entry by file identity
    ("<file> @": identity, digest, content hash) the hash it holds."""
    tail = key.rsplit(" ", 1)[-1]
    return value[6] if tail == "@" and type(value) is list and len(value) == 7 else tail


def _write(path: str, data: bytes) -> None:
    from ..fsutil import atomic_write

    folder = os.path.dirname(path)
    if os.path.islink(folder):
        return  # never write through a symlinked cache directory
    try:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        atomic_write(path, data, durable=False)  # a cache: a crash may lose it, never corrupt a store
    except OSError:
        pass


_OPEN: dict[str, StateCache] = {}


def cache_for(project_home: Path | str) -> StateCache:
    """This process's cache of one project home, loaded from disk when the file changed since."""
    path = os.path.join(project_home, FOLDER, NAME)
    try:
        st = os.stat(path, follow_symlinks=False)
        stamp: tuple[int, ...] | None = identity_of(st)
    except OSError:
        stamp = None
    cache = _OPEN.get(path)
    if cache is not None and (cache.dirty or cache.receipts_dirty or cache.loaded == stamp):
        return cache
    if not _OPEN:
        import atexit

        atexit.register(flush_all)
    cache = _OPEN[path] = _load(path, stamp)
    return cache


def flush_all() -> None:
    """Write every cache this process changed enough: once per command, at exit, whatever it read."""
    for cache in list(_OPEN.values()):
        if cache.worth_writing():
            cache.flush()
        else:
            cache.flush_receipts()


def _load(path: str, stamp: tuple[int, ...] | None) -> StateCache:
    cache = StateCache(path)
    cache.loaded = stamp
    receipts = _read_json(os.path.join(os.path.dirname(path), RECEIPTS_NAME))
    if isinstance(receipts, dict) and receipts.get("version") == VERSION and isinstance(receipts.get("receipt"), dict):
        cache.derived["receipt"] = receipts["receipt"]
    data = _read_json(path) if stamp is not None else None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return cache
    roots, derived = data.get("roots"), data.get("derived")
    if not isinstance(roots, dict) or not isinstance(derived, dict):
        return cache
    if all(isinstance(v, dict) for v in roots.values()):
        cache.roots = roots
    for kind in KINDS:
        table = derived.get(kind)
        if isinstance(table, dict) and kind != "receipt":
            cache.derived[kind] = table
    return cache


def _read_json(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None
