"""Writing a store's search index from its folder: a full scan of the root (``rebuild``), or only the files
whose stat changed (``update``). The rows a committed transaction changed are ``indexcommit``'s.

The reader (``searchcache``) checks every row it serves against its file; this module only decides what
the rows say. A scan records each file's stat as read; rows written from a transaction's post-state
carry its hashes and no stat (``racy``), so a reader hashes such a file once before serving it and
records it settled. Either way nothing here is trusted by a reader without that check.
"""

from __future__ import annotations

import _sqlite3 as sqlite3
import os
import stat
import time

from . import fts
from .evidence import to_row
from .searchdb import FORMAT, INDEX_NAME, PRIORITY, connect, is_racy, sha_hex, stat_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sqlite3 import Connection
    from typing import Any

    from .memory import Memory


def create(conn: Connection) -> None:
    fts.check(conn)
    conn.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, file TEXT NOT NULL UNIQUE, sha TEXT NOT NULL, "
                 "st TEXT, racy INTEGER NOT NULL, name TEXT, description TEXT, type TEXT, visibility TEXT, "
                 "created TEXT, modified TEXT, expires TEXT, body TEXT, masks TEXT, prio INTEGER NOT NULL, "
                 "evidence TEXT, proof TEXT)")
    # Session start without a query takes durable guidance first, then the newest: read in index order.
    conn.execute("CREATE INDEX docs_priority ON docs(prio, modified DESC, file)")
    # Files left out because they do not parse, with what they held: a reader checks each one (see
    # ``searchcache._current``), so a file fixed in place is indexed, and a commit that leaves them as
    # they were still updates the index in place.
    conn.execute("CREATE TABLE skipped(file TEXT PRIMARY KEY, sha TEXT NOT NULL, st TEXT, racy INTEGER NOT NULL)")
    for statement in fts.SCHEMA:
        conn.execute(statement)


def add(conn: Connection, file: str, memory: Memory, sha: str, st: str | None, racy: int) -> None:
    cur = conn.execute(
        "INSERT INTO docs(file, sha, st, racy, name, description, type, visibility, created, modified, "
        "expires, body, prio, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (file, sha, st, racy, memory.name, memory.description, memory.type, memory.visibility,
         memory.created, memory.modified, memory.expires, memory.body, PRIORITY.get(memory.type, len(PRIORITY)),
         to_row(memory.evidence)))
    assert cur.lastrowid is not None
    fts.insert(conn, cur.lastrowid, fts.title_text(file, memory.name), memory.description, memory.body)


def row_count(conn: Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])


def set_meta(conn: Connection, **values: str) -> None:
    conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", values.items())


def skip(conn: Connection, file: str, sha: str, st: str | None, racy: int) -> None:
    """Record a file left out because it does not parse (``sha`` empty: refused by its size alone)."""
    conn.execute("INSERT OR REPLACE INTO skipped(file, sha, st, racy) VALUES (?, ?, ?, ?)", (file, sha, st, racy))


def _scan(root: str, max_file_bytes: int, max_files: int, conn: Connection) -> None:
    """Every memory file of ``root`` into ``conn`` (``_index_file``)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for name in _listed(fd, max_files):
            _index_file(conn, fd, name, max_file_bytes)
    finally:
        os.close(fd)


def _listed(fd: int, max_files: int) -> list[str]:
    """The memory files of the root open at ``fd`` that an index holds: the first ``max_files`` by name."""
    from .memory import is_memory_name

    return sorted(n for n in os.listdir(fd) if n != INDEX_NAME and is_memory_name(n))[:max_files]


def _index_file(conn: Connection, fd: int, name: str, max_file_bytes: int, st: os.stat_result | None = None) -> None:
    """One file's row: stat first (unless given), then read, so a write during the read leaves a stat
    that no longer matches. A file read but not parsed is recorded as skipped."""
    from ..errors import InputRejected
    from ..fsutil import read_bounded
    from .memory import parse_memory

    data = b""
    try:
        if st is None:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return
        read_at = time.time_ns()
        data = read_bounded(name, max_file_bytes, dir_fd=fd)
        memory = parse_memory(data, name)
    except InputRejected:
        assert st is not None
        # Left out, and named, so the block can say so; an oversized file is never read.
        skip(conn, name, sha_hex(data) if data else "", stat_key(st), is_racy(st, read_at))
        return
    except Exception:
        return  # unreadable: left out, as every reader of the store does
    add(conn, name, memory, sha_hex(data), stat_key(st), is_racy(st, read_at))


# An index is brought up to date in place while the files to read again are at most this share of the
# root (a pull of 100 teammates' files into 2,000); past it a new index is written from a scan.
UPDATE_SHARE = 4


def update(root: str, cache: str, max_file_bytes: int, max_files: int) -> bool:
    """The index of ``root`` brought up to date in place after its directory changed: each file whose
    stat equals its row's settled one keeps its row (what every reader trusts of a row already), every
    other file is read and parsed as a scan reads it, rows of files gone are removed. False, with
    nothing changed, when there is no index of this root or more than ``1/UPDATE_SHARE`` of its files
    changed: the caller then writes a new one (``rebuild``)."""
    conn = connect(cache)
    if conn is None:
        return False
    try:
        conn.execute("BEGIN IMMEDIATE")  # no other writer between the rows read here and those written
        if dict(conn.execute("SELECT key, value FROM meta WHERE key = 'root'")).get("root") != root:
            conn.rollback()
            return False
        started = time.time_ns()
        dir_st = os.stat(root, follow_symlinks=False)
        if not stat.S_ISDIR(dir_st.st_mode):
            conn.rollback()
            return False
        settled = {file: st for file, st, racy in conn.execute(
            "SELECT file, st, racy FROM docs UNION ALL SELECT file, st, racy FROM skipped") if not racy and st}
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            stats = {}
            for name in _listed(fd, max_files):
                try:
                    stats[name] = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue  # gone meanwhile: no row, as a scan leaves it
            keep = {n for n, st in stats.items() if settled.get(n) == stat_key(st) and stat.S_ISREG(st.st_mode)}
            redo = [n for n in stats if n not in keep]
            if len(redo) * UPDATE_SHARE > max(len(stats), 1):
                conn.rollback()
                return False
            fts.delete_many(conn, [i for i, file in conn.execute("SELECT id, file FROM docs") if file not in keep])
            gone = [(file,) for (file,) in conn.execute("SELECT file FROM docs UNION ALL SELECT file FROM skipped")
                    if file not in keep]
            conn.executemany("DELETE FROM docs WHERE file = ?", gone)
            conn.executemany("DELETE FROM skipped WHERE file = ?", gone)
            for name in redo:
                _index_file(conn, fd, name, max_file_bytes, stats[name])
        finally:
            os.close(fd)
        # What a scan records: the directory as it was before the listing, and no state digest (the rows
        # are the files as read, which the next writer compares); values derived from the old rows go.
        conn.execute("DELETE FROM meta WHERE key = 'state' OR key LIKE 'memo:%'")
        set_meta(conn, dir=stat_key(dir_st), racy=str(is_racy(dir_st, started)), count=str(row_count(conn)))
        conn.commit()
        return True
    except (OSError, sqlite3.Error):
        if conn.in_transaction:
            conn.rollback()
        return False
    finally:
        conn.close()


def swap_in(cache: str, fill: Any) -> None:
    """A new index at ``cache``: ``fill(conn)`` writes it in a temp file, swapped in by one rename.

    No reader opens the temp file, and a failed or interrupted fill leaves only the temp: the schema
    and the rows go in one transaction with its rollback journal in memory and no sync of its own
    (each schema statement used to commit alone, creating, syncing and deleting a journal file, ~30
    fdatasyncs for a new index). The finished file is made durable once, before the rename.
    """
    os.makedirs(os.path.dirname(cache), mode=0o700, exist_ok=True)
    tmp = f"{cache}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode = MEMORY")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        create(conn)
        fill(conn)
        conn.commit()
    except BaseException:
        conn.close()
        os.unlink(tmp)
        raise
    conn.close()
    fd = os.open(tmp, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, 0o600)
    os.replace(tmp, cache)


def rebuild(root: str, cache: str, max_file_bytes: int, max_files: int) -> None:
    """A new index of ``root`` from its files."""

    def fill(conn: Connection) -> None:
        started = time.time_ns()
        try:
            dir_st = os.stat(root, follow_symlinks=False)
        except FileNotFoundError:
            dir_st = None
        if dir_st is not None and stat.S_ISDIR(dir_st.st_mode):
            _scan(root, max_file_bytes, max_files, conn)
        set_meta(conn, format=FORMAT, root=root, dir=stat_key(dir_st) if dir_st else "absent",
                  racy=str(is_racy(dir_st, started) if dir_st else 0), count=str(row_count(conn)))

    swap_in(cache, fill)
