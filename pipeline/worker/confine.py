"""The sandbox policy a worker spec asks for: what it may read and write, and its limits."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import WorkerFailed
from ..sandbox import DEFAULT_RLIMITS
from ..sandbox.policy import Policy

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..sandbox import cgroup
    from .spec import WorkerSpec

# Read+execute roots used when the caller narrows read_paths: what interpreters need to start.
# /etc is added as its world-readable part (readable.py) for a worker that execs; the built-in
# planner, run in the launcher's own process with its modules loaded, reads nothing of /etc (its
# date is the manifest's), so it gets none. Of /dev only four character devices: the rest holds
# other processes' terminals (keystrokes typed during a run) and /dev/shm files.
_SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/sys/devices/system/cpu")
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
SYSTEM_ETC = "/etc"


def policy_for(spec: WorkerSpec, report_path: Path, cg: cgroup.RunCgroups,
               etc: Callable[[], list[str]] | None = None) -> Policy:
    """What the launcher enforces for ``spec``: the paths it may read and write, limits, protections.

    ``etc``: what ``narrowed_etc`` returned (or raises) when worked out ahead, while the launcher booted.
    """
    if spec.read_paths and spec.sandbox:
        extra = {sys.prefix, sys.base_prefix, str(spec.cwd)}
        view = [] if spec.in_process else narrowed_etc() if etc is None else etc()
        system = [*_SYSTEM_READ, *DEVICES, *view]
        read = tuple(dict.fromkeys([*(str(p) for p in spec.read_paths), *system, *sorted(extra)]))
    else:
        read = ("/",)
    limits: dict[str, int | None] = dict(DEFAULT_RLIMITS)
    limits["cpu"] = max(1, int(spec.timeout) + 1)
    # Per process, for every uid: the cgroup bounds the whole tree only where one is writable.
    limits["data"] = spec.memory_bytes
    limits.update(spec.rlimits or {})
    return Policy(
        read_paths=read,
        write_paths=tuple(dict.fromkeys([str(spec.cwd), *(str(p) for p in spec.write_paths)])),
        network=spec.network,
        env=dict(spec.env),
        rlimits=limits,
        pids_max=spec.pids_max,
        # Always: in a user namespace even an unprivileged launcher holds capabilities.
        drop_caps=spec.sandbox,
        require_fs=spec.require_fs_sandbox,
        report_path=str(report_path),
        landlock=spec.sandbox,
        seccomp=spec.sandbox,
        pid_namespace=True,
        cgroup_procs=cg.procs_files,
        parent_pid=os.getpid(),
        absent=spec.absent,
        in_process=spec.in_process,
    )


def narrowed_etc() -> list[str]:
    """The world-readable part of /etc, for every uid; the run is refused if it cannot be computed.

    Owner bits would let a capability-less root worker read /etc/shadow, and group bits let
    an ordinary worker read what its groups may (ssl-cert keys): only what every user may
    read is granted. Falling back to the whole directory would reopen exactly that.
    """
    from ..sandbox.readable import NarrowingFailed, world_readable

    try:
        return world_readable(SYSTEM_ETC)
    except NarrowingFailed as exc:
        raise WorkerFailed(
            f"refused: the worker's view of {SYSTEM_ETC} could not be narrowed ({exc})",
            code="worker.etc-unnarrowable",
            hint=f"{SYSTEM_ETC} is unusually large or deep; remove stale entries from it, "
            "or pass --unsafe-no-sandbox to run without the sandbox",
            data={"root": SYSTEM_ETC},
        ) from None
