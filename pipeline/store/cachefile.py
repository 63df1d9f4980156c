"""The state cache's files on disk: a marshal payload behind a magic and a CRC-32, and small JSON files.

Both are written by rename and never fsynced (a crash may lose a cache, never corrupt a store), never
through a symlinked directory, and read back as None when missing, foreign or torn; nothing read from
them is ever run, and their shapes are the loader's to check.
"""

from __future__ import annotations

import marshal
import os

from .jsontext import loads_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# A file's identity: (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns).
Identity = tuple[int, int, int, int, int]
# A memory's frontmatter as parsed from the bytes with that hash: (sha256, name, description, type,
# visibility, created, modified, expires, offset of the body in the file).
Fields = tuple[str, str, str, str, str, "str | None", "str | None", "str | None", int]

MAGIC = b"memfold state\n"


def write_payload(path: str, value: tuple[Any, ...]) -> None:
    payload = marshal.dumps(value)
    write_file(path, MAGIC + crc(payload) + payload)


def read_payload(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    head = len(MAGIC)
    if raw[:head] != MAGIC or raw[head:head + 4] != crc(raw[head + 4:]):
        return None  # foreign or torn
    try:
        return marshal.loads(memoryview(raw)[head + 4:])
    except (EOFError, ValueError, TypeError):
        return None


def read_json(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            return loads_bounded(fh.read())
    except (OSError, ValueError):
        return None


def write_file(path: str, data: bytes) -> None:
    from ..fsutil import replace_unsynced

    folder = os.path.dirname(path)
    if os.path.islink(folder):
        return  # never write through a symlinked cache directory
    try:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        replace_unsynced(path, data)  # a cache: a crash may lose it, never corrupt a store
    except OSError:
        pass


def crc(payload: bytes) -> bytes:
    import zlib

    return zlib.crc32(payload).to_bytes(4, "big")


def all_of(values: Any, kind: type) -> bool:
    return set(map(type, values)) <= {kind}


def shared(roots: dict[str, dict[str, Identity]], digests: dict[str, dict[str, str]], memory: dict[str, Fields],
            fold_text: str, folded: dict[str, str], clean: dict[str, dict[str, str]]) -> tuple[Any, ...]:
    """The tables with each distinct file name and hash as one object. marshal writes an object it has
    written before as a reference, so the process that loads the file builds each name and hash once
    instead of once per table (2,000 memories: 1.77 against 1.51 MB, 3.8 against 2.8 ms to load)."""
    pool: dict[str, str] = {}
    one = pool.setdefault
    roots = {one(root, root): {one(name, name): ident for name, ident in table.items()}
             for root, table in roots.items()}
    digests = {one(root, root): {one(name, name): one(sha, sha) for name, sha in table.items()}
               for root, table in digests.items()}
    memory = {one(name, name): (one(fields[0], fields[0]), *fields[1:]) for name, fields in memory.items()}
    folded = {one(name, name): one(sha, sha) for name, sha in folded.items()}
    clean = {scope: {one(name, name): one(sha, sha) for name, sha in table.items()} for scope, table in clean.items()}
    return roots, digests, memory, fold_text, folded, clean
