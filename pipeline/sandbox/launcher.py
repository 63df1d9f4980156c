"""The launcher: joins cgroups, enters a PID namespace, forks an unconfined init that confines and execs the worker."""

from __future__ import annotations

import json
import os
import select
import signal

from . import (
    EXIT_EXEC_FAILED,
    EXIT_LAUNCHER_ERROR,
    EXIT_REFUSED,
    MARKER,
    caps,
    kernel,
    landlock,
    procs,
    seccomp,
)

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, NoReturn

    from .policy import Policy


def _say(message: str) -> None:
    try:
        os.write(2, f"{MARKER} {message}\n".encode())
    except OSError:
        pass


def _open_report(path: str | None) -> int | None:
    if not path:
        return None
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, 0o600)
    except OSError:
        return None


def _append_report(fd: int | None, record: dict[str, Any]) -> None:
    if fd is None:
        return
    try:
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _close_fds(*keep: int | None) -> None:
    """Close every descriptor >= 3 except ``keep`` (close-on-exec, so they die at exec too)."""
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd >= 3 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _confine(policy: Policy, base: dict[str, Any]) -> dict[str, Any]:
    """Apply rlimits, no_new_privs, Landlock, capability drop and seccomp to this process."""
    report = dict(base)
    limits = dict(policy.rlimits)
    nproc = procs.nproc_limit(policy.pids_max, base.get("namespace_mode"))
    if nproc is not None:
        limits["nproc"] = nproc
    report["rlimits"] = caps.apply_rlimits(limits)
    report["no_new_privs"] = caps.set_no_new_privs()
    ll: dict[str, Any] = {"abi": landlock.abi_version(policy.absent), "fs": False, "net": False, "scoped": False}
    if policy.landlock and report["no_new_privs"]:
        try:
            ll = landlock.restrict(policy.read_paths, policy.write_paths, network=policy.network, abi=ll["abi"])
        except OSError as exc:
            ll["error"] = str(exc)
    report["landlock"] = ll
    report["capabilities"] = caps.drop_all() if policy.drop_caps else "kept"
    sc: dict[str, Any] = {"sockets": "allowed", "installed": False}
    if policy.seccomp and report["no_new_privs"] and seccomp.available():
        try:
            sc = {**seccomp.install(policy.network), "installed": True}
        except OSError as exc:
            sc["error"] = str(exc)
    report["seccomp"] = sc
    # What the rules above let the worker read: "narrowed" is the run dir, the roots, the project,
    # the system dirs, four device files and, for a worker that execs, the world-readable part of /etc.
    report["reads"] = "whole-filesystem" if "/" in policy.read_paths else "narrowed"
    report["uid"] = os.getuid()
    return report


def _untraceable() -> None:
    """Make this process non-dumpable: a same-uid process without CAP_SYS_PTRACE can then neither
    copy its descriptors (pidfd_getfd), nor read or write its memory, nor open its /proc fds."""
    kernel.prctl(kernel.PR_SET_DUMPABLE, 0)


def _init(policy: Policy, argv: list[str], base: dict[str, Any], status_w: int, lifeline_r: int) -> NoReturn:
    """The launcher's child: PID 1 of the namespace (or plain child), forks the worker, reaps, reports.

    It stays unconfined and outside the worker's Landlock domain, and holds the only write
    end of the status pipe after the worker's exec: the worker cannot signal it (Landlock's
    signal scope), trace it or take that descriptor (non-dumpable, seccomp), so the outcome
    it reports is the worker's real one.
    """
    try:
        # If the outer launcher dies, so do we; the lifeline catches a death before prctl.
        kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
        _untraceable()
        # As PID 1, signals without a handler are ignored; Python's SIGINT handler is dropped.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if select.select([lifeline_r], [], [], 0)[0]:
            os._exit(EXIT_LAUNCHER_ERROR)
        worker = os.fork()
        if worker == 0:
            _exec_worker(policy, argv, base, status_w)
        while True:
            pid, status = os.wait()  # as PID 1 this also reaps orphaned descendants
            if pid == worker:
                break
        if os.WIFSIGNALED(status):
            os.write(status_w, f"signal {os.WTERMSIG(status)}\n".encode())
            os._exit(128 + os.WTERMSIG(status))
        code = os.waitstatus_to_exitcode(status)
        os.write(status_w, f"exit {code}\n".encode())
        os._exit(code)
    except BaseException as exc:  # never fall back into the caller's stack in a forked child
        _say(f"launcher-error {type(exc).__name__}: {exc}")
        os._exit(EXIT_LAUNCHER_ERROR)


def _exec_worker(policy: Policy, argv: list[str], base: dict[str, Any], status_w: int) -> NoReturn:
    """The worker's process before exec: confine, record what is in force, exec."""
    try:
        # Opened before Landlock: the run dir holding it is read-only for the worker.
        report_fd = _open_report(policy.report_path)
        _close_fds(status_w, report_fd)
        report = _confine(policy, base)
        # Inherited from init until the exec: it says init is out of the worker's reach.
        report["supervisor"] = "non-dumpable" if kernel.prctl(kernel.PR_GET_DUMPABLE) == 0 else "dumpable"
        report["worker_start"] = "in-process" if policy.in_process else "exec"
        if policy.require_fs and not report["landlock"]["fs"]:
            report["refused"] = "landlock unavailable"
            _append_report(report_fd, report)
            _say("refused: filesystem sandbox (Landlock) unavailable and required")
            os._exit(EXIT_REFUSED)
        # The report is written (and its descriptor closed) before any worker code runs, so the
        # worker cannot forge it; status_w is close-on-exec and leaves with the exec.
        _append_report(report_fd, report)
        # Python ignores these; exec keeps ignored signals ignored, so restore defaults.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        if policy.in_process:
            os.close(status_w)
            _run_planner(argv, policy.env)
        try:
            os.execvpe(argv[0], argv, policy.env)
        except OSError as exc:
            os.write(status_w, f"exec-failed {exc.errno} {exc.strerror}\n".encode())
            os._exit(EXIT_EXEC_FAILED)
    except BaseException as exc:
        _say(f"launcher-error {type(exc).__name__}: {exc}")
        os._exit(EXIT_LAUNCHER_ERROR)


PLANNER = ("-m", "pipeline.planner")


class _SiteOnDemand:
    """Last on ``sys.meta_path``: the first import no other finder resolves runs ``site.main()`` (the
    site directories and their .pth files, as an exec'd interpreter gets them) and is looked up again."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None,
                  /) -> ModuleSpec | None:
        import sys

        if self in sys.meta_path:
            sys.meta_path.remove(self)
        import site

        site.main()
        if path is not None:
            return None  # a submodule its package does not have: the site directories change nothing
        from importlib.machinery import PathFinder

        return PathFinder.find_spec(name)


def _run_planner(argv: list[str], env: dict[str, str]) -> NoReturn:
    """The built-in planner, run by this confined process instead of an exec of a second interpreter.

    Everything the exec would have given it is set up here: the worker's environment, the import
    path its ``PYTHONPATH`` names, a dumpable process (exec resets it), no descriptor of the supervisor
    (``status_w`` is closed), and an exit status with a traceback for anything uncaught. The site
    directories (this process started with -S, as it preloaded the planner) are added by the first
    import that nothing else finds (``_SiteOnDemand``): a plan needs only the standard library and this
    package, unless a memory's frontmatter needs PyYAML, and running ``site`` up front, after the policy
    arrived, cost ~4 ms of every consolidation.
    Confinement is already in force, and the report written: it describes this process.
    """
    if tuple(argv[1:3]) != PLANNER:
        _say(f"launcher-error in-process worker is not the built-in planner: {argv[:3]}")
        os._exit(EXIT_LAUNCHER_ERROR)
    import sys

    os.environ.clear()
    os.environ.update(env)
    sys.path[:0] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.meta_path.append(_SiteOnDemand())
    sys.argv = [argv[2], *argv[3:]]
    kernel.prctl(kernel.PR_SET_DUMPABLE, 1)
    code = 1
    try:
        from ..planner.run import main as plan

        code = plan()
    except BaseException:
        import traceback

        traceback.print_exc()
    from ..errors import exit_flushed

    exit_flushed(code)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _watch_parent(expected: int | None) -> int | None:
    """Die with the parent: a parent-death signal, plus a pidfd the wait loop polls.

    The parent may already be gone before prctl ran (we were reparented): then stop at once.
    """
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGTERM)
    parent = os.getppid()
    if expected is not None and parent != expected:
        _say("parent exited before the worker started")
        os._exit(EXIT_LAUNCHER_ERROR)
    try:
        return os.pidfd_open(parent)
    except OSError:
        return None  # kernels before 5.3: the parent-death signal alone


def _wait_status(status_r: int, parent_fd: int | None, parent_gone: Callable[[], None]) -> list[str]:
    """The init's status lines until it closes the pipe; ``parent_gone`` runs if the parent dies first."""
    poller = select.poll()
    poller.register(status_r, select.POLLIN)
    if parent_fd is not None:
        poller.register(parent_fd, select.POLLIN)
    chunks: list[bytes] = []
    while True:
        for fd, _ in poller.poll():
            if fd == parent_fd:
                parent_gone()
                continue
            data = os.read(status_r, 4096)
            if not data:
                return b"".join(chunks).decode(errors="replace").splitlines()
            chunks.append(data)


def launch(policy: Policy, argv: list[str]) -> int:
    """Join cgroups, enter a PID namespace, fork the supervising child, wait, relay status."""
    parent_fd = _watch_parent(policy.parent_pid)
    joined = procs.join_cgroups(policy.cgroup_procs)
    mode = procs.enter_pid_namespace() if policy.pid_namespace else None
    # After the namespace: a non-dumpable process may no longer write its own uid_map.
    # From here it holds the policy, whose env may carry the worker's API keys, out of reach.
    _untraceable()
    me = os.getpid()
    subreaper = mode is None and procs.set_subreaper()
    cgroup_kill = any(os.path.exists(os.path.join(os.path.dirname(p), "cgroup.kill")) for p in joined)
    mechanisms = [name for name, on in (("pid-namespace", mode is not None), ("cgroup.kill", cgroup_kill),
                                        ("subreaper+pidfd", subreaper), ("process-group", True)) if on]
    base: dict[str, Any] = {
        "pid_namespace": mode is not None,
        "namespace_mode": mode,
        "pids_max": _cgroup_limit(joined, "pids.max"),
        "memory_max": _cgroup_limit(joined, "memory.max", "memory.limit_in_bytes"),
        "cgroups": len(joined),
        "kill": mechanisms[0],
        "kill_mechanisms": mechanisms,
        "parent_death": "pidfd" if parent_fd is not None else "signal",
    }
    status_r, status_w = os.pipe2(os.O_CLOEXEC)
    lifeline_r, lifeline_w = os.pipe2(os.O_CLOEXEC)
    # A stop request between fork and the handlers below waits, instead of killing us with a child left.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    child = os.fork()
    if child == 0:
        os.close(status_r)
        os.close(lifeline_w)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        _init(policy, argv, base, status_w, lifeline_r)
    os.close(status_w)
    os.close(lifeline_r)

    reaped = False

    def stop(signum: int, _frame: object) -> None:
        # The parent asks for a stop, or died: kill the confined tree and wait until it is gone, so
        # our own exit tells the parent that nothing is left (PID 1's exit reaps the namespace).
        if not reaped:
            try:
                os.kill(child, signal.SIGKILL)
                os.waitpid(child, 0)
            except OSError:
                pass
        if subreaper:
            procs.sweep(me)
        os._exit(128 + signum)

    for sig in _STOP_SIGNALS:
        signal.signal(sig, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    messages = _wait_status(status_r, parent_fd, lambda: stop(signal.SIGTERM, None))
    _, status = os.waitpid(child, 0)
    reaped = True
    if subreaper:
        procs.sweep(me)
    outcome: dict[str, Any] = {"outcome": "exit"}
    for line in messages:
        word, _, rest = line.partition(" ")
        if word == "exec-failed":
            outcome = {"outcome": "exec-failed", "error": rest}
            _say(f"exec-failed {argv[0]}: {rest}")
        elif word == "signal" and outcome["outcome"] == "exit":
            outcome = {"outcome": "signal", "signal": int(rest)}
        elif word == "exit" and outcome["outcome"] == "exit":
            outcome["code"] = int(rest)
    _append_report(_open_report(policy.report_path), outcome)
    if outcome["outcome"] == "signal":
        signal.signal(outcome["signal"], signal.SIG_DFL)
        os.kill(me, outcome["signal"])
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else EXIT_LAUNCHER_ERROR


def _cgroup_limit(joined: list[str], *names: str) -> int | None:
    """The tightest limit among the joined cgroups' files ``names``, None when unlimited or absent."""
    values = []
    for procs_file in joined:
        for name in names:
            try:
                with open(os.path.join(os.path.dirname(procs_file), name), encoding="ascii") as fh:
                    text = fh.read().strip()
            except OSError:
                continue
            # v1 spells "unlimited" as the largest page-aligned value.
            if text.isdigit() and int(text) < 1 << 62:
                values.append(int(text))
    return min(values) if values else None
