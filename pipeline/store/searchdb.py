"""The search index's database file: where it lives, its format, opening it, and the stat keys of its rows.

Shared by the reader (``searchcache``) and the writer (``indexbuild``); it loads nothing a prompt served
from a current index would not load anyway.
"""

from __future__ import annotations

# The C module itself: the ``sqlite3`` package imports datetime for its default adapters, which this
# per-prompt path never uses.
import _sqlite3 as sqlite3
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from sqlite3 import Connection

# ``store.memory`` is imported where files are parsed: its parser needs ``re`` and ``json``, which a
# prompt served from a current index never loads.
INDEX_NAME = "MEMORY.md"

FORMAT = "memfold-search-7"
PRIORITY = {"feedback": 0, "user": 1, "project": 2, "reference": 3}
INDEX_DIR = "index"
SETTLED_NS = 2_000_000_000


def cache_file(store_home: str, kind: str) -> str:
    return os.path.join(store_home, INDEX_DIR, f"{kind}.sqlite")


def stat_key(st: os.stat_result) -> str:
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def identity_key(identity: tuple[int, int, int, int, int]) -> str:
    """``stat_key`` of a file known by its identity as a root's read keeps it (st_dev, st_ino, st_size,
    st_mtime_ns, st_ctime_ns), without a stat of its own."""
    _dev, ino, size, mtime_ns, ctime_ns = identity
    return f"{ino}:{size}:{mtime_ns}:{ctime_ns}"


def is_racy(st: os.stat_result, read_at: int) -> int:
    return int(read_at - max(st.st_mtime_ns, st.st_ctime_ns) <= SETTLED_NS)


def sha_hex(data: bytes) -> str:
    # fsutil's helper: CPython's own sha256 for a memory file, without loading OpenSSL (hashlib) first.
    from ..fsutil import sha256_bytes

    return sha256_bytes(data)


def connect(cache: str) -> Connection | None:
    """The index at ``cache`` if it exists in this format; None otherwise."""
    try:
        # A server answers calls from worker threads; an index in use is out of the pool (see _kept).
        conn = sqlite3.connect(f"file:{cache}?mode=rw", uri=True, timeout=0.2, check_same_thread=False)
    except sqlite3.Error:
        return None
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.Error:
        found = None
    if found is None or found[0] != FORMAT:
        conn.close()
        return None
    # A derived cache: a commit need not wait for the disk. Power loss may lose the last settle or
    # refresh, which the next reader detects from the files, as for any other stale index.
    conn.execute("PRAGMA synchronous = OFF")
    # The rollback journal stays between transactions, its header zeroed, instead of being created and
    # deleted by each: on ext4 without a journal every inode freed is one that later creates scan past.
    conn.execute("PRAGMA journal_mode = PERSIST")
    return conn
