"""The one place that touches the filesystem for writes, hashes, bounded reads and safe joins."""

from __future__ import annotations

import errno
import json
import os
import stat
from json.encoder import encode_basestring as _encode_str  # json's C escaper

from .errors import InputRejected, UnsafePath

# ``memfold inject`` reads through this module on every prompt: pathlib, hashlib and typing are
# imported where they are used, not here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

TEMP_PREFIX = ".memfold-"
TEMP_SUFFIX = ".tmp"


class _Ops:
    """Indirection over the syscalls a transaction makes, so tests can inject faults."""

    write: Callable[[int, bytes], int] = staticmethod(os.write)
    fsync: Callable[[int], None] = staticmethod(os.fsync)
    rename: Callable[[str, str], None] = staticmethod(os.replace)
    unlink: Callable[[str], None] = staticmethod(os.unlink)


ops = _Ops()


def sha256_bytes(data: bytes) -> str:
    """The one SHA-256 helper (hex digest).

    CPython's own module where it exists: hashlib also loads OpenSSL and BLAKE2, two more shared
    libraries, and the per-prompt path hashes the project root before every prompt.
    """
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest


def sha256_file(path: Path, limit: int | None = None) -> str:
    return sha256_bytes(read_bounded(path, limit))


_SAFE_INT = 2**53 - 1
_STR = {str}


def _plain_json(value: Any) -> bool:
    """True when RFC 8785 and sorted compact ``json.dumps`` give the same bytes for ``value``.

    That holds without floats (JCS has its own number format), with integers in the safe range and
    with ASCII keys (JCS orders keys by UTF-16 code units, Python by code points). String escaping is
    the same in both: only ``"``, ``\\`` and control characters, everything else as UTF-8.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is int:
            if -_SAFE_INT <= item <= _SAFE_INT:
                continue
            return False
        if kind is dict:
            try:
                if not "".join(item).isascii():
                    return False
            except TypeError:
                return False  # a key that is not a string
            values = item.values()
            if not set(map(type, values)) <= _STR:  # hash maps hold strings only: checked in C
                stack.extend(values)
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value."""
    if _plain_json(value):
        try:
            # The C encoder: the pure-Python rfc8785 costs seconds on a 20,000-file receipt.
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              check_circular=False).encode("utf-8")
        except UnicodeEncodeError:
            pass  # lone surrogates: rfc8785 reports them
    import rfc8785

    return rfc8785.dumps(value)


def digest_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value))


def dump_json(value: Any) -> bytes:
    """The stable, human-readable JSON every memfold file is written in."""
    try:
        parts: list[str] = []
        _indented(value, "\n", parts)
        text = "".join(parts)
    except (_Unplain, TypeError, RecursionError):
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


class _Unplain(Exception):
    """A value the fast writer leaves to json.dumps (floats, non-str keys, other types)."""


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Exactly ``json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)``, several times faster.

    json.dumps falls back to its pure-Python encoder whenever ``indent`` is set; plans and receipts
    of large stores have hundreds of thousands of entries. Strings go through json's C escaper.
    """
    kind = type(value)
    if kind is str:
        out.append(_encode_str(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        if set(map(type, value)) == _STR and set(map(type, value.values())) == _STR:
            # A hash map: json's C encoder writes it whole, the indentation being its item separator.
            flat = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=("," + inner, ": "))
            out.append("{" + inner + flat[1:-1] + newline + "}")
            return
        first = True
        for key in sorted(value):
            if type(key) is not str:
                raise _Unplain
            out.append(("{" if first else ",") + inner + _encode_str(key) + ": ")
            first = False
            _indented(value[key], inner, out)
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        first = True
        for item in value:
            out.append(("[" if first else ",") + inner)
            first = False
            _indented(item, inner, out)
        out.append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    else:
        raise _Unplain


def read_bounded(path: Path | str, limit: int | None = None, *, dir_fd: int | None = None) -> bytes:
    """Read a regular file without following a final symlink, refusing more than ``limit`` bytes.

    With ``dir_fd``, ``path`` is relative to that open directory.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(
                f"{path} is a symlink; memfold does not follow symlinks in its stores",
                code="path.symlink",
                hint="replace the link with a regular file",
            ) from exc
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(
                f"{path} is not a regular file", code="path.not-regular",
                hint="remove it from the store directory",
            )
        if limit is not None and st.st_size > limit:
            raise InputRejected(
                f"{os.path.basename(path)} is {st.st_size} bytes, over the {limit}-byte bound",
                code="bounds.file-size",
                hint="split the memory or raise limits.max_file_bytes in the config",
            )
        chunks: list[bytes] = []
        total = 0
        cap = (limit if limit is not None else st.st_size) + 1
        while True:
            chunk = os.read(fd, min(1 << 20, cap - total) or 1)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:
                raise InputRejected(
                    f"{os.path.basename(path)} grew past the {limit}-byte bound while being read",
                    code="bounds.file-size",
                )
        return b"".join(chunks)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)


_FSYNC_THREADS = 16


def fsync_all(fds: list[int], dirs: list[Path] | None = None) -> None:
    """fsync every descriptor and every directory (each once), concurrently.

    The filesystem folds concurrent fsyncs into shared journal commits, so N files cost about one
    round trip instead of N. Every call still goes through ``ops.fsync``; all of them finish before
    the first error, if any, is raised.
    """
    dir_fds: list[int] = []
    try:
        for path in dict.fromkeys(dirs or ()):
            dir_fds.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        _fsync_concurrently([*fds, *dir_fds])
    finally:
        for fd in dir_fds:
            os.close(fd)


def _fsync_concurrently(fds: list[int]) -> None:
    if len(fds) < 2:
        for fd in fds:
            ops.fsync(fd)
        return
    # Plain threads, one per descriptor up to a cap: concurrent.futures (with logging) costs ~15 ms
    # to import, more than starting a dozen threads.
    import threading

    errors: list[BaseException] = []

    def work(chunk: list[int]) -> None:
        for fd in chunk:
            try:
                ops.fsync(fd)
            except BaseException as exc:
                errors.append(exc)

    count = min(_FSYNC_THREADS, len(fds))
    threads = [threading.Thread(target=work, args=(fds[i::count],), name="memfold-fsync") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def create_unsynced(path: str | Path, data: bytes, mode: int = 0o600) -> int:
    """Create ``path`` (must not exist) and write ``data`` without an fsync; returns the open descriptor.

    For batches: the caller fsyncs it with the others (``fsync_all``) and closes it. On a failed write
    the file is removed again.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        _silent_unlink(path)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = ops.write(fd, bytes(view[: 1 << 20]))
        view = view[n:]


def temp_name(final_name: str, tag: str | None = None) -> str:
    if not tag:
        tag = os.urandom(6).hex()  # the same bytes secrets.token_hex reads, without importing hmac/OpenSSL
    return f"{TEMP_PREFIX}{tag}-{final_name}{TEMP_SUFFIX}"


def write_new(path: Path, data: bytes, mode: int = 0o600) -> str:
    """Create ``path`` (must not exist), write and fsync it. Returns the sha256 of the bytes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        _write_all(fd, data)
        ops.fsync(fd)
    except BaseException:
        os.close(fd)
        _silent_unlink(path)
        raise
    os.close(fd)
    return sha256_bytes(data)


def atomic_write(path: str | Path, data: bytes, mode: int = 0o600, *, durable: bool = True) -> str:
    """Write via a temp file in the same directory and rename over ``path``. Returns the sha256.

    ``durable=False`` is for caches and diagnostics a crash may lose or leave torn: no fsync at all.
    """
    from pathlib import Path

    if not durable:
        replace_unsynced(os.fspath(path), data, mode)
        return sha256_bytes(data)
    path = Path(path)
    tmp = path.parent / temp_name(path.name)
    digest = write_new(tmp, data, mode)
    try:
        ops.rename(str(tmp), str(path))
    except BaseException:
        _silent_unlink(tmp)
        raise
    fsync_dir(path.parent)
    return digest


def replace_unsynced(path: str, data: bytes, mode: int = 0o600) -> None:
    """``atomic_write(durable=False)`` without pathlib or a hash: for state the per-prompt path keeps."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, temp_name(name))
    os.close(create_unsynced(tmp, data, mode))
    try:
        ops.rename(tmp, path)
    except BaseException:
        _silent_unlink(tmp)
        raise


def _silent_unlink(path: str | Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def safe_join(root: Path, name: str) -> Path:
    """Join one plain file name onto ``root``; refuse separators, dot names and NULs."""
    if not name or "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise UnsafePath(f"{name!r} is not a plain file name", code="path.escape")
    return root / name


def refuse_symlinks(path: Path | str, below: Path | str) -> None:
    """Refuse if ``path`` or any existing component between ``below`` and it is a symlink.

    Plain ``os.path`` on purpose: the per-prompt ``inject`` path runs this check too, without pathlib.
    """
    path = os.path.normpath(os.fspath(path))
    below = os.path.normpath(os.fspath(below))
    if path != below and not path.startswith(below.rstrip(os.sep) + os.sep):
        raise UnsafePath(f"{path} is outside {below}", code="path.escape")
    candidate = below
    checks = [below]
    for part in path[len(below):].split(os.sep):
        if part:
            candidate = os.path.join(candidate, part)
            checks.append(candidate)
    for candidate in checks:
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePath(
                f"{candidate} is a symlink; memfold refuses symlinks on its own paths",
                code="path.symlink",
                hint="replace the link with a real directory (or pass --home/--project to the real path)",
            )


def ensure_dir(path: Path, below: Path, mode: int = 0o700) -> None:
    """Create ``path`` and its parents below ``below`` (which must exist), refusing symlinks."""
    from pathlib import Path

    refuse_symlinks(path, below)
    rel = Path(path).relative_to(below)
    current = Path(below)
    for part in rel.parts:
        current = current / part
        try:
            os.mkdir(current, mode)
        except FileExistsError:
            st = os.lstat(current)
            if stat.S_ISLNK(st.st_mode):
                raise UnsafePath(f"{current} is a symlink", code="path.symlink") from None
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafePath(f"{current} exists and is not a directory", code="path.not-dir") from None
