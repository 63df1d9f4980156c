"""The project lock: exclusive across processes, owner info while held, gone when released or killed."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from pipeline.apply.lock import describe_owner, project_lock, read_owner
from pipeline.errors import LockHeld

RUN = "20261130T120000Z-0badc0de"
HOLD = ("import sys, time\nfrom pathlib import Path\nfrom pipeline.apply.lock import project_lock\n"
        "d = Path(sys.argv[1])\n"
        "with project_lock(d / 'lock', d / 'lock.json', run_id=sys.argv[2], operation='consolidate', timeout=5,"
        " now='2026-11-30T12:00:00Z'):\n    print('locked', flush=True)\n    time.sleep(60)\n")


def _holder(directory: Path, run_id: str = RUN) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory), run_id], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_the_holder_is_recorded_while_held_and_forgotten_after(tmp_path: Path) -> None:
    with project_lock(tmp_path / "lock", tmp_path / "lock.json", run_id=RUN, operation="add", timeout=0,
                      now="2026-11-30T12:00:00Z") as owner:
        on_disk = json.loads((tmp_path / "lock.json").read_bytes())
        assert on_disk == owner
        assert on_disk["runId"] == RUN and on_disk["operation"] == "add" and on_disk["pid"] == os.getpid()
    # The record stays as an empty file: no owner, and no entry to create or delete on the next write.
    assert (tmp_path / "lock.json").read_bytes() == b""
    assert read_owner(tmp_path / "lock.json") is None
    assert (tmp_path / "lock").exists()


def test_the_record_is_written_in_place_but_never_through_a_second_link(tmp_path: Path) -> None:
    info = tmp_path / "lock.json"
    with project_lock(tmp_path / "lock", info, run_id=RUN, operation="add", timeout=0, now="2026-11-30T12:00:00Z"):
        pass
    inode = info.stat().st_ino
    with project_lock(tmp_path / "lock", info, run_id=RUN, operation="update", timeout=0,
                      now="2026-11-30T12:00:01Z") as owner:
        assert info.stat().st_ino == inode and json.loads(info.read_bytes()) == owner
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(b"keep me")
    info.unlink()
    os.link(elsewhere, info)
    with project_lock(tmp_path / "lock", info, run_id=RUN, operation="forget", timeout=0,
                      now="2026-11-30T12:00:02Z") as owner:
        assert json.loads(info.read_bytes()) == owner
    assert elsewhere.read_bytes() == b"keep me"
    assert not info.exists()


def test_a_second_process_waits_its_timeout_then_names_the_holder(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(LockHeld) as exc:
            with project_lock(tmp_path / "lock", tmp_path / "lock.json", run_id="20261130T120001Z-00000001",
                              operation="add", timeout=0.3, now="2026-11-30T12:00:01Z"):
                pytest.fail("the lock was taken twice")
        assert time.monotonic() - started >= 0.3
        assert exc.value.exit_code == 3 and exc.value.code == "lock.held"
        assert exc.value.data["holder"]["runId"] == RUN
        assert f"run {RUN} (consolidate, pid {proc.pid}" in exc.value.message
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_frees_the_lock_at_once(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with project_lock(tmp_path / "lock", tmp_path / "lock.json", run_id="20261130T120002Z-00000002",
                      operation="add", timeout=0, now="2026-11-30T12:00:02Z") as owner:
        assert owner["pid"] == os.getpid()


def test_the_lock_descriptor_is_not_inherited_by_a_worker(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    with project_lock(lock, tmp_path / "lock.json", run_id=RUN, operation="consolidate", timeout=0,
                      now="2026-11-30T12:00:00Z"):
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")
               if os.path.realpath(f"/proc/self/fd/{fd}") == str(lock.resolve())]
        assert len(fds) == 1
        assert fcntl.fcntl(fds[0], fcntl.F_GETFD) & fcntl.FD_CLOEXEC


def test_an_unknown_holder_is_described_without_inventing_one() -> None:
    assert describe_owner(None) == "another memfold process"
    assert describe_owner({"runId": "r", "operation": "add"}) == "run r (add, pid ? on ?, since ?)"


def test_a_refusal_after_waiting_says_how_long_it_waited(tmp_path: Path) -> None:
    holder = _holder(tmp_path)
    try:
        started = time.monotonic()
        with pytest.raises(LockHeld) as exc, project_lock(tmp_path / "lock", tmp_path / "lock.json", run_id="r2",
                                                          operation="consolidate", timeout=0.3, now="x"):
            pass
        assert time.monotonic() - started >= 0.3
        assert exc.value.message.endswith("(waited 0.3 s for it)") and f"pid {holder.pid}" in exc.value.message
        assert exc.value.data["waitedSeconds"] == 0.3
        with pytest.raises(LockHeld) as at_once, project_lock(tmp_path / "lock", tmp_path / "lock.json",
                                                              run_id="r3", operation="consolidate", timeout=0,
                                                              now="x"):
            pass
        assert "waited" not in at_once.value.message
    finally:
        holder.kill()
        holder.wait()
