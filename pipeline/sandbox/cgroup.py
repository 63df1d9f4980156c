"""Parent-side cgroup handling: a per-run cgroup for cgroup.kill and pids.max, best effort."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _mounts() -> tuple[Path | None, Path | None]:
    """(cgroup2 mount, cgroup v1 hierarchy carrying the pids controller)."""
    v2: Path | None = None
    v1_pids: Path | None = None
    try:
        with open("/proc/self/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 4:
                    continue
                if parts[2] == "cgroup2" and v2 is None:
                    v2 = Path(parts[1])
                elif parts[2] == "cgroup" and "pids" in parts[3].split(","):
                    v1_pids = Path(parts[1])
    except OSError:
        pass
    return v2, v1_pids


def _own(controller: str) -> str | None:
    """This process's cgroup path in the v2 tree (controller "") or a v1 hierarchy."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            for line in fh:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if (controller == "" and ctrls == "") or controller in ctrls.split(","):
                    return path
    except (OSError, ValueError):
        pass
    return None


def _base(mount: Path | None, controller: str) -> Path | None:
    own = _own(controller)
    if mount is None or own is None:
        return None
    base = mount / own.lstrip("/")
    return base if os.access(base, os.W_OK) else None


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        parts = os.uname().release.split(".")
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (major, minor)
    except (ValueError, IndexError):
        return False


def availability() -> dict[str, Any]:
    v2, v1 = _mounts()
    v2_base = _base(v2, "")
    pids_v2 = False
    if v2_base is not None:
        try:
            pids_v2 = "pids" in (v2_base / "cgroup.subtree_control").read_text().split()
        except OSError:
            pass
    return {
        "v2": v2_base is not None,
        "kill": v2_base is not None and _kernel_at_least(5, 14),
        "pids": pids_v2 or _base(v1, "pids") is not None,
    }


@dataclass
class RunCgroups:
    """The cgroups made for one run; ``procs_files`` go into the policy for the launcher."""

    dirs: list[Path] = field(default_factory=list)
    kill_file: Path | None = None
    pids_max: int | None = None

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
            for _ in range(3):
                pids = _members(d)
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                if not pids:
                    break
        return False

    def remove(self, wait: float = 2.0) -> None:
        end = time.monotonic() + wait
        for d in self.dirs:
            while True:
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > end:
                        break
                    time.sleep(0.01)  # members are still exiting


def _members(d: Path) -> list[int]:
    try:
        return [int(x) for x in (d / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def create(name: str, pids_max: int | None) -> RunCgroups:
    """Make per-run cgroups where this process may (root, or a delegated subtree)."""
    out = RunCgroups()
    v2, v1 = _mounts()
    v2_base = _base(v2, "")
    if v2_base is not None:
        d = v2_base / name
        try:
            d.mkdir(mode=0o755)
            out.dirs.append(d)
            if (d / "cgroup.kill").exists():
                out.kill_file = d / "cgroup.kill"
            if pids_max is not None and (d / "pids.max").exists():
                (d / "pids.max").write_text(str(pids_max))
                out.pids_max = pids_max
        except OSError:
            pass
    v1_base = _base(v1, "pids")
    if pids_max is not None and out.pids_max is None and v1_base is not None:
        d = v1_base / name
        try:
            d.mkdir(mode=0o755)
            out.dirs.append(d)
            (d / "pids.max").write_text(str(pids_max))
            out.pids_max = pids_max
        except OSError:
            pass
    return out
