"""Reading a store root: its memory files, bytes, hashes and anything that does not belong."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import InputRejected, UnsafePath
from ..frozen import FrozenValue
from ..fsutil import TEMP_PREFIX, read_bounded, sha256_bytes
from .memory import INDEX_NAME, Memory, is_memory_name, parse_memory


class Limits(FrozenValue):
    """Bounds of one store (immutable)."""

    __slots__ = ("max_file_bytes", "max_files", "index_lines", "index_bytes")
    max_file_bytes: int
    max_files: int
    index_lines: int
    index_bytes: int

    def __init__(self, max_file_bytes: int = 64 * 1024, max_files: int = 4096, index_lines: int = 200,
                 index_bytes: int = 25_600) -> None:
        self._set(max_file_bytes=max_file_bytes, max_files=max_files, index_lines=index_lines,
                  index_bytes=index_bytes)


class RootState:
    """The files of one root as read now. ``files`` holds memory files and the index."""

    __slots__ = ("path", "files", "hashes", "ignored", "temps")
    path: Path
    files: dict[str, bytes]
    hashes: dict[str, str]
    ignored: list[str]
    temps: list[str]

    def __init__(self, path: Path, files: dict[str, bytes] | None = None, hashes: dict[str, str] | None = None,
                 ignored: list[str] | None = None, temps: list[str] | None = None) -> None:
        self.path = path
        self.files = {} if files is None else files
        self.hashes = {} if hashes is None else hashes
        self.ignored = [] if ignored is None else ignored
        self.temps = [] if temps is None else temps

    def __repr__(self) -> str:
        return (f"RootState(path={self.path!r}, files={self.files!r}, hashes={self.hashes!r}, "
                f"ignored={self.ignored!r}, temps={self.temps!r})")

    def memories(self) -> dict[str, bytes]:
        return {n: b for n, b in self.files.items() if n != INDEX_NAME}


def read_root(root: Path, limits: Limits, *, with_bytes: bool = True) -> RootState:
    """Scan one root. Symlinks and special files with a memory's name are refused."""
    state = RootState(path=root)
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except FileNotFoundError:
        return state
    seen_lower: dict[str, str] = {}
    count = 0
    for entry in entries:
        name = entry.name
        if name.startswith(TEMP_PREFIX):
            state.temps.append(name)
            continue
        st = entry.stat(follow_symlinks=False)
        wanted = name == INDEX_NAME or is_memory_name(name)
        if stat.S_ISLNK(st.st_mode) and (wanted or name.lower().endswith(".md")):
            raise UnsafePath(
                f"{root / name} is a symlink; memfold refuses symlinks in its stores",
                code="path.symlink",
                hint="replace the link with a regular file or remove it",
            )
        if not wanted:
            state.ignored.append(name)
            continue
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{root / name} is not a regular file", code="path.not-regular",
                             hint="remove it from the store directory")
        lower = name.lower()
        if lower in seen_lower:
            raise InputRejected(
                f"{root}: {seen_lower[lower]} and {name} differ only by case",
                code="store.case-collision",
                hint="rename or merge one of them: names are unique case-insensitively",
            )
        seen_lower[lower] = name
        if name != INDEX_NAME:
            count += 1
            if count > limits.max_files:
                raise InputRejected(
                    f"{root} holds more than {limits.max_files} memories",
                    code="bounds.file-count",
                    hint="consolidate, or raise limits.max_files in the config",
                )
        limit = limits.max_file_bytes if name != INDEX_NAME else max(limits.index_bytes * 4, 1 << 20)
        data, digest = _read(entry.path, st, limit)
        state.hashes[name] = digest
        if with_bytes:
            state.files[name] = data
    return state


# A file changed this recently may change again within one timestamp tick unseen (git's "racy" case):
# such a file is read again every time until it has settled.
_SETTLED_NS = 2_000_000_000
_KNOWN_MAX_BYTES = 64 << 20
# path -> ((st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns), bytes, sha256)
_known: dict[str, tuple[tuple[int, int, int, int, int], bytes, str]] = {}
_known_bytes = [0]


def _read(path: str, st: os.stat_result, limit: int) -> tuple[bytes, str]:
    """A file's bytes and hash, re-read only when its identity changed since a settled earlier read.

    Any write to a file, in place or by rename, changes its (device, inode, size, mtime, ctime), and a
    long-lived process (the MCP server) re-reads both roots several times per transaction.
    """
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _known.get(path)
    if hit is not None and hit[0] == key and st.st_size <= limit:
        return hit[1], hit[2]
    started = time.time_ns()
    data = read_bounded(Path(path), limit)
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


class Broken(FrozenValue):
    """A file in a store root that does not parse as a memory: where it is, what is wrong, how to fix it."""

    __slots__ = ("file", "path", "code", "problem", "fix")
    file: str
    path: str
    code: str
    problem: str
    fix: str

    def __init__(self, file: str, path: str, code: str, problem: str, fix: str) -> None:
        self._set(file=file, path=path, code=code, problem=problem, fix=fix)

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "path": self.path, "code": self.code, "problem": self.problem, "fix": self.fix}


def broken_file(root: Path, name: str, exc: InputRejected) -> Broken:
    """What a refused file gets as a report: the parser's message without the file name it repeats."""
    problem = exc.message.removeprefix(f"{name}: ")
    fix = (f"{exc.hint}; " if exc.hint else "") + (
        f"`memfold edit {name}` opens it, `memfold forget {name}` removes it")
    return Broken(name, str(root / name), exc.code, problem, fix)


def parse_root(state: RootState) -> tuple[dict[str, Memory], dict[str, Broken]]:
    """The memories of a root that parse, and every file that does not (one broken file stops nothing)."""
    memories: dict[str, Memory] = {}
    broken: dict[str, Broken] = {}
    for name, data in state.memories().items():
        try:
            memories[name] = parse_memory(data, name)
        except InputRejected as exc:
            broken[name] = broken_file(state.path, name, exc)
    return memories, broken


def parse_all(state: RootState) -> dict[str, Memory]:
    """The memories of a root that parse; ``parse_root`` also says which files do not."""
    return parse_root(state)[0]


def find_name(names: Iterable[str], name: str) -> str | None:
    """The existing name equal to ``name`` case-insensitively, if any."""
    lower = name.lower()
    for existing in names:
        if existing.lower() == lower:
            return existing
    return None
