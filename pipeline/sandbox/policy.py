"""The sandbox policy: a frozen, JSON-serialisable description of what the launcher applies."""

from __future__ import annotations

import json
from typing import Any

from ..frozen import FrozenValue
from . import DEFAULT_LIMITS, DEFAULT_RLIMITS


class Policy(FrozenValue):
    """Everything the launcher applies to itself before exec; JSON round-trips exactly."""

    __slots__ = ("read_paths", "write_paths", "network", "env", "rlimits", "pids_max", "drop_caps", "require_fs",
                 "report_path", "landlock", "seccomp", "pid_namespace", "cgroup_procs", "parent_pid", "absent",
                 "in_process")
    read_paths: tuple[str, ...]
    write_paths: tuple[str, ...]
    network: bool
    env: dict[str, str]
    rlimits: dict[str, int | None]
    # The process bound: pids.max where a cgroup is writable, RLIMIT_NPROC where it bounds anything.
    pids_max: int | None
    drop_caps: bool
    require_fs: bool
    report_path: str | None
    # Switches for the unsafe mode, where only containment (no survivors) is kept.
    landlock: bool
    seccomp: bool
    pid_namespace: bool
    # cgroup.procs files the launcher joins before forking (created by the parent).
    cgroup_procs: tuple[str, ...]
    # The pid the launcher must be a child of: if it is not, that parent died before it could watch.
    parent_pid: int | None
    # Protections to treat as absent although the kernel has them (see ``sandbox.DISABLE_ENV``).
    absent: tuple[str, ...]
    # The worker is the built-in planner (``argv`` is ``python -m pipeline.planner ...``): the confined
    # process runs it itself instead of starting a second interpreter that imports it all again.
    in_process: bool

    def __init__(self, read_paths: tuple[str, ...] = ("/",), write_paths: tuple[str, ...] = (), network: bool = False,
                 env: dict[str, str] | None = None, rlimits: dict[str, int | None] | None = None,
                 pids_max: int | None = DEFAULT_LIMITS["processes"], drop_caps: bool = True, require_fs: bool = False,
                 report_path: str | None = None, landlock: bool = True, seccomp: bool = True,
                 pid_namespace: bool = True, cgroup_procs: tuple[str, ...] = (), parent_pid: int | None = None,
                 absent: tuple[str, ...] = (), in_process: bool = False) -> None:
        self._set(read_paths=read_paths, write_paths=write_paths, network=network, env={} if env is None else env,
                  rlimits=dict(DEFAULT_RLIMITS) if rlimits is None else rlimits, pids_max=pids_max, drop_caps=drop_caps,
                  require_fs=require_fs, report_path=report_path, landlock=landlock, seccomp=seccomp,
                  pid_namespace=pid_namespace, cgroup_procs=cgroup_procs, parent_pid=parent_pid, absent=absent,
                  in_process=in_process)

    def to_json(self, **extra: Any) -> str:
        """The policy as the launcher reads it; ``extra`` adds what a launcher started ahead of its run
        learns with it (``argv``, ``cwd``)."""
        return json.dumps({**{name: getattr(self, name) for name in self.__slots__}, **extra}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Policy:
        raw: dict[str, Any] = json.loads(text)
        for key in ("read_paths", "write_paths", "cgroup_procs", "absent"):
            if key in raw:
                raw[key] = tuple(raw[key])
        known = set(cls.__slots__)
        return cls(**{k: v for k, v in raw.items() if k in known})
