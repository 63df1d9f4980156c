"""A sandbox launcher started ahead of its run, so that its start overlaps the parent's stages before the worker."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from ..errors import WorkerFailed
from ..sandbox import AWAIT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..sandbox.cgroup import RunCgroups


def launcher_env() -> dict[str, str]:
    # The launcher must import this package from wherever it is installed, and nothing else.
    root = str(Path(__file__).resolve().parents[2])
    return {"PYTHONPATH": root, "LC_ALL": "C.UTF-8"}


def launcher_argv(*options: str) -> list[str]:
    return [sys.executable, "-S", "-P", "-m", "pipeline.sandbox", *options]


class Launcher:
    """A sandbox launcher started ahead of its run: it boots (and imports the built-in planner) while
    the parent reads the store and writes the run's inputs, and confines and starts the worker only
    once ``run_worker`` hands it the policy. Until then it has started nothing and can read nothing
    of the run: the policy, the run dir's name and the worker's argv do not exist for it yet.

    Meanwhile a thread makes the run's cgroups and moves the launcher into them: the first move into
    a cgroup waits ~17 ms for the kernel, which the launcher no longer waits for once it has its
    policy. Their limits are set by ``run_cgroups`` before the policy goes over, so before anything
    is forked in them. The same thread then works out the world-readable part of /etc the policy of a
    worker that execs grants (a walk of ~1,400 entries, ~9 ms), which the policy used to wait for; the
    built-in planner (``planner``) is granted no /etc, so its launcher walks none."""

    def __init__(self, proc: subprocess.Popen[bytes], policy_w: int, *, planner: bool = False) -> None:
        self.proc = proc
        self._policy_w: int | None = policy_w
        self._cgroups: RunCgroups | None = None
        self._etc: list[str] | WorkerFailed | None = None
        self._planner = planner
        self._entering = threading.Thread(target=self._prepare, name="memfold-launcher-prep", daemon=True)
        self._entering.start()

    def _prepare(self) -> None:
        from ..sandbox import cgroup
        from .confine import narrowed_etc

        made = cgroup.make()
        made.enter(self.proc.pid)
        self._cgroups = made
        if self._planner:
            return  # a policy that needs /etc after all works it out in etc_view
        try:
            self._etc = narrowed_etc()
        except WorkerFailed as exc:
            self._etc = exc  # raised where the policy needs it, as if worked out there

    def etc_view(self) -> list[str]:
        """``confine.narrowed_etc()`` as worked out while the launcher booted."""
        self._entering.join()
        if self._etc is None:  # the thread failed before it: worked out now
            from .confine import narrowed_etc

            self._etc = narrowed_etc()
        if isinstance(self._etc, WorkerFailed):
            raise self._etc
        return list(self._etc)

    def run_cgroups(self, pids_max: int | None, memory_max: int | None) -> RunCgroups:
        """The run's cgroups, the launcher in them, bounded by ``pids_max`` and ``memory_max``. They
        stay this launcher's to remove until ``hand_over``, then they are the run's."""
        self._entering.join()
        if self._cgroups is None:  # the thread failed: made now, the launcher joins them itself
            from ..sandbox import cgroup

            self._cgroups = cgroup.make()
        self._cgroups.limit(pids_max, memory_max)
        return self._cgroups

    def hand_over(self, policy_json: str) -> subprocess.Popen[bytes]:
        """Write the policy (never on disk: the env may hold API keys) and close the pipe: the launcher
        starts. A launcher that died meanwhile is reported by its exit status and stderr, as a spawn is."""
        fd, self._policy_w = self._policy_w, None
        if fd is None:
            raise WorkerFailed("the sandbox launcher was already used", code="worker.spawn")
        data = memoryview(policy_json.encode())
        try:
            while data:
                data = data[os.write(fd, data):]
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)
        self._cgroups = None  # the run's now: removed with its worker
        return self.proc

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Give up a launcher that was never handed a policy."""
        if self._policy_w is None:
            return  # handed over: the run it started is cleaned up by ``run_worker``
        # Without a policy it has forked nothing: stopping it stops everything it is. Killed before its
        # pipe closes, so that it never sees the close (and never starts its error path).
        self.proc.kill()
        self.proc.wait()
        os.close(self._policy_w)
        self._policy_w = None
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        self._entering.join()
        if self._cgroups is not None:
            self._cgroups.remove()  # empty: its only member was the launcher, and it is gone
            self._cgroups = None


def start_launcher(*, planner: bool) -> Launcher:
    """Start a launcher now for a worker that starts later (``run_worker(..., launcher=...)``); use it as
    a context manager, so that it is given up if it was never handed a policy. ``planner``: the worker
    will be the built-in planner."""
    policy_r, policy_w = os.pipe2(os.O_CLOEXEC)
    try:
        proc = subprocess.Popen(
            launcher_argv(AWAIT, str(policy_r), *(["--planner"] if planner else [])), cwd="/",
            env=launcher_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            close_fds=True, pass_fds=(policy_r,), start_new_session=True)
    except OSError as exc:
        os.close(policy_w)
        raise WorkerFailed(f"could not start the sandbox launcher: {exc}", code="worker.spawn") from exc
    finally:
        os.close(policy_r)
    return Launcher(proc, policy_w, planner=planner)
