"""What one worker run is: its command, directory, environment, bounds and sandbox (immutable)."""

from __future__ import annotations

from pathlib import Path

from ..frozen import FrozenValue
from ..sandbox import DEFAULT_LIMITS
from ..sandbox import scratch as scratch_dir


class WorkerSpec(FrozenValue):
    __slots__ = ("argv", "cwd", "env", "timeout", "network", "sandbox", "require_fs_sandbox", "read_paths",
                 "write_paths", "rlimits", "pids_max", "memory_bytes", "scratch", "scratch_bytes", "scratch_entries",
                 "absent", "in_process")
    argv: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    timeout: float
    network: bool
    sandbox: bool
    require_fs_sandbox: bool
    read_paths: tuple[Path, ...]
    write_paths: tuple[Path, ...]
    rlimits: dict[str, int] | None
    pids_max: int | None
    memory_bytes: int | None
    # When set: the worker's scratch dir, bounded while it runs and deleted after the run.
    scratch: Path | None
    scratch_bytes: int
    scratch_entries: int
    # Protections to treat as absent (``sandbox.absent_protections`` of the shell's environment).
    absent: tuple[str, ...]
    # The worker is the built-in planner: the launcher runs it in the confined process (no second exec).
    in_process: bool

    def __init__(self, argv: tuple[str, ...], cwd: Path, env: dict[str, str], timeout: float, network: bool = False,
                 sandbox: bool = True, require_fs_sandbox: bool = False, read_paths: tuple[Path, ...] = (),
                 write_paths: tuple[Path, ...] = (), rlimits: dict[str, int] | None = None,
                 pids_max: int | None = DEFAULT_LIMITS["processes"],
                 memory_bytes: int | None = DEFAULT_LIMITS["memory_mb"] << 20, scratch: Path | None = None,
                 scratch_bytes: int = DEFAULT_LIMITS["scratch_mb"] << 20,
                 scratch_entries: int = scratch_dir.MAX_ENTRIES, absent: tuple[str, ...] = (),
                 in_process: bool = False) -> None:
        self._set(argv=argv, cwd=cwd, env=env, timeout=timeout, network=network, sandbox=sandbox,
                  require_fs_sandbox=require_fs_sandbox, read_paths=read_paths, write_paths=write_paths,
                  rlimits=rlimits, pids_max=pids_max, memory_bytes=memory_bytes, scratch=scratch,
                  scratch_bytes=scratch_bytes, scratch_entries=scratch_entries, absent=absent, in_process=in_process)
