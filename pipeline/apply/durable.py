"""Making a batch of staged files and directories durable: one syncfs(2) per local filesystem that holds
enough of them, concurrent fsyncs on threads kept for the process for the rest."""

from __future__ import annotations

import os
from pathlib import Path

from ..fsutil import ops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_FSYNC_THREADS = 16
# From this many descriptors and directories on one filesystem, one syncfs(2) replaces their fsyncs.
# Measured on ext4 (2-vCPU VM, median of 5): 64 new files 21 ms of concurrent fsyncs against 7 ms for
# syncfs, 1,000 files 156 against 29 ms, 3,000 files 190-350 against 45-70 ms. Below it the fsyncs stay:
# syncfs also writes back whatever other programs left dirty on that filesystem.
SYNCFS_MIN = 64
# Local disk filesystems whose syncfs writes back and flushes everything an fsync would. Not FUSE (its
# servers see no syncfs before FUSE_SYNCFS, and most ignore it) nor network filesystems.
SYNCFS_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs"})


def fsync_all(fds: list[int], dirs: list[Path] | None = None) -> None:
    """Make every descriptor and every directory durable (each once), batched.

    ``fds`` must come in the order they were opened. Where a local disk filesystem (``SYNCFS_TYPES``)
    holds at least ``SYNCFS_MIN`` of them, one ``ops.syncfs`` on the first descriptor opened there
    covers that filesystem's files
    and directory entries: it reports every write-back error since that descriptor was opened, so
    none of the later files' errors is missed. The rest are fsynced concurrently (the filesystem
    folds concurrent fsyncs into shared commits); all calls finish before the first error, if any,
    is raised.
    """
    folders = list(dict.fromkeys(dirs or ()))
    if len(fds) + len(folders) >= SYNCFS_MIN and syncfs_reports_errors():
        fds, folders = _sync_filesystems(fds, folders)
    dir_fds: list[int] = []
    try:
        for path in folders:
            dir_fds.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        _fsync_concurrently([*fds, *dir_fds])
    finally:
        for fd in dir_fds:
            os.close(fd)


def _sync_filesystems(fds: list[int], folders: list[Path]) -> tuple[list[int], list[Path]]:
    """syncfs each filesystem that holds enough of the batch; returns what is left to fsync."""
    by_device: dict[int, list[int]] = {}
    for fd in fds:
        by_device.setdefault(os.fstat(fd).st_dev, []).append(fd)
    folder_device = {path: os.stat(path).st_dev for path in folders}
    synced = set()
    for device, group in by_device.items():
        if len(group) + sum(1 for d in folder_device.values() if d == device) >= SYNCFS_MIN \
                and _filesystem_type(device) in SYNCFS_TYPES:
            ops.syncfs(group[0])
            synced.add(device)
    return ([fd for device, group in by_device.items() if device not in synced for fd in group],
            [path for path in folders if folder_device[path] not in synced])


def _filesystem_type(device: int) -> str | None:
    """The type of the filesystem mounted from ``device`` (st_dev), from /proc/self/mountinfo."""
    wanted = f"{os.major(device)}:{os.minor(device)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) > 3 and fields[2] == wanted and "-" in fields:
                    return fields[fields.index("-") + 1]
    except OSError:
        pass
    return None


def syncfs_reports_errors() -> bool:
    """syncfs(2) exists and returns write-back errors (Linux 5.8 and later; it always succeeded before)."""
    if _SYNCFS_OK:
        return _SYNCFS_OK[0]
    ok = False
    if hasattr(os, "uname") and os.uname().sysname == "Linux":
        parts = os.uname().release.split(".")[:2]
        if len(parts) == 2 and all(part.isdigit() for part in parts) and (int(parts[0]), int(parts[1])) >= (5, 8):
            import ctypes

            ok = hasattr(ctypes.CDLL(None), "syncfs")
    _SYNCFS_OK.append(ok)
    return ok


_SYNCFS_OK: list[bool] = []


def _fsync_concurrently(fds: list[int]) -> None:
    if len(fds) < 2:
        for fd in fds:
            ops.fsync(fd)
        return
    _pool().run(fds)


class _Batch:
    """One ``fsync_all`` call's descriptors in flight: how many are left, the errors, who waits."""

    __slots__ = ("left", "errors", "lock", "done")

    def __init__(self, count: int, lock: Any, done: Any) -> None:
        self.left, self.lock, self.done = count, lock, done
        self.errors: list[BaseException] = []

    def fsync(self, fd: int) -> None:
        try:
            ops.fsync(fd)
        except BaseException as exc:
            self.errors.append(exc)
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            self.done.release()


class _FsyncPool:
    """Threads kept for the life of the process, each taking descriptors to fsync from one queue.

    A warm server commits many times: starting a thread per descriptor cost more than the waits of a
    small batch (20 thread starts per write). The calling thread takes descriptors from the queue too,
    then waits until every descriptor of its batch is done; all are done before the first error, if
    any, is raised.
    """

    def __init__(self) -> None:
        import threading
        from _queue import Empty, SimpleQueue  # the C queue: no import of queue, heapq or collections' deque

        self._threading = threading
        self._empty = Empty
        self._tasks: Any = SimpleQueue()
        self._started = 0
        self._grow = threading.Lock()
        self.workers: set[int] = set()  # the thread idents, as each worker starts taking descriptors

    def _worker(self) -> None:
        self.workers.add(self._threading.get_ident())
        while True:
            batch, fd = self._tasks.get()
            batch.fsync(fd)

    def grow(self, count: int) -> None:
        """At least ``count`` threads (at most ``_FSYNC_THREADS - 1``: the caller is one of them).

        Started with ``_thread``, which does not wait for the new thread to run, as ``Thread.start``
        does: while another thread holds the interpreter lock, each such wait lasted up to a switch
        interval (5 ms), and starting 15 threads beside a consolidation's imports took 22-27 ms. The
        workers are daemons in effect: they hold no state, and the process never joins them.
        """
        import _thread

        with self._grow:
            while self._started < min(_FSYNC_THREADS - 1, count):
                _thread.start_new_thread(self._worker, ())
                self._started += 1

    def run(self, fds: list[int]) -> None:
        threading = self._threading
        done = threading.Lock()
        done.acquire()
        batch = _Batch(len(fds), threading.Lock(), done)
        self.grow(len(fds) - 1)
        for fd in fds:
            self._tasks.put((batch, fd))
        while batch.left:
            try:
                other, fd = self._tasks.get_nowait()
            except self._empty:  # the workers hold the rest
                break
            other.fsync(fd)
        done.acquire()
        if batch.errors:
            raise batch.errors[0]


def start_fsync_threads() -> None:
    """Start every thread a batch can use now, ahead of a commit: each start waits for the new thread
    to run, ~0.1 ms idle and milliseconds on a busy machine, which a commit's first batch paid."""
    _pool().grow(_FSYNC_THREADS - 1)


_POOL: list[_FsyncPool] = []


def _pool() -> _FsyncPool:
    if not _POOL:
        if not _FORKED_HOOK:
            # A child forked without exec has none of the parent's threads: it starts its own.
            os.register_at_fork(after_in_child=_POOL.clear)
            _FORKED_HOOK.append(True)
        _POOL.append(_FsyncPool())
    return _POOL[0]


_FORKED_HOOK: list[bool] = []
