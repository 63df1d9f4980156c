"""OS sandbox for untrusted workers: a policy, a self-applying launcher, and a capability probe."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from typing import Any


# Names protections to treat as absent, e.g. "landlock": how tests exercise the degraded path on
# a kernel that has Landlock. The shell reads it and hands it in (see ``absent_protections``); it
# can only weaken the sandbox of the built-in worker: a third-party worker is then refused, exactly
# as on a kernel without Landlock.
DISABLE_ENV = "MEMFOLD_SANDBOX_DISABLE"

EXIT_REFUSED = 125  # require_fs was set and Landlock could not be applied
EXIT_LAUNCHER_ERROR = 126  # the launcher itself failed before exec
EXIT_EXEC_FAILED = 127  # execvpe of the worker failed
MARKER = "memfold-sandbox:"  # prefix of the launcher's own stderr lines
AWAIT = "--await-policy"  # a launcher started ahead of its run reads the policy from this pipe

DEFAULT_RLIMITS: dict[str, int | None] = {
    "cpu": 600,
    "fsize": 256 << 20,
    # Node's module loader opens a package's files in parallel: Pi 0.73 needs ~300 descriptors
    # just to start and died of EMFILE at 256. 1024 is Linux's usual soft default.
    "nofile": 1024,
    "core": 0,
    "as": None,
    "data": None,
}

# What a run may use unless its worker config says otherwise. Threads count as processes for
# pids.max and RLIMIT_NPROC alike: an idle Node 20 process is 7 tasks, so 512 leaves room for
# dozens of tools. Node runs its heap and WebAssembly under RLIMIT_DATA of 1 GiB (not 512 MiB), so
# 4 GiB bounds a runaway without breaking an agent CLI; 1 GiB of scratch is far more than
# a plan run writes.
DEFAULT_LIMITS: dict[str, int] = {"processes": 512, "memory_mb": 4096, "scratch_mb": 1024}


# Field defaults shared by Policy and the launcher, which reads the JSON without
# importing dataclasses (that import alone costs ~20 ms on every worker start).
POLICY_DEFAULTS: dict[str, Any] = {
    "read_paths": ["/"],
    "write_paths": [],
    "network": False,
    "env": {},
    "rlimits": DEFAULT_RLIMITS,
    "pids_max": DEFAULT_LIMITS["processes"],
    "drop_caps": True,
    "require_fs": False,
    "report_path": None,
    "landlock": True,
    "seccomp": True,
    "pid_namespace": True,
    "cgroup_procs": [],
    "parent_pid": None,
    "absent": [],
    "in_process": False,
}


def _cgroup_writable() -> dict[str, Any]:
    from . import cgroup

    return cgroup.availability()


def absent_protections(env: Mapping[str, str]) -> tuple[str, ...]:
    """The protections ``env`` (the shell's environment, handed in) names as absent."""
    return tuple(sorted({name for name in env.get(DISABLE_ENV, "").replace(" ", "").split(",") if name}))


def probe(absent: Collection[str] = ()) -> dict[str, Any]:
    """What this machine can enforce, read from the kernel without changing this process."""
    from . import caps, landlock, seccomp

    uid = os.getuid()
    cap_sys_admin = bool(caps.effective_caps() & (1 << 21))
    try:
        with open("/proc/sys/user/max_user_namespaces", encoding="ascii") as fh:
            userns = int(fh.read().strip()) > 0
    except (OSError, ValueError):
        userns = False
    abi = landlock.abi_version(absent)
    return {
        "platform": "linux",
        "uid": uid,
        "landlock": {"abi": abi, "fs": abi >= 1, "net": abi >= 4, "scoped": abi >= 6},
        "seccomp": seccomp.available(),
        # Root can create a PID namespace directly; others need a user namespace first.
        "pid_namespace": cap_sys_admin or userns,
        "user_namespace": userns,
        "cgroup": _cgroup_writable(),
        "capabilities": "held" if caps.effective_caps() else "none",
    }
