"""A launcher started ahead of its run: nothing started before its policy, the same confinement, stopped when unused."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import survivors

from pipeline.sandbox import AWAIT, EXIT_LAUNCHER_ERROR
from pipeline.worker.ahead import start_launcher
from pipeline.worker.run import WorkerSpec, build_env, run_worker

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = Path(__file__).parent / "workers" / "hostile.py"


def _children(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def _spec(tmp_path: Path, token: str, *attack: str) -> WorkerSpec:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    return WorkerSpec(argv=(sys.executable, str(HOSTILE), *attack[:1], token, *attack[1:]), cwd=scratch,
                      env=build_env(os.environ, [], scratch), timeout=20,
                      read_paths=(tmp_path, ROOT), write_paths=(scratch,))


@pytest.mark.integration
def test_a_launcher_started_ahead_starts_nothing_until_handed_a_policy_and_is_stopped_unused() -> None:
    launcher = start_launcher(planner=True)
    pid = launcher.proc.pid
    time.sleep(0.5)  # past its boot (and the planner's import): it now waits on the policy pipe
    assert launcher.proc.poll() is None and _children(pid) == []
    assert launcher.proc.stdout is not None and os.get_blocking(launcher.proc.stdout.fileno())
    with launcher:
        pass
    assert launcher.proc.returncode == -signal.SIGKILL
    assert not Path(f"/proc/{pid}").exists()


@pytest.mark.integration
def test_a_worker_through_a_launcher_started_ahead_is_confined_exactly_as_one_started_at_once(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    results = []
    for ahead in (False, True):
        token = f"tok-{secrets.token_hex(6)}"
        spec = _spec(tmp_path, token, "write", str(outside), str(tmp_path / "scratch" / "inside"))
        launcher = start_launcher(planner=False) if ahead else None
        res = run_worker(spec, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err", launcher=launcher)
        assert survivors(token) == [] and res.returncode == 0
        results.append(res)
        if launcher is not None:
            launcher.close()  # handed over: nothing left to stop
            assert launcher.proc.returncode == 0
    fresh, ahead_ = results
    assert fresh.protections == ahead_.protections and fresh.protections["reads"] == "narrowed"
    for res in results:
        verdicts = json.loads(res.stdout)
        assert verdicts[str(outside)] == "failed: PermissionError 13"
        assert verdicts[str(tmp_path / "scratch" / "inside")] == "succeeded"
    assert not outside.exists()


def test_a_launcher_whose_policy_pipe_closes_empty_exits_having_started_nothing() -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-S", "-P", "-m", "pipeline.sandbox", AWAIT, str(read_end)],
                            cwd=ROOT, pass_fds=(read_end,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PYTHONPATH": str(ROOT), "LC_ALL": "C.UTF-8"})
    os.close(read_end)
    os.close(write_end)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_LAUNCHER_ERROR and out == b""
    assert b"no policy: the run was given up before its worker started" in err


def test_the_launcher_writes_the_planner_bytecode_a_confined_worker_cannot(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "pipeline", tmp_path / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-S", "-P", "-m", "pipeline.sandbox", AWAIT, str(read_end), "--planner"],
                            cwd=tmp_path, pass_fds=(read_end,), stderr=subprocess.PIPE,
                            env={"PYTHONPATH": str(tmp_path), "LC_ALL": "C.UTF-8"})
    os.close(read_end)
    deadline = time.monotonic() + 30
    cache = tmp_path / "pipeline" / "planner" / "__pycache__"
    while not list(cache.glob("run.*.pyc")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.close(write_end)
    proc.communicate(timeout=30)
    assert [p.name.split(".")[0] for p in cache.glob("run.*.pyc")] == ["run"]
    assert list((tmp_path / "pipeline" / "store" / "__pycache__").glob("memory.*.pyc"))


def _writable_cgroups() -> bool:
    from pipeline.sandbox import cgroup

    return bool(cgroup._bases())


@pytest.mark.integration
@pytest.mark.skipif(not _writable_cgroups(), reason="no writable cgroup on this machine")
def test_a_launcher_started_ahead_waits_in_its_run_cgroups_which_go_with_it_when_it_is_given_up() -> None:
    launcher = start_launcher(planner=False)
    try:
        cg = launcher.run_cgroups(64, 256 << 20)
        assert cg.dirs and all(str(launcher.proc.pid) in Path(f).read_text().split() for f in cg.procs_files)
        assert cg.pids_max == 64 and cg.memory_max == 256 << 20
        assert len({d.name for d in cg.dirs}) == 1  # one run name in every hierarchy
        bounded = [d for d in cg.dirs if (d / "pids.max").exists() and (d / "pids.max").read_text().strip() == "64"]
        assert bounded
        assert _children(launcher.proc.pid) == []  # moved and bounded, it still has started nothing
    finally:
        launcher.close()
    assert launcher.proc.returncode == -signal.SIGKILL
    assert [d for d in cg.dirs if d.exists()] == []


def test_joining_a_cgroup_the_process_is_already_in_writes_nothing(tmp_path: Path) -> None:
    from pipeline.sandbox.procs import join_cgroups

    member, other = tmp_path / "member.procs", tmp_path / "other.procs"
    member.write_text(f"1\n{os.getpid()}\n")
    other.write_text("1\n")
    assert join_cgroups([str(member), str(other), str(tmp_path / "absent" / "cgroup.procs")]) == [str(member),
                                                                                                  str(other)]
    assert member.read_text() == f"1\n{os.getpid()}\n"  # listed already: left as it was
    assert other.read_text() == "0"  # not listed: this process wrote itself in ("0")


@pytest.mark.integration
def test_an_etc_that_cannot_be_narrowed_refuses_a_run_through_a_launcher_started_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.errors import WorkerFailed
    from pipeline.sandbox import readable

    # Worked out while the launcher boots, raised where the policy needs it, exactly as at once.
    monkeypatch.setattr(readable, "MAX_ENTRIES", 10)  # the real /etc has far more than 10 entries
    marker = tmp_path / "scratch" / "started"
    spec = _spec(tmp_path, "tok-etc").with_changes(argv=("/bin/sh", "-c", f"touch {marker}"))
    launcher = start_launcher(planner=False)
    with pytest.raises(WorkerFailed) as err:
        run_worker(spec, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err", launcher=launcher)
    assert err.value.code == "worker.etc-unnarrowable" and err.value.exit_code == 4
    launcher.close()
    assert launcher.proc.returncode == -signal.SIGKILL and not marker.exists()
    from pipeline.sandbox import cgroup

    assert [d for base in cgroup._bases().values() for d in base.glob(f"memfold-*-{os.getpid()}-*")] == []


def test_the_etc_a_launcher_started_ahead_grants_is_the_one_worked_out_at_once() -> None:
    from pipeline.worker.confine import narrowed_etc

    with start_launcher(planner=False) as launcher:
        assert launcher.etc_view() == narrowed_etc() and launcher.etc_view()


@pytest.mark.integration
def test_the_built_in_planner_is_granted_no_etc_and_its_launcher_walks_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sandbox import readable
    from pipeline.worker import confine

    walks: list[str] = []
    real = readable.world_readable
    monkeypatch.setattr(readable, "world_readable", lambda root, limit=None: (walks.append(root), real(root, limit))[1])
    spec = _spec(tmp_path, "tok-planner")
    planner = spec.with_changes(in_process=True)
    for planned, want_walks in ((True, []), (False, ["/etc"])):
        walks.clear()
        with start_launcher(planner=planned) as launcher:
            cg = launcher.run_cgroups(None, None)
            policy = confine.policy_for(planner if planned else spec, tmp_path / "report.json", cg,
                                        etc=launcher.etc_view)
            assert walks == want_walks
        etc = [p for p in policy.read_paths if p == "/etc" or p.startswith("/etc/")]
        # The planner's date comes from the manifest and its modules are loaded: nothing of /etc is
        # readable to it. A worker that execs still gets the world-readable part, and never the shadow file.
        assert (etc == []) is planned
        assert "/etc/shadow" not in etc and str(tmp_path) in policy.read_paths
