"""The sandbox policy: a frozen, JSON-serialisable description of what the launcher applies."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from . import DEFAULT_LIMITS, DEFAULT_RLIMITS


@dataclass(frozen=True)
class Policy:
    """Everything the launcher applies to itself before exec; JSON round-trips exactly."""

    read_paths: tuple[str, ...] = ("/",)
    write_paths: tuple[str, ...] = ()
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    rlimits: dict[str, int | None] = field(default_factory=lambda: dict(DEFAULT_RLIMITS))
    # The process bound: pids.max where a cgroup is writable, RLIMIT_NPROC where it bounds anything.
    pids_max: int | None = DEFAULT_LIMITS["processes"]
    drop_caps: bool = True
    require_fs: bool = False
    report_path: str | None = None
    # Switches for the unsafe mode, where only containment (no survivors) is kept.
    landlock: bool = True
    seccomp: bool = True
    pid_namespace: bool = True
    # cgroup.procs files the launcher joins before forking (created by the parent).
    cgroup_procs: tuple[str, ...] = ()
    # The pid the launcher must be a child of: if it is not, that parent died before it could watch.
    parent_pid: int | None = None
    # Protections to treat as absent although the kernel has them (see ``sandbox.DISABLE_ENV``).
    absent: tuple[str, ...] = ()
    # The worker is the built-in planner (``argv`` is ``python -m pipeline.planner ...``): the confined
    # process runs it itself instead of starting a second interpreter that imports it all again.
    in_process: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Policy:
        raw: dict[str, Any] = json.loads(text)
        for key in ("read_paths", "write_paths", "cgroup_procs", "absent"):
            if key in raw:
                raw[key] = tuple(raw[key])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in raw.items() if k in known})
