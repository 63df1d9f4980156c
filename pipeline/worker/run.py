"""Run an untrusted worker: sandboxed spawn, bounded capture, timeout, and no surviving descendants."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from ..errors import WorkerFailed
from ..frozen import FrozenValue
from ..sandbox import EXIT_LAUNCHER_ERROR, EXIT_REFUSED, MARKER, cgroup, procs
from ..sandbox import scratch as scratch_dir
from .ahead import Launcher, launcher_argv, launcher_env
from .capture import Capture, Run, file_tail, pump
from .confine import policy_for
from .spec import WorkerSpec

ENV_ALLOW = ("PATH", "HOME", "LANG", "TERM", "TMPDIR")


class WorkerResult(FrozenValue):
    __slots__ = ("returncode", "stdout", "stderr_tail", "timed_out", "killed_reason", "over_bound", "duration_s",
                 "protections", "stderr_dropped")
    returncode: int | None
    stdout: bytes
    stderr_tail: bytes
    timed_out: bool
    killed_reason: str | None
    over_bound: str | None
    duration_s: float
    protections: dict[str, Any]
    stderr_dropped: int

    def __init__(self, returncode: int | None, stdout: bytes, stderr_tail: bytes, timed_out: bool,
                 killed_reason: str | None, over_bound: str | None, duration_s: float, protections: dict[str, Any],
                 stderr_dropped: int = 0) -> None:
        self._set(returncode=returncode, stdout=stdout, stderr_tail=stderr_tail, timed_out=timed_out,
                  killed_reason=killed_reason, over_bound=over_bound, duration_s=duration_s, protections=protections,
                  stderr_dropped=stderr_dropped)


def build_env(parent_env: Mapping[str, str], allow: Iterable[str], scratch: Path) -> dict[str, str]:
    """Allowlisted environment; HOME and TMPDIR are (created) directories inside ``scratch``."""
    names = set(ENV_ALLOW) | set(allow)
    env = {k: v for k, v in parent_env.items() if k in names or k.startswith("LC_")}
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env["TMPDIR"] = str(tmp)
    env.setdefault("PATH", os.defpath)
    return env


def sandbox_description(probe_or_report: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest/receipt view of a probe() or launcher report: what was (or can be) enforced."""
    from ..sandbox.describe import enforced

    return enforced(probe_or_report)


class _Terminated(Exception):
    """SIGTERM arrived while a worker was running; re-delivered after cleanup."""


def _report(path: Path | None) -> dict[str, Any]:
    """Merge the launcher's report lines (protections first, then the outcome)."""
    out: dict[str, Any] = {}
    if path is None:
        return out
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "outcome" in record:
            out["launcher_outcome"] = record
        elif isinstance(record, dict):
            out.update(record)
    return out


def _resolve(argv0: str, env: Mapping[str, str]) -> str | None:
    if "/" in argv0:
        return argv0 if os.access(argv0, os.X_OK) and not os.path.isdir(argv0) else None
    import shutil  # with zlib, bz2 and lzma ~4 ms: only for a worker named without a path

    return shutil.which(argv0, path=env.get("PATH", os.defpath))


def _spawn(spec: WorkerSpec, report_path: Path, stdout_path: Path,
           launcher: Launcher | None = None) -> tuple[subprocess.Popen[bytes], cgroup.RunCgroups]:
    """Start the launcher, or hand the policy to one started ahead (policy on a memfd or a pipe, never on
    disk: the env may hold API keys)."""
    if launcher is not None:
        # Already made, the launcher in them; on a failure here the launcher's close removes them.
        cg = launcher.run_cgroups(spec.pids_max, spec.memory_bytes)
        policy = policy_for(spec, report_path, cg, etc=launcher.etc_view)
        return launcher.hand_over(policy.to_json(argv=list(spec.argv), cwd=str(spec.cwd))), cg
    cg = cgroup.create(spec.pids_max, spec.memory_bytes)
    try:
        policy = policy_for(spec, report_path, cg)
    except WorkerFailed:
        cg.remove()
        raise
    fd = os.memfd_create("memfold-policy", os.MFD_CLOEXEC)
    try:
        os.write(fd, policy.to_json().encode())
        argv = launcher_argv("--policy-fd", str(fd), "--", *spec.argv)
        try:
            proc = subprocess.Popen(
                argv,
                cwd=spec.cwd,
                env=launcher_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
                pass_fds=(fd,),
                start_new_session=True,
            )
        except OSError as exc:
            cg.remove()
            raise WorkerFailed(
                f"could not start the sandbox launcher: {exc}", code="worker.spawn", data={"argv": list(spec.argv)}
            ) from exc
    finally:
        os.close(fd)
    return proc, cg


def _watch(spec: WorkerSpec, proc: subprocess.Popen[bytes],
           cg: cgroup.RunCgroups) -> tuple[Callable[[], str | None] | None, dict[str, int]]:
    """The bounds this process measures while the worker runs (``pump``'s check), and their report entries.

    Scratch always, with the files the tree holds open after unlinking them (they fill the
    disk as much, and no walk sees them); memory of the whole tree only where no memory
    cgroup holds it (RLIMIT_DATA bounds each process, not their sum). Everything the worker
    starts descends from the launcher: orphans are reparented to the namespace's init or
    to the subreaper. Once the launcher is reaped its tree is gone (the namespace's init died
    with it, a subreaper swept it, and any other orphan now descends from the system's init),
    so the check after the run measures the scratch dir only: walking /proc then could only
    count an unrelated process that reused the launcher's pid.
    """
    checks: list[Callable[[], str | None]] = []
    watched: dict[str, int] = {}
    if spec.scratch is not None:
        root, most, entries = spec.scratch, spec.scratch_bytes, spec.scratch_entries
        watched["scratch_max_bytes"] = most

        def scratch() -> str | None:
            used = scratch_dir.usage(root, entries)
            if proc.returncode is None:
                used = used.with_changes(bytes=used.bytes + procs.unlinked_bytes(procs.tree_of(proc.pid)))
            broken = used.over(most, entries)
            return None if broken is None else f"scratch-{broken}"

        checks.append(scratch)
    memory = spec.memory_bytes
    if memory is not None and cg.memory_max is None:
        watched["memory_watch_bytes"] = memory
        def tree_memory() -> str | None:
            alive = proc.returncode is None
            return "memory" if alive and procs.memory_of(procs.tree_of(proc.pid)) > memory else None

        checks.append(tree_memory)
    if not checks:
        return None, watched

    def check() -> str | None:
        return next((broken for broken in (c() for c in checks) if broken is not None), None)

    return check, watched


def run_worker(
    spec: WorkerSpec,
    *,
    stdout_path: Path,
    stderr_path: Path,
    stdout_limit: int = 16 << 20,
    stderr_limit: int = 1 << 20,
    stop_when: Callable[[bytearray], bool] | None = None,
    launcher: Launcher | None = None,
    started: Callable[[], object] | None = None,
    defer: Callable[[Callable[[], object]], object] | None = None,
) -> WorkerResult:
    """Run ``spec`` to completion, timeout, stop or bound; every descendant is dead on return.

    stdout is kept (in memory and in ``stdout_path``) up to ``stdout_limit``; one
    byte more kills the worker (``over_bound="stdout"``). stderr is never fatal:
    ``stderr_path`` keeps the first and last ``stderr_limit // 2`` bytes with a
    note of how much was dropped between them. A nonzero exit is not an error here.
    ``stop_when`` is shown the stdout buffer itself after each read; it must not keep or change it.
    ``launcher``: one started ahead by ``start_launcher``, used instead of starting one now.
    ``started``: called once the launcher has its policy (the worker is on its way).
    ``defer``: given the scratch dir's removal (once nothing is alive to write there) to run later
    instead of before this returns; the caller runs it before it reads or settles the run dir.
    """
    if not spec.argv:
        raise WorkerFailed("empty worker command", code="worker.spawn")
    if _resolve(spec.argv[0], spec.env) is None:
        raise WorkerFailed(
            f"worker command not found or not executable: {spec.argv[0]}",
            code="worker.spawn",
            hint="check the worker command and PATH in the worker config",
            data={"argv": list(spec.argv)},
        )
    if spec.sandbox and spec.require_fs_sandbox:
        from ..sandbox import landlock

        if landlock.abi_version(spec.absent) < 1:
            raise WorkerFailed(
                "no filesystem sandbox (Landlock) on this kernel",
                code="worker.sandbox-unavailable",
                hint="use the built-in worker, or pass --unsafe-no-sandbox",
            )
    report_path = stdout_path.with_name(stdout_path.name + ".sandbox.json")
    report_path.unlink(missing_ok=True)
    main_thread = threading.current_thread() is threading.main_thread()
    old: dict[int, Any] = {}

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        raise _Terminated()

    start = time.monotonic()
    run: Run | None = None
    cap = Capture()
    terminated = False
    timed_out = False
    killed: str | None = None
    over: str | None = None
    watched: dict[str, int] = {}
    try:
        if main_thread:
            old[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
            old[signal.SIGTERM] = signal.signal(signal.SIGTERM, on_term)
        proc, cg = _spawn(spec, report_path, stdout_path, launcher)
        run = Run(proc, cg, report_path)
        if started is not None:
            started()
        assert proc.stdout is not None and proc.stderr is not None
        check, watched = _watch(spec, proc, cg)
        with open(stdout_path, "wb") as out_f, open(stderr_path, "wb") as err_f:
            timed_out, killed, over = pump(
                run, spec.timeout, start, out_f, err_f, cap, stdout_limit, stderr_limit, stop_when, check
            )
            if over is None and check is not None and (over := check()) is not None:
                killed = "over-bound"  # it wrote past the bound between two checks, then exited
            if cap.dropped:
                err_f.write(f"\n[{MARKER} {cap.dropped} bytes of stderr dropped]\n".encode())
            err_f.write(cap.tail)
    except _Terminated:
        terminated = True
    finally:
        if run is not None:
            if run.proc.returncode is None:
                run.kill_all()
            run.cg.remove()
            for pipe in (run.proc.stdout, run.proc.stderr):
                if pipe is not None:
                    pipe.close()
        if spec.scratch is not None:
            # Nothing is alive to write there any more; nothing of the run reads it afterwards.
            where = spec.scratch
            if defer is None:
                scratch_dir.remove(where)
            else:
                defer(lambda: scratch_dir.remove(where))
        _restore(old)
    if terminated:
        # Everything is dead and the old handler is back: deliver SIGTERM as if never caught.
        signal.raise_signal(signal.SIGTERM)
        raise WorkerFailed("interrupted by SIGTERM", code="worker.interrupted")
    assert run is not None
    duration = time.monotonic() - start
    report = {**_report(report_path), **watched}
    rc = run.proc.returncode
    tail = file_tail(stderr_path)
    if killed is None and rc == EXIT_REFUSED and report.get("refused"):
        raise WorkerFailed(
            f"worker refused: {report['refused']}",
            code="worker.sandbox-unavailable",
            hint="use the built-in worker, or pass --unsafe-no-sandbox",
            data={"protections": report},
        )
    outcome = report.get("launcher_outcome") or {}
    if killed is None and outcome.get("outcome") == "exec-failed":
        raise WorkerFailed(
            f"could not execute worker {spec.argv[0]}: {outcome.get('error')}",
            code="worker.spawn",
            data={"argv": list(spec.argv), "protections": report},
        )
    if killed is None and rc == EXIT_LAUNCHER_ERROR and f"{MARKER} launcher-error".encode() in tail:
        raise WorkerFailed(
            "the sandbox launcher failed before starting the worker",
            code="worker.spawn",
            data={"stderr": tail.decode(errors="replace")[-2000:]},
        )
    return WorkerResult(
        returncode=None if killed else rc,
        stdout=bytes(cap.stdout),
        stderr_tail=tail,
        timed_out=timed_out,
        killed_reason=killed,
        over_bound=over,
        duration_s=duration,
        protections=report,
        stderr_dropped=cap.dropped,
    )


def _restore(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)
    old.clear()


