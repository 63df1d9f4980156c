"""run_worker: bounded capture, timeout, stop, signals, descriptors, environment, spawn errors."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import survivors

from pipeline.errors import WorkerFailed
from pipeline.sandbox import landlock
from pipeline.worker.run import WorkerResult, WorkerSpec, build_env, run_worker, sandbox_description
from pipeline.worker.spawn import PlanEventWatch

WORKERS = Path(__file__).parent / "workers"
HOSTILE = WORKERS / "hostile.py"
ROOT = Path(__file__).resolve().parent.parent




def hostile(tmp_path: Path, attack: str, *args: str, timeout: float = 20, sandbox: bool = True,
            **kw: Any) -> tuple[WorkerResult, str]:
    token = f"tok-{secrets.token_hex(6)}"
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    spec = WorkerSpec(
        argv=(sys.executable, str(HOSTILE), attack, token, *args),
        cwd=scratch, env=build_env(os.environ, [], scratch), timeout=timeout, sandbox=sandbox,
    )
    res = run_worker(spec, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err", **kw)
    assert survivors(token) == []
    return res, token


def test_build_env_allowlist(tmp_path: Path) -> None:
    parent = {"PATH": "/bin", "LANG": "C", "LC_ALL": "C", "TERM": "xterm", "HOME": "/root",
              "AWS_SECRET_ACCESS_KEY": "k", "ANTHROPIC_API_KEY": "a", "TMPDIR": "/tmp"}
    env = build_env(parent, ["ANTHROPIC_API_KEY"], tmp_path)
    assert env["HOME"] == str(tmp_path / "home") and env["TMPDIR"] == str(tmp_path / "tmp")
    assert (tmp_path / "home").is_dir() and (tmp_path / "tmp").is_dir()
    assert set(env) == {"PATH", "LANG", "LC_ALL", "TERM", "HOME", "TMPDIR", "ANTHROPIC_API_KEY"}


def test_sandbox_description_of_probe_and_nothing() -> None:
    from pipeline.sandbox import probe

    desc = sandbox_description(probe())
    assert desc["enforced"] is (landlock.abi_version() >= 1)
    assert sandbox_description({})["enforced"] is False


@pytest.mark.integration
def test_normal_exit_and_protections_recorded(tmp_path: Path) -> None:
    res, _ = hostile(tmp_path, "write", str(tmp_path / "scratch" / "f"))
    assert res.returncode == 0 and not res.timed_out and res.killed_reason is None
    assert json.loads(res.stdout)["attack"] == "write"
    assert (tmp_path / "out").read_bytes() == res.stdout
    assert res.protections["kill"] in ("pid-namespace", "cgroup.kill", "subreaper+pidfd", "process-group")


@pytest.mark.integration
def test_started_is_called_once_the_launcher_runs_and_never_when_the_spawn_fails(tmp_path: Path) -> None:
    seen: list[bool] = []
    res, _ = hostile(tmp_path, "write", str(tmp_path / "scratch" / "f"),
                     started=lambda: seen.append((tmp_path / "out").exists()))
    # Called once, after the launcher was started and before the worker's output was collected.
    assert res.returncode == 0 and seen == [False]
    spec = WorkerSpec(argv=("no-such-worker-cli",), cwd=tmp_path, env={"PATH": "/usr/bin"}, timeout=5)
    with pytest.raises(WorkerFailed):
        run_worker(spec, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e", started=lambda: seen.append(True))
    assert seen == [False]


@pytest.mark.integration
def test_huge_stdout_is_cut_at_the_bound(tmp_path: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.monotonic()
    res, _ = hostile(tmp_path, "stdout", "100", stdout_limit=1 << 20)
    assert time.monotonic() - t < 15
    assert res.over_bound == "stdout" and res.killed_reason == "over-bound" and res.returncode is None
    assert len(res.stdout) == 1 << 20 and (tmp_path / "out").stat().st_size == 1 << 20
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB


@pytest.mark.integration
def test_huge_stderr_is_truncated_not_fatal(tmp_path: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res, _ = hostile(tmp_path, "stderr", "100", stderr_limit=1 << 20)
    assert res.returncode == 0 and res.over_bound is None and res.killed_reason is None
    assert res.stderr_dropped == 100 * (1 << 20) - (1 << 20)
    assert (tmp_path / "err").stat().st_size < (1 << 20) + 200
    assert b"bytes of stderr dropped" in (tmp_path / "err").read_bytes()
    assert res.stderr_tail.endswith(b"e" * 1000) and len(res.stderr_tail) <= 64 << 10
    assert json.loads(res.stdout)["attack"] == "stderr"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10


@pytest.mark.integration
def test_never_exiting_worker_times_out(tmp_path: Path) -> None:
    t = time.monotonic()
    res, _ = hostile(tmp_path, "hang", timeout=1)
    assert res.timed_out and res.killed_reason == "timeout" and res.returncode is None
    assert time.monotonic() - t < 5


def test_the_plan_watch_stops_on_a_whole_event_line_and_never_on_a_bare_plan() -> None:
    watch = PlanEventWatch()
    out = bytearray(b'{\n  "kind": "memory-consolidation-plan",\n  "operations": []\n')
    assert not watch(out)
    out += b'}\n{"type": "consolidation_'
    assert not watch(out)
    out += b'plan", "plan": {"operations": []}}'
    assert not watch(out)  # the event line is not complete yet
    out += b"\n"
    assert watch(out)


def test_the_plan_watch_ignores_a_mention_of_the_event_that_is_no_event() -> None:
    watch = PlanEventWatch()
    assert not watch(bytearray(b'{"note": "consolidation_plan"}\n{"type": "consolidation_plan", "plan": []}\n'))


@pytest.mark.integration
def test_stop_when_keeps_the_plan(tmp_path: Path) -> None:
    def done(out: bytes) -> bool:
        return out.endswith(b"}\n")

    res, _ = hostile(tmp_path, "plan-then-hang", timeout=20, stop_when=done)
    assert res.killed_reason == "stopped" and not res.timed_out
    assert json.loads(res.stdout) == {"schemaVersion": 1, "operations": []}
    assert res.duration_s < 10


@pytest.mark.integration
def test_lock_fd_is_not_inherited(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    os.set_inheritable(fd, True)  # the worst case: a descriptor without close-on-exec
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        res, _ = hostile(tmp_path, "fds")
    finally:
        os.close(fd)
    fds = json.loads(res.stdout)["fds"]
    assert str(lock) not in fds.values()
    # 0-2, plus the descriptor listdir itself held while listing (closed by the time of readlink).
    assert set(fds) <= {"0", "1", "2", "3"} and fds.get("3", "?") == "?"


@pytest.mark.integration
def test_unsafe_mode_still_kills_descendants(tmp_path: Path) -> None:
    marker = tmp_path / "scratch" / "marker"
    res, _ = hostile(tmp_path, "orphan", str(marker), "1", sandbox=False)
    assert res.protections["landlock"]["fs"] is False
    time.sleep(2)
    assert not marker.exists()


@pytest.mark.integration
def test_missing_command_is_a_spawn_error(tmp_path: Path) -> None:
    spec = WorkerSpec(argv=("no-such-worker-cli",), cwd=tmp_path, env={"PATH": "/usr/bin"}, timeout=5)
    with pytest.raises(WorkerFailed) as info:
        run_worker(spec, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    assert info.value.code == "worker.spawn" and info.value.exit_code == 4


@pytest.mark.integration
def test_unexecutable_file_is_a_spawn_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x01 not a program")
    bad.chmod(0o755)
    spec = WorkerSpec(argv=(str(bad),), cwd=tmp_path, env={"PATH": "/usr/bin"}, timeout=5)
    with pytest.raises(WorkerFailed) as info:
        run_worker(spec, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    assert info.value.code == "worker.spawn"


def test_required_fs_sandbox_missing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landlock, "abi_version", lambda absent=(): 0)
    spec = WorkerSpec(argv=("true",), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=5,
                      require_fs_sandbox=True)
    with pytest.raises(WorkerFailed) as info:
        run_worker(spec, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e")
    assert info.value.code == "worker.sandbox-unavailable"


@pytest.mark.integration
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_parent_interrupted_kills_everything(tmp_path: Path, signame: str) -> None:
    token = f"tok-{secrets.token_hex(6)}"
    proc = subprocess.run(
        [sys.executable, str(WORKERS / "interrupted_parent.py"), str(tmp_path), str(HOSTILE), token, signame],
        cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=30,
    )
    if signame == "SIGINT":
        assert proc.returncode == 130 and b"KeyboardInterrupt" in proc.stdout, proc.stderr
    else:
        assert proc.returncode == -signal.SIGTERM and b"returned" not in proc.stdout, proc.stderr
    assert survivors(token) == []
    assert not (tmp_path / "scratch").exists()  # deleted on the interrupt path too
    time.sleep(1.5)
    assert not (tmp_path / "marks" / "marker").exists()


def test_the_parent_reaches_the_worker_without_the_archive_modules() -> None:
    # shutil brings zlib, bz2 and lzma (~4 ms of every consolidation before the worker starts); it is
    # needed only to find a worker named without a path and to remove the scratch dir afterwards.
    code = ("import sys\n"
            "from pipeline import transaction\n"
            "from pipeline.worker import run, spawn\n"
            "from pipeline.sandbox import scratch, entry\n"
            "print(sorted(m for m in ('shutil', 'zlib', 'bz2', 'lzma') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "[]"


def test_a_worker_named_without_a_path_is_still_found_on_its_path(tmp_path: Path) -> None:
    from pipeline.worker.run import _resolve

    tool = tmp_path / "bin" / "planner-cli"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert _resolve("planner-cli", {"PATH": str(tool.parent)}) == str(tool)
    assert _resolve("planner-cli", {"PATH": str(tmp_path)}) is None


def test_the_check_after_the_launcher_is_reaped_never_counts_a_process_that_reused_its_pid(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from pipeline.sandbox.cgroup import RunCgroups
    from pipeline.worker.run import _watch

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    spec = WorkerSpec(argv=("true",), cwd=scratch, env={}, timeout=5, scratch=scratch, scratch_bytes=1 << 20,
                      memory_bytes=1 << 20)
    # This process stands for one that got the launcher's pid: it holds 2 MiB of an unlinked file
    # and far more than 1 MiB of memory.
    held = tmp_path / "held"
    with open(held, "wb") as fh:
        fh.write(os.urandom(2 << 20))
        fh.flush()
        os.fsync(fh.fileno())
        held.unlink()
        proc = SimpleNamespace(pid=os.getpid(), returncode=None)
        check, watched = _watch(spec, proc, RunCgroups())  # type: ignore[arg-type]
        assert check is not None and watched == {"scratch_max_bytes": 1 << 20, "memory_watch_bytes": 1 << 20}
        assert check() == "scratch-bytes"  # while the launcher runs, its tree's unlinked files count
        proc.returncode = 0  # reaped: its tree is gone, and the pid is someone else's
        assert check() is None
        (scratch / "big").write_bytes(os.urandom(2 << 20))
        assert check() == "scratch-bytes"  # the scratch dir itself is still measured
