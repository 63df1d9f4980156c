"""A transaction's staged copies: each checked to be the file written from the hashed bytes, and the
same bytes staged a second time as a link of the first."""

from __future__ import annotations

import os

from ..errors import ApplyFailed
from ..fsutil import ops, read_bounded, sha256_bytes

# (name, staged temp's name, the open directory holding it, its state once written, sha256 of the bytes written)
Staged = tuple[str, str, int, os.stat_result, str]


def link_staged(made: list[tuple[int | None, str]], staged: list[Staged], first: int,
                name: str, temp: str, dir_fd: int) -> bool:
    """Stage ``temp`` (in ``dir_fd``) as a second name of the staged copy ``staged[first]`` (the same bytes,
    mode and owner).

    Each name is still renamed into place on its own journal entry, so a crash at any step leaves every
    name either its staged temp or its target, both the one inode; recovery, which checks each by its
    hash, is unchanged. The data is written and made durable once, the new entry by the fsync of its
    directory. The link changes the inode's change time, so the first copy's recorded state is taken
    again. Where links are refused (a filesystem without them, another mount), the caller writes a copy.
    """
    first_name, source, source_dir, written, post = staged[first]
    try:
        ops.link(source, temp, src_dir_fd=source_dir, dst_dir_fd=dir_fd)
    except OSError:
        return False
    made.append((dir_fd, temp))
    now = os.stat(temp, dir_fd=dir_fd, follow_symlinks=False)
    if _identity(now)[:4] != _identity(written)[:4] or now.st_mode != written.st_mode:  # all but the change time
        raise ApplyFailed(f"staged copy of {first_name} changed after it was written", code="apply.staged-mismatch")
    staged[first] = (first_name, source, source_dir, now, post)
    staged.append((name, temp, dir_fd, now, post))
    return True


def check_copies(staged: list[Staged]) -> None:
    """Each staged copy is still the file written from the hashed bytes, without reading it back.

    Its name must still lead to the same inode with the same size, mode, modification and change
    times as right after the write: any write, truncation, chmod or replacement since changes one of
    them (the change time cannot be set back). The bytes were hashed in memory, before they were
    written. Where the filesystem keeps whole seconds only, a rewrite within the same second would
    leave the times alone: such a copy is read back and hashed as before.
    """
    for name, temp, dir_fd, written, post in staged:
        try:
            now = os.stat(temp, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        same = now is not None and _identity(now) == _identity(written)
        if same and _whole_seconds(written):
            same = sha256_bytes(read_bounded(temp, dir_fd=dir_fd)) == post
        if not same:
            raise ApplyFailed(f"staged copy of {name} changed after it was written",
                              code="apply.staged-mismatch")


def _whole_seconds(st: os.stat_result) -> bool:
    return st.st_mtime_ns % 1_000_000_000 == 0 and st.st_ctime_ns % 1_000_000_000 == 0


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
