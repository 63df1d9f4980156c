"""A run's own files: written at once, fsynced on a thread, all durable when ``settle`` returns."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import Env

from pipeline.context.artifacts import RunArtifacts
from pipeline.errors import UnsafePath
from pipeline.fsutil import ops


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_each_file_is_written_whole_and_fsynced_before_settle_returns(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[tuple[str, int]] = []
    real = ops.fsync

    def fsync(fd: int) -> None:
        synced.append((os.path.basename(os.readlink(f"/proc/self/fd/{fd}")), os.fstat(fd).st_size))
        real(fd)

    monkeypatch.setattr(ops, "fsync", fsync)
    before = _open_fds()
    files = RunArtifacts()
    digests = [files.write(tmp_path, name, data) for name, data in (("a.json", b"{}\n"), ("task.md", b"# task\n"))]
    files.settle()
    assert digests == [hashlib.sha256(b"{}\n").hexdigest(), hashlib.sha256(b"# task\n").hexdigest()]
    assert (tmp_path / "a.json").read_bytes() == b"{}\n" and (tmp_path / "task.md").read_bytes() == b"# task\n"
    assert synced == [("a.json", 3), ("task.md", 7)]  # every file, with all its bytes, once
    assert _open_fds() == before  # every descriptor closed
    assert oct((tmp_path / "a.json").stat().st_mode & 0o777) == "0o600"


def test_a_failed_fsync_is_raised_by_settle_and_files_are_never_replaced(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(fd: int) -> None:
        raise OSError(errno.EIO, "injected")

    monkeypatch.setattr(ops, "fsync", failing)
    before = _open_fds()
    files = RunArtifacts()
    files.write(tmp_path, "plan.json", b"{}")
    with pytest.raises(OSError) as err:
        files.settle()
    assert err.value.errno == errno.EIO and _open_fds() == before
    monkeypatch.undo()
    again = RunArtifacts()
    with pytest.raises(FileExistsError):
        again.write(tmp_path, "plan.json", b"[]")  # written once: never replaced
    with pytest.raises(UnsafePath):
        again.write(tmp_path, "../escape.json", b"{}")
    again.settle()
    assert (tmp_path / "plan.json").read_bytes() == b"{}" and not (tmp_path.parent / "escape.json").exists()


def test_later_tasks_run_on_the_files_thread_after_the_fsyncs_before_them_and_settle_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    seen: list[tuple[str, str]] = []
    real = ops.fsync

    def fsync(fd: int) -> None:
        seen.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
        real(fd)

    def slow(name: str) -> None:
        time.sleep(0.05)
        seen.append((name, threading.current_thread().name))

    def broken() -> None:
        raise OSError(errno.EBUSY, "a clean-up that fails")

    monkeypatch.setattr(ops, "fsync", fsync)
    files = RunArtifacts()
    files.write(tmp_path, "a.json", b"{}\n")
    files.later(lambda: slow("first"))
    files.later(broken)
    files.write(tmp_path, "b.json", b"[]\n")
    files.later(lambda: slow("last"))
    files.settle()  # a failing clean-up is its own: settle raises only fsync errors
    assert seen == [("fsync", "a.json"), ("first", "memfold-run-files"), ("fsync", "b.json"),
                    ("last", "memfold-run-files")]


def test_a_consolidation_removes_the_scratch_dir_on_the_files_thread_before_it_returns(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from pipeline.sandbox import scratch

    assert env.run("add", "project_ci", "-d", "CI runs on every push", "-b", "make test").code == 0
    removed: list[tuple[str, str]] = []
    real = scratch.remove

    def remove(root: Path) -> bool:
        removed.append((root.name, threading.current_thread().name))
        return real(root)

    monkeypatch.setattr(scratch, "remove", remove)
    result = env.run("--json", "consolidate", "--no-context")
    assert result.code == 0, result.err
    run = Path(json.loads(result.out)["runDir"])
    assert removed == [("scratch", "memfold-run-files")]  # off the stages after the worker
    assert not (run / "scratch").exists() and (run / "plan.json").exists()
