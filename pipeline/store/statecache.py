"""Both roots' files by identity, kept in the private home, so a write reads and hashes only what changed.

Git's index does the same for a work tree: each entry is a file's identity (device, inode, size, mtime
and ctime, in ns) with the sha256 of its bytes. Any write to a file, in place or by rename, changes
that identity, so an entry whose identity matches describes the bytes on disk. A file changed less
than two seconds before it was read may change again within one timestamp tick unseen (git's "racy
clean" case): it is never entered, and is read again every time until it has settled.

Besides the entries, the cache keeps values derived from content alone, each bound to the content hash
it was derived from: a memory's parsed frontmatter, the near-duplicate keys of the private store
(as a table from key to the (name, hash) pairs holding it, so a check looks up its own keys instead of
visiting every memory), and which (name, hash) pairs the privacy rules found clean, under the digest
of the rule set that scanned them. A value bound to a content hash never describes other bytes, so a
hand edit, a forget or a recovery only makes entries unused.

The file is the entries in marshal's format (CPython's own serializer, read in C: a JSON object per
entry cost a write ~15 ms at 2,000 memories) behind a magic and a CRC-32 of the payload, laid out so
that a fresh process builds few objects from it (each one it builds grows its heap). It holds only
dicts, tuples, strings and integers, whose shapes are checked in bulk when loaded; nothing loaded
from it is ever run.

The cache is advisory: missing, unreadable, foreign or torn, it is simply rebuilt.
"""

from __future__ import annotations

import json
import os

from .cachefile import Fields, Identity, all_of, read_json, read_payload, shared, write_file, write_payload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

VERSION = 2
FOLDER = "cache"
NAME = "state.bin"
FORMER_NAMES = ("state.json",)  # earlier versions' caches: removed when this one is written
SETTLED_NS = 2_000_000_000
# Values kept by key (``get``/``put``): "clean" by "<ruleset digest> <name> <hash>" (held by digest and
# name, so the hashes are the entries' own strings); "receipt" holds a receipt file's digest by the
# sha256 of its bytes, and by the file's identity once it has settled ("<file> @"): in a small JSON file
# of its own, written whenever it changes (the chain head is read back by every commit), which also
# holds the record of the last state proven (``put_proof``).
KINDS = ("receipt",)
RECEIPTS_NAME = "receipts.json"
RECEIPTS_VERSION = 1

FoldHolders = tuple[tuple[str, str], ...]


def identity_of(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class StateCache:
    """One project's cache as loaded, with what this process learned since; ``flush`` writes it."""

    __slots__ = ("path", "roots", "digests", "memory", "fold_text", "fold", "folded", "unfolded", "clean", "scopes",
                 "derived", "dirty", "seen", "loaded", "changes", "receipts_dirty", "proof")

    def __init__(self, path: str | None) -> None:
        self.path = path
        # root path -> file name -> identity, and -> the sha256 its bytes had with that identity
        self.roots: dict[str, dict[str, Identity]] = {}
        self.digests: dict[str, dict[str, str]] = {}
        self.memory: dict[str, Fields] = {}  # file name -> its fields, bound to a content hash
        # Near-duplicate keys: one line "<key> <file name> <content hash>" per memory holding the key, in
        # one text (a line is found by str.find, so loading the table builds one object, not 6,000),
        # the keys entered by this process, and which content of each file the table describes.
        self.fold_text = "\n"
        self.fold: dict[str, FoldHolders] = {}
        self.folded: dict[str, str] = {}
        self.unfolded: list[tuple[str, str]] = []  # (file, hash) whose lines in the text are out of date
        # The privacy verdicts: rule set digest -> file name -> the content hash found clean under it,
        # and the digests asked about by this process (the others go when the file is written).
        self.clean: dict[str, dict[str, str]] = {}
        self.scopes: set[str] = set()
        self.derived: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
        self.dirty = False
        self.changes = 0  # entries and values added, changed or dropped since loaded
        self.receipts_dirty = False
        self.seen: set[str] = set()  # receipt content hashes read or written by this process
        self.loaded: tuple[int, ...] | None = None
        # The last committed state that passed the whole post-state check, as ``store.proven`` records
        # it (bound to the digest of both roots' hash maps); kept beside the receipt digests.
        self.proof: list[Any] | None = None

    def entries(self, root: str) -> tuple[dict[str, Identity], dict[str, str]]:
        """The identities and hashes entered for ``root`` (empty when none)."""
        return self.roots.get(root, {}), self.digests.get(root, {})

    def digest(self, root: str, name: str, ident: Identity) -> str | None:
        """The sha256 of the file when its identity is the one entered, else None."""
        if self.roots.get(root, {}).get(name) != ident:
            return None
        return self.digests.get(root, {}).get(name)

    def enter(self, root: str, name: str, ident: Identity, sha: str, read_started_ns: int) -> None:
        """Record a file just read, unless it changed too recently to trust its identity."""
        if read_started_ns - max(ident[3], ident[4]) <= SETTLED_NS:
            self.drop(root, name)
            return
        idents, digests = self.roots.setdefault(root, {}), self.digests.setdefault(root, {})
        if idents.get(name) != ident or digests.get(name) != sha:
            idents[name] = ident
            digests[name] = sha
            self._changed()

    def drop(self, root: str, name: str) -> None:
        if self.roots.get(root, {}).pop(name, None) is not None:
            self.digests.get(root, {}).pop(name, None)
            self._changed()

    def keep_only(self, root: str, names: set[str] | dict[str, str]) -> None:
        """Forget the entries of files that are gone from the root (forgotten, renamed)."""
        idents = self.roots.get(root)
        if idents is None:
            return
        gone = idents.keys() - names.keys() if isinstance(names, dict) else idents.keys() - names
        for name in gone:
            self.drop(root, name)

    def fields(self, name: str) -> Any:
        return self.memory.get(name)

    def put_fields(self, name: str, fields: Fields) -> None:
        if self.memory.get(name) != fields:
            self.memory[name] = fields
            self._changed()

    def put_fold(self, name: str, sha: str, keys: list[str]) -> None:
        """Enter the near-duplicate keys of ``name`` as it holds the content ``sha``."""
        before = self.folded.get(name)
        if before == sha:
            return
        if before is not None:
            self.unfolded.append((name, before))
        self.folded[name] = sha
        holder = (name, sha)
        for key in keys:
            self.fold[key] = (*self.fold.get(key, ()), holder)
        self._changed()

    def holders(self, key: str) -> list[tuple[str, str]]:
        """The (file name, content hash) pairs entered under a near-duplicate key."""
        found = list(self.fold.get(key, ()))
        text, needle = self.fold_text, f"\n{key} "
        at = text.find(needle)
        while at >= 0:
            end = text.find("\n", at + 1)
            parts = text[at + 1:end].split(" ")
            if len(parts) == 3:
                found.append((parts[1], parts[2]))
            at = text.find(needle, end)
        return found

    def get(self, kind: str, key: str) -> Any:
        if kind == "clean":
            scope, name, sha = _clean_key(key)
            self.scopes.add(scope)
            return 1 if self.clean.get(scope, {}).get(name) == sha else None
        return self.derived[kind].get(key)

    def put(self, kind: str, key: str, value: Any) -> None:
        if kind == "clean":
            scope, name, sha = _clean_key(key)
            self.scopes.add(scope)
            table = self.clean.setdefault(scope, {})
            if value == 1 and table.get(name) != sha:
                table[name] = sha
                self._changed()
            return
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

    def put_proof(self, record: list[Any]) -> None:
        if self.proof != record:
            self.proof = record
            self.receipts_dirty = True

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
        document: dict[str, Any] = {"version": RECEIPTS_VERSION, "receipt": table}
        if self.proof is not None:
            document["proof"] = self.proof
        write_file(os.path.join(os.path.dirname(self.path), RECEIPTS_NAME),
                   json.dumps(document, sort_keys=True).encode("utf-8"))
        self.receipts_dirty = False

    def flush(self) -> None:
        """Write the cache if this process learned something; values of contents no file holds go."""
        self.flush_receipts()
        if not self.dirty or self.path is None:
            return
        self._prune()
        write_payload(self.path, (VERSION, *shared(self.roots, self.digests, self.memory, self.fold_text,
                                                   self.folded, self.clean)))
        for former in FORMER_NAMES:
            try:
                os.unlink(os.path.join(os.path.dirname(self.path), former))
            except OSError:
                pass
        self.dirty = False
        self.changes = 0
        try:
            self.loaded = identity_of(os.stat(self.path, follow_symlinks=False))
        except OSError:
            self.loaded = None

    def _prune(self) -> None:
        """Drop derived values of contents that no entered file holds and this process did not read."""
        live = self.seen.union(*(digests.values() for digests in self.digests.values()))
        self.memory = {name: fields for name, fields in self.memory.items() if fields[0] in live}
        self.unfolded.extend((name, sha) for name, sha in self.folded.items() if sha not in live)
        self.folded = folded = {name: sha for name, sha in self.folded.items() if sha in live}
        self.fold_text = _without(self.fold_text, self.unfolded) + "".join(
            f"{key} {name} {sha}\n" for key, holders in self.fold.items() for name, sha in holders
            if folded.get(name) == sha)
        self.fold, self.unfolded = {}, []
        used = self.scopes & self.clean.keys() or self.clean.keys()
        self.clean = {scope: {name: sha for name, sha in self.clean[scope].items() if sha in live} for scope in used}


def _without(text: str, holders: list[tuple[str, str]]) -> str:
    """The fold text without the lines of ``holders`` (each line ends with its file and hash)."""
    if len(holders) > 256:
        gone = {f"{name} {sha}" for name, sha in holders}
        return "\n" + "".join(f"{line}\n" for line in text.split("\n") if line and line.split(" ", 1)[-1] not in gone)
    for name, sha in holders:
        tail = f" {name} {sha}\n"
        at = text.find(tail)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            text = text[:start] + text[at + len(tail):]
            at = text.find(tail, start)
    return text


def _clean_key(key: str) -> tuple[str, str, str]:
    """A privacy verdict's key, "<rule set digest> <file name> <content hash>" (names hold no space)."""
    scope, _, rest = key.partition(" ")
    name, _, sha = rest.rpartition(" ")
    return scope, name, sha


def _content_of(key: str, value: Any) -> Any:
    """The content hash a receipt entry describes: the key's tail, or for an entry by file identity
    ("<file> @": identity, digest, content hash) the hash it holds."""
    tail = key.rsplit(" ", 1)[-1]
    return value[6] if tail == "@" and type(value) is list and len(value) == 7 else tail


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
    receipts = read_json(os.path.join(os.path.dirname(path), RECEIPTS_NAME))
    if isinstance(receipts, dict) and receipts.get("version") == RECEIPTS_VERSION \
            and isinstance(receipts.get("receipt"), dict):
        cache.derived["receipt"] = receipts["receipt"]
        if type(receipts.get("proof")) is list:
            cache.proof = receipts["proof"]
    data = read_payload(path) if stamp is not None else None
    if type(data) is not tuple or len(data) != 7 or data[0] != VERSION or type(data[4]) is not str \
            or not all(type(part) is dict for part in (*data[1:4], *data[5:])):
        return cache
    _version, roots, digests, memory, fold_text, folded, clean = data
    # Shapes checked in bulk (in C): an entry of the wrong kind is never served, the file is rebuilt.
    if not all_of(roots.values(), dict) or not all_of(digests.values(), dict) or roots.keys() != digests.keys() \
            or not all(all_of(table.values(), str) and set(map(len, table.values())) <= {64}
                       and table.keys() == roots[root].keys() for root, table in digests.items()) \
            or not all_of(memory.values(), tuple) or set(map(len, memory.values())) - {9} \
            or not fold_text.startswith("\n") or not all_of(folded.values(), str) \
            or not all_of(clean.values(), dict) or not all(all_of(table.values(), str) for table in clean.values()):
        return cache
    cache.roots, cache.digests = roots, digests
    cache.memory, cache.fold_text, cache.folded, cache.clean = memory, fold_text, folded, clean
    return cache
