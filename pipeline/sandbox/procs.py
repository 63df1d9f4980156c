"""Launcher-side containment: join cgroups, enter a PID namespace, sweep orphans via pidfd."""

from __future__ import annotations

import os
import signal
import stat
import time
from collections.abc import Iterable

from . import kernel


def join_cgroups(procs_files: Iterable[str]) -> list[str]:
    """Move this process into each cgroup it is not in yet; children inherit membership.

    The parent moves a launcher started ahead into its run's cgroups while it boots: a cgroup that
    lists this process already is joined without a write (each move waits for the kernel).
    """
    joined: list[str] = []
    me = str(os.getpid())
    for path in procs_files:
        try:
            if not _member(path, me):
                with open(path, "w", encoding="ascii") as fh:
                    fh.write("0")  # "0" means the writing process
            joined.append(path)
        except OSError:
            pass
    return joined


def _member(procs_file: str, pid: str) -> bool:
    try:
        with open(procs_file, encoding="ascii") as fh:
            return pid in fh.read().split()
    except OSError:
        return False


def enter_pid_namespace() -> str | None:
    """Make the next fork PID 1 of a new PID namespace: its exit kills every member.

    Root (CAP_SYS_ADMIN) unshares directly; otherwise a user namespace mapping
    only our own uid/gid comes first. Returns the mode, or None if neither works.
    """
    try:
        kernel.unshare(kernel.CLONE_NEWPID)
        return "pid"
    except OSError:
        pass
    uid, gid = os.getuid(), os.getgid()
    try:
        kernel.unshare(kernel.CLONE_NEWUSER | kernel.CLONE_NEWPID)
    except OSError:
        return None
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as fh:
                fh.write(text)
    except OSError:
        pass  # an unmapped uid still works for the pid namespace; ids show as overflow ids
    return "user+pid"


def _parents() -> dict[int, int]:
    """Every visible pid and its ppid, from /proc (field 4 of stat)."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses; fields resume after the last ')'.
        rest = data[data.rfind(b")") + 2 :].split()
        if len(rest) > 1:
            found[int(name)] = int(rest[1])
    return found


def children_of(parent: int) -> list[int]:
    """Direct children of ``parent`` according to /proc."""
    return [pid for pid, ppid in _parents().items() if ppid == parent]


def tree_of(root: int) -> list[int]:
    """``root`` and all its descendants. Orphans of a PID namespace or a subreaper stay inside."""
    kids: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        kids.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(kids.get(pid, ()))
    return found


def unlinked_bytes(pids: Iterable[int]) -> int:
    """Allocated bytes of regular files ``pids`` hold open that no directory names any more.

    A file unlinked while open (or a memfd) keeps its blocks until the last descriptor
    closes, and no walk of a directory finds it.
    """
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # exited, or non-dumpable: then its memory still counts through statm
        for fd in fds:
            try:
                st = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def memory_of(pids: Iterable[int]) -> int:
    """Resident memory of ``pids`` together, in bytes.

    The proportional set size splits pages shared between processes instead of counting
    them once per process. A process that made itself non-dumpable hides its smaps from
    us; its resident anonymous pages (statm, readable by anyone) count instead.
    """
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                total += next((int(line.split()[1]) * 1024 for line in fh if line.startswith(b"Pss:")), 0)
            continue
        except (OSError, ValueError):
            pass
        try:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                fields = fh.read().split()
            total += max(0, int(fields[1]) - int(fields[2])) * page
        except (OSError, ValueError, IndexError):
            pass  # exited meanwhile
    return total


def sweep(me: int, rounds: int = 50) -> int:
    """Kill every process reparented to this subreaper until none is left.

    A child cannot be recycled before we reap it, and pidfds pin the target
    anyway, so the signal never lands on an unrelated process.
    """
    killed = 0
    for _ in range(rounds):
        kids = children_of(me)
        if not kids:
            break
        for pid in kids:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
            finally:
                os.close(fd)
        time.sleep(0.005)  # let the kills land before reaping and listing again
        reap_all()
    return killed


def reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def nproc_limit(processes: int | None, namespace_mode: str | None) -> int | None:
    """The RLIMIT_NPROC that lets ``processes`` more processes exist, or None where it bounds nothing.

    The kernel counts processes per uid per user namespace, and never refuses uid 0 in the
    first one (root relies on pids.max). In a user namespace of its own the count holds only
    the launcher, this process and what they start; elsewhere it is every process of the uid.
    """
    uid = os.getuid()
    if processes is None or (uid == 0 and namespace_mode != "user+pid"):
        return None
    if namespace_mode == "user+pid":
        return processes + 2
    return processes + _count_uid(uid)


def _count_uid(uid: int) -> int:
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if name.isdigit():
            try:
                count += os.stat(f"/proc/{name}").st_uid == uid
            except OSError:
                pass
    return count


def set_subreaper() -> bool:
    try:
        kernel.prctl(kernel.PR_SET_CHILD_SUBREAPER, 1)
        return True
    except OSError:
        return False
