"""The one place that touches the filesystem for writes, hashes, bounded reads and safe joins."""

from __future__ import annotations

import errno
import os
import stat
import sys

from .errors import InputRejected, UnsafeOwner, UnsafePath

# ``memfold inject`` reads through this module on every prompt: pathlib, hashlib and typing are
# imported where they are used, not here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

TEMP_PREFIX = ".memfold-"
TEMP_SUFFIX = ".tmp"


def _syncfs(fd: int) -> None:
    """syncfs(2): write back and flush the whole filesystem holding ``fd``."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).syncfs(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class _Ops:
    """Indirection over the syscalls a transaction makes, so tests can inject faults.

    ``rename`` and ``link`` take ``src_dir_fd``/``dst_dir_fd``, ``unlink`` takes ``dir_fd``, as ``os`` does:
    a transaction names every file of a root relative to the root's open descriptor.
    """

    write: Callable[[int, bytes], int] = staticmethod(os.write)
    fsync: Callable[[int], None] = staticmethod(os.fsync)
    syncfs: Callable[[int], None] = staticmethod(_syncfs)
    rename: Callable[..., None] = staticmethod(os.replace)
    unlink: Callable[..., None] = staticmethod(os.unlink)
    link: Callable[..., None] = staticmethod(os.link)


ops = _Ops()


def sha256_bytes(data: bytes) -> str:
    """The one SHA-256 helper (hex digest).

    CPython's own module for small inputs: hashlib also loads OpenSSL and BLAKE2, two more shared
    libraries (~5 ms), and the per-prompt path hashes the project root before every prompt. Past
    ``_LARGE`` bytes, or once hashlib is loaded anyway, OpenSSL's digest is used: with the CPU's SHA
    instructions it is ten times faster (0.9 against 8.6 ms for a 700 KB receipt on the bench VM).
    """
    if len(data) >= _LARGE or "_hashlib" in sys.modules:
        import hashlib

        large: str = hashlib.sha256(data).hexdigest()
        return large
    try:
        from _sha256 import sha256  # type: ignore[import-not-found, unused-ignore]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]  # CPython 3.12+
        except ImportError:
            from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest


_LARGE = 256 << 10


def sha256_file(path: Path, limit: int | None = None) -> str:
    return sha256_bytes(read_bounded(path, limit))


def read_bounded(path: Path | str, limit: int | None = None, *, dir_fd: int | None = None,
                 settings: str | None = None) -> bytes:
    """Read a regular file without following a final symlink, refusing more than ``limit`` bytes.

    With ``dir_fd``, ``path`` is relative to that open directory. ``settings`` names a file memfold reads
    its own settings from ("trust list"): it must pass ``refuse_unsafe_owner`` (checked on the same fstat).
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
        if settings is not None:
            refuse_unsafe_owner(path, st, settings)
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


def refuse_unsafe_owner(path: Path | str, st: os.stat_result, what: str) -> None:
    """OpenSSH's rule for the files it takes its settings from (``StrictModes``), for the memfold home and
    every file memfold reads its own settings from: ``st`` (of ``path``, already taken by the caller)
    must belong to the user running memfold or to root, and be writable by neither group nor others.

    Anyone who could write there could switch off the privacy gate or name a worker command. The
    directories above are not checked, as OpenSSH stops at the home directory.
    """
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None or (st.st_uid in (uid, 0) and not st.st_mode & 0o022):
        return
    import pwd

    def name(number: int) -> str:
        try:
            return pwd.getpwuid(number).pw_name
        except KeyError:
            return str(number)

    mode = stat.S_IMODE(st.st_mode)
    wrong, fixes = [], []
    if st.st_uid not in (uid, 0):
        wrong.append(f"owned by uid {st.st_uid} ({name(st.st_uid)}), not by you (uid {uid}) or root")
        fixes.append(f"chown {name(uid)} {path}")
    if st.st_mode & 0o022:
        who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002)) if st.st_mode & bit)
        wrong.append(f"writable by {who} (mode {mode:04o})")
        fixes.append(f"chmod go-w {path}")
    home = what == "memfold home"
    raise UnsafeOwner(
        f"{what} {path} is {', and '.join(wrong)}: memfold uses nothing another user could have written there",
        code="home.unsafe" if home else "settings.unsafe",
        hint=f"if it is yours: {' && '.join(fixes)}" + ("; otherwise pass another --home (or $MEMFOLD_HOME)"
                                                          if home else "; otherwise remove it"),
        data={"path": str(path), "uid": st.st_uid, "owner": name(st.st_uid), "mode": f"{mode:04o}"})


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)


def create_unsynced(path: str | Path, data: bytes, mode: int = 0o600, *, dir_fd: int | None = None) -> int:
    """Create ``path`` (must not exist) and write ``data`` without an fsync; returns the open descriptor.

    For batches: the caller fsyncs it with the others (``apply.durable.fsync_all``) and closes it. On a failed write
    the file is removed again. With ``dir_fd``, ``path`` is a name in that open directory.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        _silent_unlink(path, dir_fd)
        raise
    return fd


def open_dir(path: Path | str) -> int:
    """Open the directory ``path`` for writes relative to it, refusing a symlink in its place.

    A transaction opens each root once and stages, renames and unlinks through the descriptor: a root
    swapped for a link (or moved away) after memfold checked it cannot redirect a write elsewhere.
    """
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(path):
            raise UnsafePath(f"{path} is a symlink; memfold refuses symlinks on its own paths", code="path.symlink",
                             hint="replace the link with a real directory") from exc
        raise


def write_all(fd: int, data: bytes) -> None:
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
        write_all(fd, data)
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


def _silent_unlink(path: str | Path, dir_fd: int | None = None) -> None:
    try:
        os.unlink(path, dir_fd=dir_fd)
    except OSError:
        pass


def remove_tree(path: str | Path) -> None:
    """Remove a directory memfold made and all below it, never following a link, ignoring what cannot
    be removed (a later prune tries again): ``shutil.rmtree(path, ignore_errors=True)`` without
    importing shutil, which imports bz2 and lzma (1.5 ms of a CLI write that retires a run)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        _clear(fd)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _clear(fd: int) -> None:
    with os.scandir(fd) as found:
        entries = list(found)
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                try:
                    _clear(sub)
                finally:
                    os.close(sub)
                os.rmdir(entry.name, dir_fd=fd)
            else:
                os.unlink(entry.name, dir_fd=fd)
        except OSError:
            continue


def safe_join(root: Path, name: str) -> Path:
    """Join one plain file name onto ``root``; refuse separators, dot names and NULs."""
    if not name or "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise UnsafePath(f"{name!r} is not a plain file name", code="path.escape")
    return root / name


def write_artifact(run_dir: Path, name: str, data: bytes) -> str:
    """Write one run-dir file once (never replaced); returns its sha256."""
    return write_new(safe_join(run_dir, name), data)


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
