"""Change notices from the kernel (Linux inotify) for the store roots, so a long-lived process can tell
that nothing touched a root since it read it, without stat-ing every file again.

A watch on a directory reports every write, truncation, metadata change, creation, deletion and rename
of the files directly in it, in order, from the moment the watch exists. Whatever the kernel cannot
promise (its queue overflowed, a root was moved or deleted) is reported as "anything may have
changed". Writes through a shared memory mapping are not reported; memory files are text that editors
and tools write with write(2) or by rename. Where inotify is missing (another OS, a container that
forbids it, no free watches) ``open_watch`` returns None and callers read the roots as before.
"""

from __future__ import annotations

import os
import struct
from functools import partial

from ..fsutil import TEMP_PREFIX
from .memory import INDEX_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..background import Job

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_UNMOUNT, _IN_Q_OVERFLOW, _IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x1000000, 0x2000000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_LOST = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT | _IN_Q_OVERFLOW | _IN_IGNORED
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len, then the name


def store_file(name: str) -> bool:
    """Whether ``read_root`` looks at a file of this name (a memory, the index, or a refused look-alike):
    an event naming any other file (a temporary file before its rename) changes nothing a read shows."""
    return not name.startswith(TEMP_PREFIX) and (name == INDEX_NAME or name.lower().endswith(".md"))


class Watch:
    """One inotify instance over a few directories; ``changes`` drains what happened since last asked."""

    __slots__ = ("fd", "roots", "_unwatch")

    def __init__(self, fd: int, roots: dict[int, str], unwatch: Callable[[int, int], int] | None = None) -> None:
        self.fd = fd
        self.roots = roots  # watch descriptor -> the directory it watches
        self._unwatch = unwatch  # inotify_rm_watch

    def changes(self) -> set[tuple[str, str]] | None:
        """(directory, file name) of everything that changed since the last call; None when the kernel
        lost track (then anything in any watched root may have changed, and the watch is closed)."""
        if self.fd < 0:
            return None
        out: set[tuple[str, str]] = set()
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            except OSError:
                self.close()
                return None
            offset = 0
            while offset + _HEADER.size <= len(chunk):
                wd, mask, _cookie, size = _HEADER.unpack_from(chunk, offset)
                offset += _HEADER.size
                name = chunk[offset:offset + size].split(b"\0", 1)[0]
                offset += size
                root = self.roots.get(wd)
                if mask & _LOST or root is None:
                    self.close()
                    return None
                out.add((root, os.fsdecode(name)))

    def __del__(self) -> None:
        # A watch nobody closed (its owner dropped, as a test or an embedding program does) gives its inotify
        # instance back: a user has 128 of them on a default Linux, shared by all their processes.
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1

    def close(self) -> Job | None:
        """Stop watching; the descriptor is closed on a kept thread (``join`` the job returned to know it is).

        The kernel frees a watch only after a grace period (0.1-19 ms measured here), and the last close
        of the descriptor waits for it: the watches are removed at once, so that wait passes while the
        caller goes on."""
        if self.fd < 0:
            return None
        fd, self.fd = self.fd, -1
        if self._unwatch is not None:
            for wd in self.roots:
                self._unwatch(fd, wd)
        from ..background import run_beside

        return run_beside(partial(os.close, fd), "memfold-unwatch")


def open_watch(roots: list[str]) -> Watch | None:
    """A watch over ``roots`` (existing directories, no symlinks), or None where inotify is unavailable."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        init, add, unwatch = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
    except (OSError, AttributeError):
        return None
    add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None
    watched: dict[int, str] = {}
    for root in roots:
        wd = add(fd, os.fsencode(root), _MASK)
        if wd < 0:
            os.close(fd)
            return None
        watched[wd] = root
    return Watch(fd, watched, unwatch)
