"""Reading a store root: its memory files, bytes, hashes and anything that does not belong."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from itertools import compress, filterfalse, repeat
from operator import attrgetter, itemgetter, methodcaller, ne, not_
from pathlib import Path

from ..errors import InputRejected, UnsafePath
from ..frozen import FrozenValue
from ..fsutil import TEMP_PREFIX, read_bounded
from .files import Files, Stored, read_settled, size_of, stored_entry
from .memory import INDEX_NAME, is_memory_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .statecache import StateCache


MIRROR_BYTES = 8 << 20


class Limits(FrozenValue):
    """Bounds of one store (immutable). ``mirror_bytes`` bounds the memory files of the mirror in all."""

    __slots__ = ("max_file_bytes", "max_files", "index_lines", "index_bytes", "mirror_bytes")
    max_file_bytes: int
    max_files: int
    index_lines: int
    index_bytes: int
    mirror_bytes: int

    def __init__(self, max_file_bytes: int = 64 * 1024, max_files: int = 4096, index_lines: int = 200,
                 index_bytes: int = 25_600, mirror_bytes: int = MIRROR_BYTES) -> None:
        self._set(max_file_bytes=max_file_bytes, max_files=max_files, index_lines=index_lines,
                  index_bytes=index_bytes, mirror_bytes=mirror_bytes)


def mirror_total(files: Mapping[str, bytes], leave_out: Iterable[str] = ()) -> int:
    """The bytes of the memory files of a mirror (its index, anything else and ``leave_out`` left out):
    what ``limits.mirror_bytes`` bounds. Sizes come from the file records, no file is read."""
    total = files.total_size() if isinstance(files, Files) else sum(map(len, files.values()))
    others = {*filterfalse(methodcaller("endswith", ".md"), files), INDEX_NAME, *leave_out}
    return total - sum(size_of(files, name) for name in others if name in files)


def refuse_mirror_over(files: Mapping[str, bytes], limits: Limits, leave_out: Iterable[str] = ()) -> None:
    """Raise when the memory files a transaction keeps in the mirror would be more than
    ``limits.mirror_bytes`` in all. ``leave_out``: files it leaves as they are (a teammate's held
    file): a user's own write never fails because of what a teammate wrote."""
    if len(files) * limits.max_file_bytes <= limits.mirror_bytes:
        return  # each memory file is within its own bound (checked before): the total cannot be over
    total = mirror_total(files, leave_out)
    if total > limits.mirror_bytes:
        raise InputRejected(f"the mirror would hold {total} bytes of safe memories, over limits.mirror_bytes "
                            f"({limits.mirror_bytes}); nothing was written", code="bounds.mirror-bytes",
                            hint="make some memories private, consolidate, or raise limits.mirror_bytes in "
                            "config.yaml")


class RootState:
    """The files of one root as read now. ``files`` holds memory files and the index; ``held`` the
    entries of a root read with ``hold`` that no write may touch, each with its problem (code, message)."""

    __slots__ = ("path", "files", "hashes", "ignored", "temps", "identities", "held")
    path: Path
    files: Files
    hashes: dict[str, str]
    ignored: list[str]
    temps: list[str]
    # (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns) of each file as it was read
    identities: dict[str, tuple[int, int, int, int, int]]

    def __init__(self, path: Path, files: Mapping[str, bytes] | None = None, hashes: dict[str, str] | None = None,
                 ignored: list[str] | None = None, temps: list[str] | None = None) -> None:
        self.path = path
        self.files = files.copy() if isinstance(files, Files) else Files(files)
        self.hashes = {} if hashes is None else hashes
        self.ignored = [] if ignored is None else ignored
        self.temps = [] if temps is None else temps
        self.identities = {}
        self.held: dict[str, tuple[str, str]] = {}

    def __repr__(self) -> str:
        return (f"RootState(path={self.path!r}, files={self.files!r}, hashes={self.hashes!r}, "
                f"ignored={self.ignored!r}, temps={self.temps!r})")

    def memories(self) -> Files:
        return self.files.subset(n for n in self.files if n != INDEX_NAME)


def read_root(root: Path, limits: Limits, *, with_bytes: bool = True, cache: StateCache | None = None,
              hashed: bool = True, hold: bool = False) -> RootState:
    """Scan one root. Symlinks and special files with a memory's name are refused; with ``hold`` (the
    mirror, which git fills), they are held instead, as are names that clash by case, files over the size
    bound and those past the count bound: recorded in ``held``, neither read nor hashed.

    ``hashed=False`` (bytes only, no cache) leaves ``hashes`` empty and keeps no copy of what it read:
    the built-in planner reads each file once and never names a hash of what it read.

    With ``cache``, a file whose identity matches its entry is not hashed again, nor read at all when
    only hashes are asked for; files read are entered, files gone are forgotten. Every file's identity
    as stat-ed here is kept in ``identities``, so a later check of the same root needs no cache.
    """
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=_NAME)
    except FileNotFoundError:
        return RootState(path=root)
    stats = _lstat_all(root, entries)
    if cache is not None:
        state = _vouched(root, entries, stats, limits, with_bytes, cache)
        if state is not None:
            return state
    return _scanned(root, entries, stats, limits, with_bytes, cache, hashed=hashed, hold=hold)


def _lstat_all(root: Path, entries: list[os.DirEntry[str]]) -> list[os.stat_result]:
    """Each entry's lstat, by its name in the root opened once: the kernel then walks one path component
    per file, not the whole path (2,000 files: 3.4 ms against 4.8 ms through ``DirEntry.stat`` here)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return [entry.stat(follow_symlinks=False) for entry in entries]
    try:
        return list(map(partial(os.stat, dir_fd=fd, follow_symlinks=False), map(_NAME, entries)))
    finally:
        os.close(fd)


_NAME = attrgetter("name")
_PATH = attrgetter("path")
_IDENTITY: Callable[[os.stat_result], tuple[int, int, int, int, int]] = attrgetter(
    "st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")
_SIZE = itemgetter(2)


def _vouched(root: Path, entries: list[os.DirEntry[str]], stats: list[os.stat_result], limits: Limits,
             with_bytes: bool, cache: StateCache) -> RootState | None:
    """The root with every file the cache vouches for taken from it, and only the others examined one by
    one; None where the whole scan must decide (an entered file past today's bounds, a case collision).

    The work per vouched file is done in C (the entered identities compared with the current ones by
    ``operator.ne`` mapped over both, the files split by ``itertools.compress``): at 2,000 memories a
    Python loop over 3,300 files cost more than stat-ing them.
    An entered identity is a settled regular file's (only those are entered; an inode's type never
    changes, and a file replaced keeps neither its inode nor its ctime), whose name was a store file's.
    """
    key = str(root)
    idents, digests = cache.entries(key)
    if not idents:
        return None
    names = list(map(_NAME, entries))
    now = list(map(_IDENTITY, stats))
    current = dict(zip(names, now, strict=True))
    # One flag per file, compared in C without building a pair per file (a fresh process pays for
    # every object it allocates).
    differs = list(map(ne, map(idents.get, names), now))
    fresh = set(compress(names, differs))
    kept = list(compress(names, map(not_, differs)))
    kept_idents = list(compress(now, map(not_, differs)))
    index_limit, memory_limit = _index_limit(limits), limits.max_file_bytes
    sizes = list(map(_SIZE, kept_idents))
    index_at = kept.index(INDEX_NAME) if INDEX_NAME in current and INDEX_NAME not in fresh else None
    if index_at is not None:
        if sizes.pop(index_at) > index_limit:
            return None
    if sizes and max(sizes) > memory_limit:
        return None  # bounds lowered since: the whole scan refuses what is over them
    state = RootState(path=root)
    hashes = dict(zip(kept, map(digests.__getitem__, kept), strict=True))
    if with_bytes:
        paths = map(_PATH, compress(entries, map(not_, differs)))
        vouched: dict[str, bytes | Stored] = dict(zip(kept, map(stored_entry, zip(  # repeat(): no strict
            paths, map(_SIZE, kept_idents), hashes.values(), repeat(memory_limit), strict=False)), strict=True))
        if index_at is not None:
            index = vouched[INDEX_NAME]
            assert isinstance(index, Stored)
            vouched[INDEX_NAME] = stored_entry((index[0], index[1], index[2], index_limit))
        state.files = Files(vouched)
    if fresh:
        # The files the cache does not vouch for (new, changed, within the racy window, not store files).
        others = _scanned(root, list(compress(entries, differs)), list(compress(stats, differs)), limits,
                          with_bytes, cache, forget=False)
        if others.held:
            return None  # the whole scan holds them, in the order it reads
        state.temps, state.ignored = others.temps, others.ignored
        # Merged in the root's (sorted) order, in C, without the names neither part holds (temps, strays).
        hashes.update(others.hashes)
        hashes = _in_order(names, hashes)
        if with_bytes:
            state.files = Files(_in_order(names, {**state.files._entries, **others.files._entries}))
    state.hashes = hashes
    state.identities = current
    if len(set(map(str.lower, hashes))) != len(hashes) or len(hashes) - (INDEX_NAME in hashes) > limits.max_files:
        return None  # the whole scan names the problem
    cache.keep_only(key, hashes)
    return state


def _in_order(names: list[str], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with its keys in the order of ``names`` (which holds every key)."""
    ordered = dict(zip(names, map(values.get, names), strict=True))
    for name in ordered.keys() - values.keys():
        del ordered[name]
    return ordered


def _index_limit(limits: Limits) -> int:
    return max(limits.index_bytes * 4, 1 << 20)


def _scanned(root: Path, entries: list[os.DirEntry[str]], stats: list[os.stat_result], limits: Limits,
             with_bytes: bool, cache: StateCache | None, *, forget: bool = True, hashed: bool = True,
             hold: bool = False) -> RootState:
    """Each entry examined: refused (or with ``hold``, held), ignored, vouched for by the cache one by one,
    or read and hashed."""
    state = RootState(path=root)
    key = str(root)
    entered, digests = cache.entries(key) if cache is not None else ({}, {})
    seen_lower: dict[str, str] = {}
    hashes, identities, files = state.hashes, state.identities, state.files
    count = 0
    memory_limit = limits.max_file_bytes
    index_limit = _index_limit(limits)
    for entry, st in zip(entries, stats, strict=True):
        name = entry.name
        if name.startswith(TEMP_PREFIX):
            state.temps.append(name)
            continue
        mode = st.st_mode
        hit = entered.get(name)
        # A name the cache holds was a memory's name when it was entered (names are not data).
        wanted = hit is not None or name == INDEX_NAME or is_memory_name(name)
        if stat.S_ISLNK(mode) and (wanted or name.lower().endswith(".md")):
            if hold:
                state.held[name] = ("held.link", f"{name} is a symbolic link")
                continue
            raise UnsafePath(
                f"{root / name} is a symlink; memfold refuses symlinks in its stores",
                code="path.symlink",
                hint="replace the link with a regular file or remove it",
            )
        if not wanted:
            state.ignored.append(name)
            continue
        if not stat.S_ISREG(mode):
            if hold:
                state.held[name] = ("held.link", f"{name} is not a regular file")
                continue
            raise UnsafePath(f"{root / name} is not a regular file", code="path.not-regular",
                             hint="remove it from the store directory")
        lower = name.lower()
        if lower in seen_lower:
            if hold:
                state.held[name] = ("held.name", f"{name} and {seen_lower[lower]} differ only by case")
                continue
            raise InputRejected(
                f"{root}: {seen_lower[lower]} and {name} differ only by case",
                code="store.case-collision",
                hint="rename or merge one of them: names are unique case-insensitively",
            )
        seen_lower[lower] = name
        limit = index_limit
        if name != INDEX_NAME:
            limit = memory_limit
            if hold and st.st_size > limit:
                state.held[name] = ("held.size", f"{name} is {st.st_size} bytes, over the bound of {limit}")
                continue
            count += 1
            if count > limits.max_files:
                if hold:
                    state.held[name] = ("held.size", f"{name} is past the bound of {limits.max_files} memories")
                    continue
                raise InputRejected(
                    f"{root} holds more than {limits.max_files} memories",
                    code="bounds.file-count",
                    hint="consolidate, or raise limits.max_files in the config",
                )
        ident = _IDENTITY(st)
        identities[name] = ident
        size = ident[2]
        if hit is not None and size <= limit and hit == ident:
            known = digests[name]
            hashes[name] = known
            if with_bytes:
                files.stored(name, stored_entry((entry.path, size, known, limit)))
            continue
        if not hashed:
            files.stored(name, read_bounded(entry.path, limit))
            continue
        started = time.time_ns()
        # Bytes read are hashed again: the hash then describes exactly the bytes handed on.
        data, digest = read_settled(entry.path, st, limit)
        hashes[name] = digest
        if cache is not None:
            cache.seen.add(digest)
            if len(data) == size:
                cache.enter(key, name, ident, digest, started)
        if with_bytes:
            files.stored(name, data)
    if cache is not None and forget:
        cache.keep_only(key, hashes)
    return state


def landed_file(path: str, limits: Limits, index: bool) -> str | None:
    """The sha256 of a regular file just written, or None when it is missing or not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    limit = _index_limit(limits) if index else limits.max_file_bytes
    if st.st_size > limit:
        return None
    return read_settled(path, st, limit)[1]


def find_name(names: Iterable[str], name: str) -> str | None:
    """The existing name equal to ``name`` case-insensitively, if any."""
    lower = name.lower()
    for existing in names:
        if existing.lower() == lower:
            return existing
    return None
