"""A large commit is made durable with one syncfs per filesystem, and its staged copies are checked
by identity instead of being read back: the same order, the same refusals, the same crash safety."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import test_apply
from conftest import REPO, Env, op_path, syncfs_here
from test_apply import Fault, _seed, _temps

from pipeline import fsutil
from pipeline.apply import durable, journal
from pipeline.apply import staged as staged_copies
from pipeline.bench.importing import write_claude_dir

MANY = durable.SYNCFS_MIN + 10


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync, syncfs and rename, with the path of the descriptor or the rename's target."""
    events: list[tuple[str, str]] = []
    fsync, syncfs, rename = fsutil.ops.fsync, fsutil.ops.syncfs, fsutil.ops.rename

    def recording_fsync(fd: int) -> None:
        fsync(fd)
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def recording_syncfs(fd: int) -> None:
        syncfs(fd)
        events.append(("syncfs", os.readlink(f"/proc/self/fd/{fd}")))

    def recording_rename(src: str, dst: str, **at: int) -> None:
        rename(src, dst, **at)
        events.append(("rename", op_path(dst, at.get("dst_dir_fd"))))

    monkeypatch.setattr(fsutil.ops, "fsync", recording_fsync)
    monkeypatch.setattr(fsutil.ops, "syncfs", recording_syncfs)
    monkeypatch.setattr(fsutil.ops, "rename", recording_rename)
    return events


def _import(env: Env, tmp_path: Path, n: int = MANY) -> tuple[Path, int]:
    source = tmp_path / "claude"
    write_claude_dir(source, n)
    result = env.run("--json", "import", "claude", str(source))
    return source, result.code


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names descriptors through /proc")
needs_syncfs = pytest.mark.skipif(not syncfs_here(), reason="syncfs(2) with error reporting (Linux 5.8+) on "
                                  "a local disk filesystem for the temp dir")


@needs_syncfs
def test_a_large_import_is_made_durable_by_one_syncfs_before_the_commit_point(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _record(monkeypatch)
    _, code = _import(env, tmp_path)
    assert code == 0
    commit = next(i for i, (kind, path) in enumerate(events) if kind == "rename" and path.endswith("/journal.json"))
    start = next(i for i, (kind, path) in enumerate(events) if kind == "rename" and path.endswith("/pending"))
    before = events[start:commit]
    syncs = [path for kind, path in before if kind == "syncfs"]
    # Anchored on the first file of the transaction, the `pending` marker's temp (renamed since).
    assert len(syncs) == 1 and Path(syncs[0]).name == "pending", syncs
    assert not [path for kind, path in before if kind == "fsync" and ".memfold-" in path]
    staged = [path for kind, path in events[commit:] if kind == "rename" and path.startswith(str(env.harness))]
    assert len(staged) == MANY + 1  # every memory and the index, renamed after the commit point
    after = {path for kind, path in events[events.index(("rename", staged[-1])):] if kind == "fsync"}
    assert str(env.harness) in after  # the renames are made durable with a directory fsync as before
    assert len(list(env.harness.glob("*.md"))) == MANY + 1
    assert _temps(env) == []


@needs_syncfs
def test_a_failing_syncfs_rolls_the_import_back_with_exit_6(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("init").code == 0
    before = env.snapshot()
    Fault(monkeypatch, "syncfs", 1, errno.EIO)
    _, code = _import(env, tmp_path)
    assert code == 6
    assert env.snapshot() == before
    assert not (env.project_home / "pending").exists()
    assert _temps(env) == []


@pytest.mark.parametrize("tamper", ["rewrite", "replace", "remove"])
def test_a_staged_copy_changed_before_the_commit_point_stops_the_commit(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tamper: str) -> None:
    """Between the sync and the commit point another process rewrites a staged copy in place with
    bytes of the same size, renames another file over it, or removes it: nothing is committed."""
    assert env.run("init").code == 0
    before = env.snapshot()
    original = journal.fsync_all

    def then_tamper(fds: list[int], dirs: list[Path] | None = None) -> None:
        original(fds, dirs)
        staged = sorted(env.harness.glob(".memfold-*-cache-note-1.md.tmp"))
        if not staged:
            return
        data = staged[0].read_bytes()
        # A timestamp tick later: within one tick only kernels with fine-grained timestamps see a
        # same-size rewrite by its times (the re-verify after the commit hashes every file anyway).
        time.sleep(0.02)
        if tamper == "rewrite":
            with open(staged[0], "r+b") as fh:
                fh.write(data.replace(b"cache", b"CACHE", 1))
        elif tamper == "replace":
            other = staged[0].with_name("other")
            other.write_bytes(data)
            os.replace(other, staged[0])
        else:
            staged[0].unlink()

    monkeypatch.setattr(journal, "fsync_all", then_tamper)
    source = tmp_path / "claude"
    write_claude_dir(source, 12)
    result = env.run("--json", "import", "claude", str(source))
    assert result.code == 6
    assert json.loads(result.out)["code"] == "apply.staged-mismatch"
    assert "cache-note-1.md" in json.loads(result.out)["message"]
    assert env.snapshot() == before
    assert _temps(env) == []


@needs_syncfs
def test_fsync_all_syncs_each_filesystem_holding_enough_of_the_batch_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev or not os.access(shm, os.W_OK):
        pytest.skip("needs a second writable filesystem (/dev/shm)")
    events = _record(monkeypatch)
    other = Path(os.path.realpath(shm)) / f"memfold-test-{os.getpid()}"
    other.mkdir()
    fds: list[int] = []
    try:
        many = [tmp_path / f"f{i}" for i in range(durable.SYNCFS_MIN)]
        few = [other / f"g{i}" for i in range(3)]
        for path in [many[0], *few, *many[1:]]:
            fds.append(fsutil.create_unsynced(path, b"x"))
        durable.fsync_all(fds, [tmp_path, other])
    finally:
        for fd in fds:
            os.close(fd)
        for path in other.iterdir():
            path.unlink()
        other.rmdir()
    assert [path for kind, path in events if kind == "syncfs"] == [str(many[0])]
    assert sorted(path for kind, path in events if kind == "fsync") == sorted([*map(str, few), str(other)])


def test_fsync_all_keeps_per_file_fsyncs_below_the_threshold_and_where_syncfs_falls_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = _record(monkeypatch)
    paths = [tmp_path / f"f{i}" for i in range(durable.SYNCFS_MIN)]
    fds = [fsutil.create_unsynced(path, b"x") for path in paths]
    try:
        durable.fsync_all(fds[:-2], [tmp_path])  # one short of the threshold
        assert [kind for kind, _ in events].count("fsync") == durable.SYNCFS_MIN - 1
        events.clear()
        # Before Linux 5.8 syncfs(2) returned 0 even when write-back failed.
        monkeypatch.setattr(durable, "_SYNCFS_OK", [])
        monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "h", "5.4.0-1", "#1", "x86_64")))
        assert not durable.syncfs_reports_errors()
        durable.fsync_all(fds, [tmp_path])
        assert [kind for kind, _ in events].count("syncfs") == 0
        assert [kind for kind, _ in events].count("fsync") == durable.SYNCFS_MIN + 1
        events.clear()
        # A filesystem whose syncfs may not reach the disk (FUSE, network) keeps its fsyncs too.
        monkeypatch.undo()
        events = _record(monkeypatch)
        monkeypatch.setattr(durable, "SYNCFS_TYPES", frozenset())
        durable.fsync_all(fds, [tmp_path])
        assert [kind for kind, _ in events].count("syncfs") == 0
        assert [kind for kind, _ in events].count("fsync") == durable.SYNCFS_MIN + 1
    finally:
        for fd in fds:
            os.close(fd)


# The crash sweep's child with every batch of the command going through syncfs, which it also counts.
CHILD = test_apply.CHILD.replace("from pipeline import fsutil\n", """from pipeline import fsutil
from pipeline.apply import durable
durable.SYNCFS_MIN = 1
_syncfs = fsutil.ops.syncfs
def _counted(fd):
    sys.stderr.write("SYNCFS\\n")
    _syncfs(fd)
fsutil.ops.syncfs = _counted
""").replace('("write", "fsync", "link", "rename", "unlink")', '("write", "fsync", "syncfs", "link", "rename", "unlink")')
UPDATE = ["update", "user_b", "--visibility", "safe", "-b", "b2"]


@needs_syncfs
def test_the_syncfs_crash_child_batches_through_syncfs_and_counts_it(env: Env, tmp_path: Path) -> None:
    _seed(env)
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(repo=str(REPO)))
    proc = subprocess.run([sys.executable, str(script), str(10**9), *env.args(*UPDATE)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("SYNCFS\n") >= 1 and '"syncfs"' in CHILD


@pytest.mark.integration
@needs_syncfs
def test_sigkill_at_every_step_of_a_syncfs_batched_commit_leaves_pre_or_post_state(env: Env, tmp_path: Path) -> None:
    test_apply._sigkill_sweep(env, tmp_path, strides=(1,), minimum=20, child=CHILD, commands=[UPDATE])


@pytest.mark.parametrize("names", [[], ["project_a.md"], ["部署-1.md", 'q"uote.md', "back\\slash\n.md", "ü" * 40]])
def test_both_journal_states_are_the_bytes_the_one_state_writer_gives(names: list[str]) -> None:
    entries = [{"root": "harness" if i % 2 else "public", "name": name, "temp": f".memfold-t-{name}.tmp" if i % 3 else None,
                "pre": None if i % 2 else "ab" * 32, "post": "cd" * 32 if i % 3 else None}
               for i, name in enumerate(names)]
    body = {"kind": "memfold-journal", "runId": "20261201T120000Z-0a1b2c3d", "state": "committed", "entries": entries}
    committed, done = journal._journal_states(body, ("committed", "done"))
    assert committed == journal._journal_bytes(body)
    assert done == journal._journal_bytes({**body, "state": "done"})
    assert json.loads(done)["state"] == "done" and json.loads(done)["entries"] == entries


def test_where_a_backup_cannot_be_a_hard_link_its_copy_is_synced_with_the_batch(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(env)
    before = (env.harness / "user_b.md").read_bytes()

    def cross_device(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "link", cross_device)
    events = _record(monkeypatch)
    assert env.run("update", "user_b", "-b", "b2").code == 0
    monkeypatch.undo()
    run = json.loads(sorted((env.project_home / "receipts").iterdir())[-1].read_text())["runId"]
    copy = env.project_home / "runs" / run / "backup" / "harness.user_b.md"
    assert copy.read_bytes() == before and copy.stat().st_nlink == 1
    commit = next(i for i, (kind, path) in enumerate(events) if kind == "rename" and path.endswith("/journal.json"))
    assert ("fsync", str(copy)) in events[:commit]
    assert env.run("undo", run).code == 0
    assert (env.harness / "user_b.md").read_bytes() == before


def test_on_a_filesystem_with_whole_second_times_a_staged_copy_is_read_back(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """There a same-size rewrite within the second leaves every time alone: the bytes decide."""
    assert env.run("init").code == 0
    before = env.snapshot()
    monkeypatch.setattr(staged_copies, "_whole_seconds", lambda _st: True)
    monkeypatch.setattr(staged_copies, "_identity", lambda st: (st.st_dev, st.st_ino, st.st_size, st.st_mode))
    original = journal.fsync_all

    def then_rewrite(fds: list[int], dirs: list[Path] | None = None) -> None:
        original(fds, dirs)
        for staged in env.harness.glob(".memfold-*-cache-note-1.md.tmp"):
            data = staged.read_bytes()
            with open(staged, "r+b") as fh:
                fh.write(data.replace(b"cache", b"CACHE", 1))

    monkeypatch.setattr(journal, "fsync_all", then_rewrite)
    source = tmp_path / "claude"
    write_claude_dir(source, 12)
    result = env.run("--json", "import", "claude", str(source))
    assert result.code == 6 and json.loads(result.out)["code"] == "apply.staged-mismatch"
    assert env.snapshot() == before
    monkeypatch.setattr(journal, "fsync_all", original)
    assert env.run("import", "claude", str(source)).code == 0  # untouched copies pass the read-back
    assert len(list(env.harness.glob("*.md"))) == 13


def test_each_staged_copy_is_opened_once_and_never_read_back(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: Counter[str] = Counter()
    real_open = os.open

    def counting_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened[op_path(os.fspath(path), kwargs.get("dir_fd"))] += 1
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    _, code = _import(env, tmp_path)
    monkeypatch.undo()
    assert code == 0
    staged = {path: n for path, n in opened.items() if Path(path).name.startswith(fsutil.TEMP_PREFIX)
              and Path(path).parent == env.harness}
    assert len(staged) == MANY + 1  # every memory and the index
    assert set(staged.values()) == {1}
