"""Parent-side cgroup handling: per-run cgroups (kill, pids, memory), and the sweep of dead runs' leftovers."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from ..frozen import Slotted

# memfold-<pid namespace inode>-<owner pid>-<owner start time>-<random>: the owner can be
# recognised later, and a recycled pid cannot pass for it (its start time differs).
_NAME = re.compile(r"^memfold-(\d+)-(\d+)-(\d+)-[0-9a-f]+$")
# The older memfold-<pid>-<random> form names no start time: such a dir is only removed once empty.
_LEGACY = re.compile(r"^memfold-(\d+)-[0-9a-f]+$")
_LEGACY_AGE = 600.0  # seconds: an empty legacy dir this old is no run being set up


def _mounts() -> dict[str, Path]:
    """The cgroup2 mount ("") and the v1 hierarchies carrying the pids and memory controllers."""
    found: dict[str, Path] = {}
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 4:
                    continue
                if parts[2] == "cgroup2":
                    found.setdefault("", Path(parts[1]))
                elif parts[2] == "cgroup":
                    for ctrl in ("pids", "memory"):
                        if ctrl in parts[3].split(","):
                            found.setdefault(ctrl, Path(parts[1]))
    except OSError:
        pass
    return found


def _own(controller: str) -> str | None:
    """This process's cgroup path in the v2 tree (controller "") or a v1 hierarchy."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            for line in fh:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if (controller == "" and ctrls == "") or (controller and controller in ctrls.split(",")):
                    return path
    except (OSError, ValueError):
        pass
    return None


def _bases() -> dict[str, Path]:
    """Writable parent dirs for run cgroups, by controller ("" is the v2 tree)."""
    out: dict[str, Path] = {}
    for controller, mount in _mounts().items():
        own = _own(controller)
        if own is None:
            continue
        base = mount / own.lstrip("/")
        if os.access(base, os.W_OK):
            out[controller] = base
    return out


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        parts = os.uname().release.split(".")
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (ValueError, IndexError):
        return False


def _v2_controllers(base: Path) -> list[str]:
    try:
        return (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return []


def availability() -> dict[str, Any]:
    bases = _bases()
    v2 = bases.get("")
    ctrls = _v2_controllers(v2) if v2 is not None else []
    return {
        "v2": v2 is not None,
        "kill": v2 is not None and _kernel_at_least(5, 14),
        "pids": "pids" in ctrls or "pids" in bases,
        "memory": "memory" in ctrls or "memory" in bases,
    }


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot): with the pid, a process's identity."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; fields resume after the last ')'.
    rest = data[data.rfind(b")") + 2 :].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def run_name(pid: int | None = None) -> str:
    """The name of a new run cgroup owned by ``pid`` (this process by default)."""
    owner = os.getpid() if pid is None else pid
    return f"memfold-{_pid_namespace()}-{owner}-{start_time(owner) or 0}-{os.urandom(4).hex()}"


def _owner_alive(name: str) -> bool:
    match = _NAME.match(name)
    if match is None:
        return True  # not ours to judge
    ns, pid, started = (int(g) for g in match.groups())
    if ns != _pid_namespace():
        return True  # its owner lives in another pid namespace, where we cannot see it
    return start_time(pid) == started


def _members(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_members(d: Path) -> None:
    kill_file = d / "cgroup.kill"
    if kill_file.exists():
        try:
            kill_file.write_text("1")
            return
        except OSError:
            pass
    # v1 has no cgroup.kill: members forking meanwhile land in the same cgroup, so repeat.
    for _ in range(20):
        pids = _members(d)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _rmdir(d: Path, wait: float) -> bool:
    end = time.monotonic() + wait
    while True:
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > end:
                return False
            time.sleep(0.01)  # members are still exiting


def sweep_dead(bases: dict[str, Path] | None = None) -> list[str]:
    """Kill the members of every run cgroup whose owner is dead, and remove it; the removed paths."""
    removed: list[str] = []
    for base in (bases if bases is not None else _bases()).values():
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith("memfold-") or not entry.is_dir(follow_symlinks=False):
                continue
            d = Path(entry.path)
            if _NAME.match(entry.name):
                if _owner_alive(entry.name):
                    continue
                _kill_members(d)
                if _rmdir(d, 1.0):
                    removed.append(str(d))
            elif _LEGACY.match(entry.name) and not _members(d):
                try:
                    old = time.time() - entry.stat(follow_symlinks=False).st_mtime > _LEGACY_AGE
                except OSError:
                    continue
                if old and _rmdir(d, 0.0):
                    removed.append(str(d))
    return removed


class RunCgroups(Slotted):
    """The cgroups made for one run; ``procs_files`` go into the policy for the launcher."""

    __slots__ = ("dirs", "kill_file", "pids_max", "memory_max", "swept", "name", "bases", "v2")
    dirs: list[Path]
    kill_file: Path | None
    pids_max: int | None
    memory_max: int | None
    swept: list[str]
    name: str
    bases: dict[str, Path]
    v2: Path | None

    def __init__(self, dirs: list[Path] | None = None, kill_file: Path | None = None, pids_max: int | None = None,
                 memory_max: int | None = None, swept: list[str] | None = None) -> None:
        self.dirs = list() if dirs is None else dirs
        self.kill_file = kill_file
        self.pids_max = pids_max
        self.memory_max = memory_max
        self.swept = list() if swept is None else swept
        self.name = ""
        self.bases = {}
        self.v2 = None

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(str(d / "cgroup.procs") for d in self.dirs)

    def kill(self) -> bool:
        """SIGKILL every member: cgroup.kill on v2, else a sweep of cgroup.procs."""
        if self.kill_file is not None:
            try:
                self.kill_file.write_text("1")
                return True
            except OSError:
                pass
        for d in self.dirs:
            _kill_members(d)
        return False

    def remove(self, wait: float = 2.0) -> None:
        for d in self.dirs:
            _rmdir(d, wait)

    def limit(self, pids_max: int | None, memory_max: int | None) -> None:
        """Bound the run: the v2 dir where it has the controller, else the controller's v1 dir
        (made now if ``make`` did not make it)."""
        v2 = self.v2
        if v2 is not None:
            if pids_max is not None and (v2 / "pids.max").exists() and _write(v2 / "pids.max", pids_max):
                self.pids_max = pids_max
            if memory_max is not None and (v2 / "memory.max").exists() and _write(v2 / "memory.max", memory_max):
                # Swap would let the worker go past the bound; zero where the file exists.
                _write(v2 / "memory.swap.max", 0)
                self.memory_max = memory_max
        for controller, value in (("pids", pids_max), ("memory", memory_max)):
            base = self.bases.get(controller)
            done = self.pids_max if controller == "pids" else self.memory_max
            if value is None or base is None or done is not None:
                continue
            d = base / self.name
            if d not in self.dirs:
                if _make(d) is None:
                    continue
                self.dirs.append(d)
            if not _write(d / _V1_LIMIT[controller], value):
                continue
            if controller == "pids":
                self.pids_max = value
            else:
                # memsw counts memory plus swap; it must be at least the memory limit, so it goes second.
                if (d / "memory.memsw.limit_in_bytes").exists():
                    _write(d / "memory.memsw.limit_in_bytes", value)
                self.memory_max = value

    def enter(self, pid: int) -> None:
        """Move process ``pid`` into every dir (the launcher started ahead, while it boots)."""
        for procs_file in self.procs_files:
            try:
                with open(procs_file, "w", encoding="ascii") as fh:
                    fh.write(str(pid))
            except OSError:
                pass  # the launcher joins what it is not in yet, and reports what it joined


def _write(path: Path, value: int) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:
        return False


def _make(d: Path) -> Path | None:
    try:
        d.mkdir(mode=0o755)
        return d
    except OSError:
        return None


def create(pids_max: int | None, memory_max: int | None = None, name: str | None = None) -> RunCgroups:
    """Make per-run cgroups where this process may (root, or a delegated subtree), after sweeping dead runs'."""
    out = make(name, pids=pids_max is not None, memory=memory_max is not None)
    out.limit(pids_max, memory_max)
    return out


def make(name: str | None = None, *, pids: bool = True, memory: bool = True) -> RunCgroups:
    """A run's cgroup dirs with no limits yet (``RunCgroups.limit`` sets them), after sweeping dead runs'.

    The v2 dir, and a v1 dir for each controller (``pids``, ``memory``) the v2 dir lacks. Made before
    the limits are known, a launcher started ahead can be moved in while it boots: the first move into
    a cgroup waits ~17 ms for the kernel (an RCU grace period), off the worker's path there.
    """
    bases = _bases()
    out = RunCgroups(swept=sweep_dead(bases))
    out.name, out.bases = name or run_name(), bases
    v2 = bases.get("")
    d = _make(v2 / out.name) if v2 is not None else None
    if d is not None:
        out.dirs.append(d)
        out.v2 = d
        if (d / "cgroup.kill").exists():
            out.kill_file = d / "cgroup.kill"
    for controller, v2_file, wanted in (("pids", "pids.max", pids), ("memory", "memory.max", memory)):
        if wanted and controller in bases and (d is None or not (d / v2_file).exists()):
            made = _make(bases[controller] / out.name)
            if made is not None:
                out.dirs.append(made)
    return out


_V1_LIMIT = {"pids": "pids.max", "memory": "memory.limit_in_bytes"}
