"""The search index of one store root, kept beside it in the same private home and never served stale.

``<store home>/index/<kind>.sqlite`` holds each memory's fields, its sha256 and the stat it had when
read, plus the FTS5 indexes of ``fts``. The transaction that changes a root refreshes its index
after the commit; any other change (a hand edit, a forget by ``rm``, a crash between commit and
refresh) is caught when the index is read, the way git's index catches it:

- the root directory's stat must equal the recorded one: creating, deleting or renaming a file in
  it (every memfold write is a rename) changes the directory;
- every row is checked before its text is served: its file's stat must equal the recorded one, and a
  file that was still "racy" (changed within two seconds of being read, when a second write could
  keep its stat) is re-hashed instead.

A directory that changed has the rows of the files whose stat no longer matches read again (a pull
brings a few files into many; past a share of the root a new index is written instead); a row that
fails its check rebuilds the index from the files and the caller asks again, so reading costs
O(what is served), whatever the size of the store. Writing the index (a scan, or the rows a
transaction changed) is ``indexbuild``'s: a prompt served from a current index never imports it.
"""

from __future__ import annotations

# The C module itself: the ``sqlite3`` package imports datetime for its default adapters, which this
# per-prompt path never uses.
import _sqlite3 as sqlite3
import os
import stat
import time

from . import fts
from .searchdb import INDEX_NAME, cache_file, connect, identity_key, is_racy, sha_hex, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from sqlite3 import Connection
    from typing import Any

    from .memory import Memory

COLUMNS = ("id", "file", "sha", "st", "racy", "name", "description", "type", "visibility", "created",
           "modified", "expires", "body", "masks", "evidence", "proof")
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM docs"


class Stale(Exception):
    """The index no longer describes the files; it has been rebuilt, ask again."""


class Row:
    """One memory as the index holds it."""

    __slots__ = COLUMNS

    def __init__(self, values: Sequence[Any]) -> None:
        # One unpacking (in COLUMNS' order) instead of a setattr per column: a prompt builds 32 rows.
        (self.id, self.file, self.sha, self.st, self.racy, self.name, self.description, self.type, self.visibility,
         self.created, self.modified, self.expires, self.body, self.masks, self.evidence, self.proof) = values

    id: int
    file: str
    sha: str
    st: str
    racy: int
    name: str
    description: str
    type: str
    visibility: str
    created: str | None
    modified: str | None
    expires: str | None
    body: str
    masks: str | None
    evidence: str | None  # the memory's citations (``evidence.to_row``)
    proof: str | None  # the last check of them, with the cited files' identities (``evidence.Marker``)


class Index:
    """An open, checked index of one root; ``verify`` is False only for an in-memory index of given memories."""

    def __init__(self, conn: Connection, root: str, verify: bool, cache: str = "",
                 bounds: tuple[int, int] = (0, 0)) -> None:
        self.conn = conn
        self.root = root
        self.verify = verify
        self.cache = cache
        self.bounds = bounds
        self.pending: list[tuple[str, tuple[object, ...]]] = []

    def stale(self) -> None:
        """A served row no longer matches its file: replace the index before anyone asks again."""
        from .indexbuild import rebuild

        rebuild(self.root, self.cache, *self.bounds)

    @classmethod
    def of_memories(cls, memories: Mapping[str, Memory]) -> Index:
        """An index built in memory, for memories that are not (or not yet) files of a root."""
        from .indexbuild import add, create

        conn = sqlite3.connect(":memory:")
        create(conn)
        for name in sorted(memories):
            add(conn, name, memories[name], "", None, 0)
        return cls(conn, "", False)

    @classmethod
    def open(cls, root: str, cache: str, max_file_bytes: int, max_files: int) -> Index:
        """The index of ``root``, brought up to date first when it is missing or the directory changed."""
        for _attempt in range(2):
            conn = connect(cache)
            if conn is not None:
                if _current(conn, root):
                    return cls(conn, root, True, cache, (max_file_bytes, max_files))
                conn.close()
            from .indexbuild import rebuild, update  # only a reader that finds the index stale writes it

            # A few files changed (a pull, a hand edit): only theirs are read again; else a new index.
            if not update(root, cache, max_file_bytes, max_files):
                rebuild(root, cache, max_file_bytes, max_files)
        conn = connect(cache)
        if conn is None:
            raise Stale(f"the search index of {root} cannot be kept")
        return cls(conn, root, True, cache, (max_file_bytes, max_files))

    def flush(self) -> None:
        """Write what this reader settled, in one transaction (skipped when another holds the index)."""
        try:
            if self.pending:
                with self.conn:
                    for sql, params in self.pending:
                        self.conn.execute(sql, params)
        except sqlite3.Error:
            pass
        finally:
            self.pending.clear()

    def close(self) -> None:
        self.flush()
        self.conn.close()

    def count(self) -> int:
        """How many memories the index holds: recorded by the writer, so a prompt does not count them."""
        found = self.conn.execute("SELECT value FROM meta WHERE key = 'count'").fetchone()
        return int(found[0]) if found else int(self.conn.execute("SELECT count(*) FROM docs").fetchone()[0])

    def generation(self) -> str:
        """What changes whenever the indexed files may have: the directory's recorded stat."""
        found = self.conn.execute("SELECT value FROM meta WHERE key = 'dir'").fetchone()
        return str(found[0]) if found else ""

    def settled_generation(self) -> str | None:
        """The generation, when the directory had settled (outside the racy window) as it was recorded."""
        found = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('dir', 'racy')"))
        return str(found["dir"]) if found.get("racy") == "0" and "dir" in found else None

    def unparsable(self) -> list[str]:
        """The files of the root left out because they do not parse (each checked when the index was opened)."""
        return [str(r[0]) for r in self.conn.execute("SELECT file FROM skipped ORDER BY file")]

    def skipped(self) -> list[tuple[str, str | None, int]]:
        """(path, recorded stat, racy) of each file left out: what a kept block that names them rests on."""
        return [(os.path.join(self.root, str(f)), st, int(racy))
                for f, st, racy in self.conn.execute("SELECT file, st, racy FROM skipped ORDER BY file")]

    def memo(self, key: str) -> str | None:
        found = self.conn.execute("SELECT value FROM meta WHERE key = ?", (f"memo:{key}",)).fetchone()
        return str(found[0]) if found else None

    def remember(self, key: str, value: str) -> None:
        """Keep one value derived from this index (and others), in place of any kept before."""
        self.settle("DELETE FROM meta WHERE key LIKE 'memo:%'", ())
        self.settle("INSERT INTO meta(key, value) VALUES (?, ?)", (f"memo:{key}", value))

    def has(self, file: str) -> bool:
        return self.conn.execute("SELECT 1 FROM docs WHERE file = ?", (file,)).fetchone() is not None

    def rows(self, order: str = "file", where: str = "") -> Iterator[Row]:
        """Every row, checked as it is taken, in ``order``."""
        for values in self.conn.execute(f"{_SELECT} {where} ORDER BY {order}"):
            yield self.checked(Row(values))

    def ranked(self, query: str, limit: int, *, check: bool = True) -> list[tuple[Row, float]]:
        """The best ``limit`` rows for ``query``; with ``check`` False the caller checks each row it serves
        (``checked``) and no other: ranking 32 hits to send 8 bodies stats 8 files, not 32."""
        hits = fts.rank(self.conn, query, limit)
        if not hits:
            return []
        marks = ", ".join("?" * len(hits))
        found = {values[0]: Row(values) for values in
                 self.conn.execute(f"{_SELECT} WHERE id IN ({marks})", [rowid for rowid, _ in hits])}
        out = [(self.checked(found[rowid]) if check else found[rowid], score) for rowid, score in hits]
        # Equal scores (equal text): the newest first, then by file name.
        out.sort(key=lambda h: h[0].file)
        out.sort(key=lambda h: h[0].modified or h[0].created or "", reverse=True)
        out.sort(key=lambda h: -h[1])
        return out

    def checked(self, row: Row) -> Row:
        """The row, if its file still holds exactly what was indexed; else rebuild and raise Stale."""
        if not self.verify:
            return row
        path = os.path.join(self.root, row.file)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and not row.racy and row.st == stat_key(st):
            return row
        if st is not None and stat.S_ISREG(st.st_mode) and self._same_bytes(path, row, st):
            return row
        self.stale()
        raise Stale(row.file)

    def _same_bytes(self, path: str, row: Row, st: os.stat_result) -> bool:
        read_at = time.time_ns()
        try:
            with open(path, "rb") as fh:
                data = fh.read(st.st_size + 1)
        except OSError:
            return False
        if sha_hex(data) != row.sha:
            return False
        if not is_racy(st, read_at):
            self.settle("UPDATE docs SET st = ?, racy = 0 WHERE id = ? AND sha = ?",
                         (stat_key(st), row.id, row.sha))
            row.st, row.racy = stat_key(st), 0  # what the index now says of it, for whoever keeps it
        return True

    def settle(self, sql: str, params: tuple[object, ...]) -> None:
        """Record a check that passed, so the next reader need not repeat it: written on ``close``."""
        self.pending.append((sql, params))


def _current(conn: Connection, root: str) -> bool:
    """Whether the index still describes the directory: same root, same directory stat, and, while the
    directory was racy when recorded, the same file names."""
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    if meta.get("root") != root:
        return False
    now = time.time_ns()
    try:
        dir_st = os.stat(root, follow_symlinks=False)
    except FileNotFoundError:
        return meta.get("dir") == "absent"
    if not stat.S_ISDIR(dir_st.st_mode) or meta.get("dir") != stat_key(dir_st):
        return False
    if not _skipped_current(conn, root):
        return False
    if meta.get("racy") != "1":
        return True
    from .memory import is_memory_name

    names = {n for n in os.listdir(root) if n != INDEX_NAME and is_memory_name(n)}
    if names != {r[0] for r in conn.execute("SELECT file FROM docs UNION ALL SELECT file FROM skipped")}:
        return False
    if not is_racy(dir_st, now):
        try:
            with conn:
                conn.execute("UPDATE meta SET value = '0' WHERE key = 'racy' AND "
                             "(SELECT value FROM meta WHERE key = 'dir') = ?", (stat_key(dir_st),))
        except sqlite3.Error:
            pass
    return True


def _skipped_current(conn: Connection, root: str) -> bool:
    """Whether every file the index left out as unparsable is still as it was: a directory's stat does
    not change when a file in it is rewritten in place, so a fixed file would otherwise stay unserved.
    Each is checked like a row: its stat, and its hash while racy (a file refused for its size alone
    was never read: a stat that still matches keeps that size). There are as many as broken files."""
    settled = []
    for file, sha, recorded, racy in conn.execute("SELECT file, sha, st, racy FROM skipped").fetchall():
        path = os.path.join(root, file)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        if recorded is not None and stat_key(st) != recorded:
            return False
        if recorded is not None and not racy:
            continue
        if not sha:
            return False  # unknown stat and unknown bytes: scan again
        from ..fsutil import read_bounded

        read_at = time.time_ns()
        try:
            if sha_hex(read_bounded(path)) != sha:
                return False
        except Exception:
            return False
        settled.append((stat_key(st), is_racy(st, read_at), file))
    if settled:
        try:
            with conn:
                conn.executemany("UPDATE skipped SET st = ?, racy = ? WHERE file = ?", settled)
        except sqlite3.Error:
            pass
    return True


# A long-lived process (the MCP server) keeps each index open between calls: SQLite's page cache then
# holds its hot pages. Each call still checks it against the files, and against the index file itself
# (a rebuild replaces it by a rename).
_OPEN: dict[str, tuple[tuple[int, int], Index]] = {}


def _identity(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


def _kept(root: str, cache: str, max_bytes: int, max_files: int) -> Index:
    held = _OPEN.pop(cache, None)
    if held is not None:
        identity, index = held
        if identity == _identity(cache) and index.root == root and _current(index.conn, root):
            return index
        index.close()
    return Index.open(root, cache, max_bytes, max_files)


def _recorded_from(conn: Connection, identities: Mapping[str, tuple[int, int, int, int, int]]) -> bool:
    """Whether the index holds one settled row for each of these files, recorded from it as stat-ed."""
    rows = conn.execute("SELECT file, st, racy FROM docs UNION ALL SELECT file, st, racy FROM skipped").fetchall()
    if len(rows) != len(identities):
        return False
    for file, recorded, racy in rows:
        ident = identities.get(file)
        if racy or ident is None or recorded != identity_key(ident):
            return False
    return True


def search_hits(root: str | os.PathLike[str], store_home: str | os.PathLike[str], query: str, limit: int,
                limits: Any, kind: str = "memory",
                identities: Mapping[str, tuple[int, int, int, int, int]] | None = None) -> list[tuple[Row, float]]:
    """The best ``limit`` memories of one root for ``query`` (scores rounded), from its checked index
    (``kind``: the private store's, or the mirror's).

    ``identities``: the root's memory files as a caller just stat-ed them (name -> st_dev, st_ino, st_size,
    st_mtime_ns, st_ctime_ns). An index whose rows were not all recorded from exactly those files is
    brought up to date first: a file rewritten in place leaves the directory's stat as it was, and a
    word it gained would otherwise find nothing until a row of it is served."""
    root, cache = os.fspath(root), cache_file(os.fspath(store_home), kind)
    max_bytes, max_files = int(limits.max_file_bytes), int(limits.max_files)
    for _attempt in range(3):
        index = _kept(root, cache, max_bytes, max_files)
        if identities is not None and not _recorded_from(index.conn, identities):
            index.close()
            from .indexbuild import rebuild, update

            if not update(root, cache, max_bytes, max_files):
                rebuild(root, cache, max_bytes, max_files)
            identities = None  # every file was compared with its row now; served rows are checked as ever
            continue
        try:
            hits = [(row, float(f"{score:.4g}")) for row, score in index.ranked(query, max(limit, 0))]
        except Stale:
            index.close()
            continue  # a file changed after the index was read; it has been rebuilt
        index.flush()
        _OPEN[cache] = (_identity(cache), index)
        return hits
    raise Stale(f"the files of {root} keep changing")
