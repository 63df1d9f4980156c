"""Values derived from files, cached under the files' identities so unchanged inputs are not parsed again.

A file's identity is (device, inode, size, mtime, ctime): any write changes it. A file written within
the last two seconds is never cached, because a second write within one timestamp tick could leave
the identity unchanged (git's "racy clean" case). The caches are JSON under ``<home>/cache/``; a
cache that is missing, unreadable or stale is simply recomputed.
"""

from __future__ import annotations

import os
import time

from . import jsontext as json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SETTLED_NS = 2_000_000_000
CACHE_DIR = "cache"

Identity = list[int]


def identity(path: str | os.PathLike[str]) -> Identity | None:
    """The file's identity, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return identity_of(st)


def identity_of(st: os.stat_result) -> Identity:
    """The identity of a file from a stat the caller already has."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def cache_path(home: str | os.PathLike[str], name: str) -> str:
    return os.path.join(home, CACHE_DIR, name)


def load(cache: str, key: Any) -> Any | None:
    """The cached value stored under exactly ``key``, else None."""
    try:
        with open(cache, "rb") as fh:
            cached = json.loads_bounded(fh.read())
    except (OSError, ValueError):
        return None
    if isinstance(cached, dict) and cached.get("key") == key:
        return cached.get("value")
    return None


def save(cache: str, key: Any, value: Any, sources: list[Identity | None]) -> None:
    """Store ``value`` unless a source is too fresh to trust or JSON cannot carry the value exactly.

    The cache directory is created inside an existing home only; every failure just means no cache.
    """
    now = time.time_ns()
    if any(src is not None and now - max(src[3], src[4]) <= SETTLED_NS for src in sources):
        return
    from ..fsutil import atomic_write

    folder = os.path.dirname(cache)
    if os.path.islink(folder) or os.path.islink(os.path.dirname(folder)):
        return  # never write through a symlinked home or cache directory
    try:
        payload = json.dumps({"key": key, "value": value}, sort_keys=True, ensure_ascii=False)
        if json.loads(payload)["value"] != value:
            return  # tuples, or values JSON reads back differently: recomputed next time
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        atomic_write(cache, payload.encode("utf-8"), durable=False)
    except (OSError, ValueError, TypeError):
        pass
