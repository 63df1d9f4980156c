"""Parent-side bound on a worker's scratch dir: bytes and entries measured while it runs, removal after."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..frozen import FrozenValue

# More entries than this is over bound by itself: it keeps every measurement cheap, and no
# plan run needs a hundred thousand files.
MAX_ENTRIES = 100_000


class Usage(FrozenValue):
    __slots__ = ("bytes", "entries", "unreadable")
    bytes: int
    entries: int
    # directories the parent could not list: their contents are not counted
    unreadable: int

    def __init__(self, bytes: int, entries: int, unreadable: int) -> None:
        self._set(bytes=bytes, entries=entries, unreadable=unreadable)

    def over(self, max_bytes: int, max_entries: int = MAX_ENTRIES) -> str | None:
        """Which bound is broken: "bytes", "entries", "unreadable" (a hidden subtree), or None."""
        if self.bytes > max_bytes:
            return "bytes"
        if self.entries > max_entries:
            return "entries"
        if self.unreadable:
            return "unreadable"
        return None


def usage(root: Path, max_entries: int = MAX_ENTRIES) -> Usage:
    """Allocated bytes and entry count under ``root``; stops counting one entry past the budget.

    Allocated blocks, not apparent sizes, are what fill a disk (a sparse file costs nothing);
    each inode counts once however many hard links name it. Symlinks are never followed.
    """
    total = entries = unreadable = 0
    seen: set[tuple[int, int]] = set()
    stack = [str(root)]
    while stack and entries <= max_entries:
        try:
            it = os.scandir(stack.pop())
        except FileNotFoundError:
            continue
        except OSError:
            unreadable += 1
            continue
        with it:
            for entry in it:
                entries += 1
                if entries > max_entries:
                    break
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return Usage(total, entries, unreadable)


def remove(root: Path) -> bool:
    """Delete ``root`` and everything below it, even dirs the worker left without permissions."""

    def unlock(_func: object, path: str, _exc: object) -> None:
        # A worker may leave a dir mode 000; its owner (us) may still chmod it and retry.
        parent = os.path.dirname(path)
        for target in (parent, path):
            try:
                if not os.path.islink(target):
                    os.chmod(target, 0o700)
            except OSError:
                pass
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass

    if not os.path.lexists(root):
        return True
    import shutil  # with zlib, bz2 and lzma ~4 ms of every start; needed only once the worker is done

    shutil.rmtree(root, onerror=unlock)
    return not os.path.lexists(root)
