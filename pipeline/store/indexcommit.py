"""Keeping a store's search index current with a commit: the rows a transaction changed, from the bytes
and memories it holds, written beside the commit and kept only if it lands.

A commit that finds the index describing its pre-state (``state_digest``) writes only the rows that
differ; one that finds it older writes the whole post-state (``_committed``). Rows written here carry
the transaction's hashes and no stat (``racy``): a reader hashes each such file once before serving it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from ..background import Job, run_beside
from . import fts
from .indexbuild import UPDATE_SHARE, add, row_count, set_meta, skip, swap_in
from .searchdb import FORMAT, INDEX_NAME, cache_file, connect, is_racy, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from sqlite3 import Connection
    from typing import Any

    from .memory import Memory


def _parsed(name: str, data: bytes, sha: str, known: Mapping[str, tuple[str, Memory]]) -> Memory:
    """The memory in ``data``: the transaction's own parse when it had these very bytes, else parsed."""
    hit = known.get(name)
    if hit is not None and hit[0] == sha:
        return hit[1]
    from .memory import parse_memory

    return parse_memory(data, name)


def _put(conn: Connection, name: str, data: bytes, sha: str, known: Mapping[str, tuple[str, Memory]]) -> None:
    """The row of a file the transaction wrote, or its skipped entry when it does not parse. Just
    written, so racy: a reader checks it by hash until it finds it settled."""
    from ..errors import InputRejected

    try:
        memory = _parsed(name, data, sha, known)
    except InputRejected:
        skip(conn, name, sha, None, 1)
        return
    add(conn, name, memory, sha, None, 1)


def _committed(root: str, cache: str, post: Mapping[str, str], files: Mapping[str, bytes],
               known: Mapping[str, tuple[str, Memory]], max_files: int, ready: Callable[[], bool] | None) -> None:
    """A new index of exactly the committed post-state, from the bytes and memories the transaction
    holds: no file is read or hashed again. Its rows carry no stat, so each is hashed once when first
    served; the directory is recorded as it is once ``ready`` (if given) says the commit landed, racy, so
    its names are compared until it settles."""

    def fill(conn: Connection) -> None:
        started = time.time_ns()
        for name in names:
            _put(conn, name, files[name], post[name], known)
        _wait(ready)
        dir_st = os.stat(root, follow_symlinks=False)
        set_meta(conn, format=FORMAT, root=root, dir=stat_key(dir_st), racy=str(is_racy(dir_st, started)),
                  count=str(row_count(conn)), state=state)

    names = sorted(n for n in post if n != INDEX_NAME)
    # Past the bound only the first files are indexed: the digest of those alone vouches for no state.
    state = state_digest(post) if len(names) <= max_files else state_digest({n: post[n] for n in names[:max_files]})
    names = names[:max_files]
    swap_in(cache, fill)


class _Dropped(Exception):
    """The transaction whose rows were written did not commit: they are rolled back, never seen."""


def _wait(ready: Callable[[], bool] | None) -> None:
    if ready is not None and not ready():
        raise _Dropped


# The last states digested (each root's, before and after), by value: a long-lived server's next
# commit starts from the state its previous one left, so that map is compared (in C) instead of
# encoded and hashed again.
_DIGESTED: list[tuple[dict[str, str], str]] = []
_DIGESTS_KEPT = 4


def state_digest(files: Mapping[str, str]) -> str:
    """The digest of the state an index describes: the root's files (name -> sha256, its ``MEMORY.md``
    included), sorted by name, each as ``name/sha`` joined by NULs (neither occurs in a file name), under
    sha256. Kept in the index's ``state`` meta entry by whoever writes its rows, so the next writer can
    tell in one comparison whether the index describes the pre-state of its transaction."""
    from ..fsutil import sha256_bytes

    for held, digest in tuple(_DIGESTED):  # a copy: the roots' indexes are written on threads of their own
        if held == files:
            return digest
    held = dict(files)
    digest = sha256_bytes("\0".join([f"{name}/{sha}" for name, sha in sorted(held.items())]).encode(
        "utf-8", "surrogatepass"))
    _DIGESTED[:] = [(held, digest), *_DIGESTED[:_DIGESTS_KEPT - 1]]
    return digest


def _describes(indexed: Mapping[str, str], skipped: Mapping[str, str], state: Mapping[str, str]) -> bool:
    """Whether rows and skipped entries are exactly the files of ``state``, each with its hash (a file
    skipped for its size alone was never read: its stat, checked by every reader, stands for it)."""
    if indexed.keys() | skipped.keys() != state.keys() or indexed.keys() & skipped.keys():
        return False
    return all(state[n] == h for n, h in indexed.items()) and all(not h or state[n] == h for n, h in skipped.items())


def _differing(indexed: Mapping[str, str], skipped: Mapping[str, str], post: Mapping[str, str],
               max_files: int) -> list[str] | None:
    """The files whose row or skipped entry is not the post-state's (by hash), or None when they are
    more than ``1/UPDATE_SHARE`` of it (or it is past the file bound): then a new index is cheaper.
    A file skipped for its size alone (no hash) counts as differing: its row is written again."""
    state = {n: h for n, h in post.items() if n != INDEX_NAME}
    if len(state) > max_files or indexed.keys() & skipped.keys():
        return None
    differing = [n for n in indexed.keys() | skipped.keys() | state.keys()
                 if indexed.get(n, skipped.get(n)) != state.get(n)]
    return differing if len(differing) * UPDATE_SHARE <= len(state) else None


def refresh(root: str, cache: str, pre: Mapping[str, str], post: Mapping[str, str], files: Mapping[str, bytes],
            max_file_bytes: int, max_files: int, *, create: bool = True,
            known: Mapping[str, tuple[str, Memory]] | None = None, changed: Iterable[str] | None = None,
            ready: Callable[[], bool] | None = None) -> None:
    """After a commit: change only the rows of the files the transaction changed.

    ``pre`` and ``post`` map each file of the root to its sha256 before and after the transaction,
    ``files`` to its bytes after, ``known`` a file to the hash and memory the transaction parsed,
    ``changed`` the names whose hash differs (computed when not given). The index is updated in place
    when it described exactly the pre-state, or when its rows differ from the post-state in a few
    files only (a pull brought files into the root since it was written: those rows are written);
    otherwise (none yet, another format, many files changed by hand) it is written anew from the
    post-state, and a missing one is written only with ``create``. Whether it described the pre-state
    is read from its ``state`` digest, which every writer of its rows keeps (readers change only stats
    and masks); an index without one (written by a scan or a reader's ``update``) has its rows compared
    instead.

    ``ready``, if given, is asked once the rows are written and before the directory is recorded and the
    rows committed: it waits for the transaction's commit and says whether it landed. Until then no
    reader sees a row; when it did not land, nothing is written.
    """
    known = {} if known is None else known
    conn = connect(cache)
    if conn is None:
        if create or os.path.exists(cache):
            _committed(root, cache, post, files, known, max_files, ready)
        return
    try:
        recorded = conn.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        if recorded is None or recorded[0] != state_digest(pre):
            indexed = dict(conn.execute("SELECT file, sha FROM docs"))
            skipped = dict(conn.execute("SELECT file, sha FROM skipped"))
            if not _describes(indexed, skipped, {n: h for n, h in pre.items() if n != INDEX_NAME}):
                # Rows of another state (the mirror before a pull): the names whose row differs from the
                # post-state are the ones to write, when they are few; else a new index.
                changed = _differing(indexed, skipped, post, max_files)
                if changed is None:
                    conn.close()
                    return _committed(root, cache, post, files, known, max_files, ready)
        if changed is None:
            changed = [n for n in pre.keys() | post.keys() if pre.get(n) != post.get(n)]
        names = sorted(name for name in changed if name != INDEX_NAME)
        with conn:
            started = time.time_ns()
            # Every old row first, each table in one prepared statement, then the new rows.
            ids = [row for name in names for row in conn.execute("SELECT id FROM docs WHERE file = ?", (name,))]
            fts.delete_many(conn, (rowid for rowid, in ids))
            conn.executemany("DELETE FROM docs WHERE id = ?", ids)
            conn.executemany("DELETE FROM skipped WHERE file = ?", [(name,) for name in names])
            for name in names:
                if name in post:
                    _put(conn, name, files[name], post[name], known)
            _wait(ready)
            dir_st = os.stat(root, follow_symlinks=False)
            set_meta(conn, dir=stat_key(dir_st), racy=str(is_racy(dir_st, started)), count=str(row_count(conn)),
                      state=state_digest(post))
    finally:
        conn.close()
    return None


class Refresh:
    """The index refreshes of one transaction, started before its commit point (see ``after_commit``)."""

    __slots__ = ("threads", "_landed", "_outcome")

    # How long a refresh waits for the commit's outcome before it drops its rows (a reader then rebuilds).
    WAIT_S = 120.0

    def __init__(self) -> None:
        import threading

        self.threads: list[Job] = []
        self._landed = threading.Event()
        self._outcome = False

    def ready(self) -> bool:
        self._landed.wait(self.WAIT_S)
        return self._outcome

    def finish(self, committed: bool) -> None:
        """Say whether the commit landed: the refreshes then record the directory and commit, or drop."""
        self._outcome = committed
        self._landed.set()

    def join(self) -> None:
        for thread in self.threads:
            thread.join()


def after_commit(layout: Any, source: Mapping[str, Mapping[str, str]], final: Mapping[str, Mapping[str, str]],
                 post: Any, limits: Any, changed: Mapping[str, Iterable[str]] | None = None) -> Refresh:
    """Start writing each changed root's index to describe the post-state (the per-prompt path reads it).

    Called before the commit point: each root's index is its own SQLite file, written on a thread of its
    own while the transaction stages, syncs and renames its files (SQLite tokenizes and writes without
    holding the interpreter lock, so the two share the cores). The rows stay in an open SQLite
    transaction until the caller says, with ``Refresh.finish``, whether the commit landed: then the
    root's directory is recorded as the renames left it and the rows are committed, or they are rolled
    back. ``changed`` names, by root key, the files whose hash the commit changes (computed when not
    given). Best effort: an index that missed the commit is caught as stale by its next reader and
    rebuilt there.
    """
    home = os.fspath(layout.project_home)
    bounds = (int(limits.max_file_bytes), int(limits.max_files))
    harness = final.get("harness", {})
    # The private memories as the transaction parsed them, by the hash of their bytes; a mirror copy
    # is byte-identical to its private one, so the same parse serves it.
    known = _Parsed(post.memories, harness)
    roots = [("harness", layout.harness, "memory", post.harness, True)]
    if layout.mirror is not None and post.mirrored:
        roots.append(("public", layout.mirror, "mirror", post.public, False))
    refresh_ = Refresh()
    for key, root, kind, files, create in roots:
        names = None if changed is None else changed.get(key, ())
        if (names is not None and not names) or source.get(key, {}) == final.get(key, {}):
            continue

        def run(root: str = os.fspath(root), cache: str = cache_file(home, kind), pre: Mapping[str, str] =
                source.get(key, {}), after: Mapping[str, str] = final.get(key, {}), files: Mapping[str, bytes] =
                files, create: bool = create, names: Iterable[str] | None = names) -> None:
            try:
                refresh(root, cache, pre, after, files, *bounds, create=create, known=known, changed=names,
                        ready=refresh_.ready)
            except Exception:  # dropped, or a reader repairs what this misses (see the docstring)
                pass

        refresh_.threads.append(run_beside(run, "memfold-index"))
    return refresh_


class _Parsed(Mapping[str, "tuple[str, Memory]"]):
    """A file -> (hash, memory) view of the post-state's parsed memories, built per name looked up: a
    commit that changes one file of 20,000 looks up one."""

    __slots__ = ("_memories", "_hashes")

    def __init__(self, memories: Mapping[str, Memory], hashes: Mapping[str, str]) -> None:
        self._memories, self._hashes = memories, hashes

    def __getitem__(self, name: str) -> tuple[str, Memory]:
        return self._hashes[name], self._memories[name]

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._memories if name in self._hashes)

    def __len__(self) -> int:
        return sum(1 for _ in self)
