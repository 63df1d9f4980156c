"""The project lock: one exclusive flock per project home, with owner info for diagnostics."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import LockHeld
from ..fsutil import atomic_write, write_all
from ..store.jsontext import dump_json, loads_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def read_owner(info_path: Path) -> dict[str, Any] | None:
    try:
        with open(info_path, "rb") as fh:
            data = loads_bounded(fh.read(64 * 1024))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_owner(owner: dict[str, Any] | None) -> str:
    if not owner:
        return "another memfold process"
    return (
        f"run {owner.get('runId', '?')} ({owner.get('operation', '?')}, pid {owner.get('pid', '?')} "
        f"on {owner.get('host', '?')}, since {owner.get('since', '?')})"
    )


def _wait_for_owner(info_path: Path) -> dict[str, Any] | None:
    """The holder writes lock.json just after taking the lock: give it a moment to appear."""
    for _ in range(25):
        owner = read_owner(info_path)
        if owner and owner.get("pid") != os.getpid():
            return owner
        time.sleep(0.02)
    return read_owner(info_path)


def _host() -> str:
    """The host name for the owner record (os.uname is what socket.gethostname returns on POSIX)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _try_lock(fh: Any) -> bool:
    """One non-blocking attempt at the exclusive lock.

    On POSIX that is ``flock(LOCK_EX | LOCK_NB)``, the very call portalocker makes there (so both
    interoperate); importing portalocker costs ~40 ms per command, mostly reading its own version
    metadata, so it is used only where flock does not exist.
    """
    try:
        import fcntl
    except ImportError:
        import portalocker

        try:
            portalocker.lock(fh, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.LockException:
            return False
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        raise LockHeld(f"cannot lock {fh.name}: {exc.strerror}", code="lock.unsupported",
                       hint="keep the memfold home on a local filesystem with flock support "
                       "(set MEMFOLD_HOME or --home)") from None
    return True


@contextmanager
def project_lock(
    lock_path: Path,
    info_path: Path,
    *,
    run_id: str,
    operation: str,
    timeout: float,
    now: str,
) -> Iterator[dict[str, Any]]:
    """Hold the lock for the block. Contention past ``timeout`` raises LockHeld naming the holder.

    The descriptor is opened close-on-exec (Python's default), so a worker never inherits it and a
    SIGKILLed holder frees the lock at once.
    """
    deadline = time.monotonic() + max(timeout, 0.0)
    fh = open(lock_path, "a+b")
    try:
        while not _try_lock(fh):
            if time.monotonic() >= deadline:
                owner = _wait_for_owner(info_path)
                waited = f" (waited {timeout:g} s for it)" if timeout > 0 else ""
                raise LockHeld(
                    f"the project is locked by {describe_owner(owner)}{waited}",
                    code="lock.held",
                    hint="wait for it to finish and retry; a crashed holder frees the lock at once",
                    data={"holder": owner or {}, "waitedSeconds": max(timeout, 0.0)},
                )
            time.sleep(0.02)
        owner = {"runId": run_id, "pid": os.getpid(), "host": _host(),
                 "operation": operation, "since": now}
        info_fd = _record_owner(info_path, dump_json(owner))
        try:
            yield owner
        finally:
            _forget_owner(info_path, info_fd)
    finally:
        fh.close()


def _record_owner(info_path: Path, data: bytes) -> int | None:
    """Write the owner record into ``lock.json`` in place; returns its descriptor, to empty it at release.

    The file stays between locks, empty while nobody holds the lock (``read_owner`` then finds no
    owner), so a write creates, renames and deletes no directory entry for it. A reader racing the
    write sees an empty or partial record, which is no owner, and reads again. A file that is not a
    plain file of one link is replaced instead, as it was written before.
    """
    fd = os.open(info_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        atomic_write(info_path, data, durable=False)
        return None
    try:
        os.ftruncate(fd, 0)
        write_all(fd, data)  # at offset 0: the descriptor is new, opened without O_APPEND
    except BaseException:
        os.close(fd)
        raise
    return fd


def _forget_owner(info_path: Path, fd: int | None) -> None:
    try:
        if fd is None:
            os.unlink(info_path)
        else:
            os.ftruncate(fd, 0)
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)
