"""fsutil: the one hash, JSON, bounded-read, atomic-write and safe-join helpers."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import rfc8785

from pipeline import fsutil
from pipeline.apply import durable
from pipeline.errors import InputRejected, UnsafeOwner, UnsafePath
from pipeline.fsutil import (
    TEMP_PREFIX,
    atomic_write,
    ensure_dir,
    read_bounded,
    refuse_symlinks,
    safe_join,
    sha256_bytes,
    sha256_file,
    write_new,
)
from pipeline.store.jsontext import canonical_json, digest_json, dump_json


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 1000])
def test_the_one_sha256_helper_agrees_with_hashlib(data: bytes, tmp_path: Path) -> None:
    assert sha256_bytes(data) == hashlib.sha256(data).hexdigest()
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("value", [
    {"b": 1, "a": [True, None, "x"]},
    {"é": "ü", "a": "\u2028 and \x01"},
    {"big": 2**53 - 1, "float": 1.5, "nested": {"z": [1e21, -0.0]}},
    {"\U0001f600": 1, "\uffff": 2},  # keys JCS orders by UTF-16 code units
])
def test_canonical_json_is_rfc8785(value: object) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)
    assert digest_json(value) == hashlib.sha256(rfc8785.dumps(value)).hexdigest()


@pytest.mark.parametrize("value", [{"b": [1, {"c": None}], "a": "x\ny"}, {"f": 0.5, "g": [1.25, "\u00e9"]}, [], {}])
def test_dump_json_is_the_indented_sorted_form_json_reads_back(value: object) -> None:
    out = dump_json(value)
    assert out.endswith(b"\n")
    reference = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert out.decode("utf-8") == reference
    assert json.loads(out) == json.loads(reference)


def test_read_bounded_refuses_more_than_the_limit_and_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "big"
    target.write_bytes(b"x" * 101)
    assert read_bounded(target, 101) == b"x" * 101
    with pytest.raises(InputRejected) as over:
        read_bounded(target, 100)
    assert over.value.exit_code == 1
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(UnsafePath) as link:
        read_bounded(tmp_path / "link")
    assert link.value.code == "path.symlink"


def test_atomic_write_replaces_whole_with_the_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(b"old")
    digest = atomic_write(path, b"new bytes", 0o644)
    assert path.read_bytes() == b"new bytes"
    assert digest == hashlib.sha256(b"new bytes").hexdigest()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["file.json"]


def test_a_failed_atomic_write_keeps_the_old_bytes_and_removes_its_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(b"old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil.ops, "fsync", full)
    with pytest.raises(OSError):
        atomic_write(path, b"new")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(TEMP_PREFIX)] == []


def test_write_new_never_replaces_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "once"
    write_new(path, b"first")
    with pytest.raises(FileExistsError):
        write_new(path, b"second")
    assert path.read_bytes() == b"first"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "nul\x00"])
def test_safe_join_refuses_anything_but_a_plain_name(name: str, tmp_path: Path) -> None:
    with pytest.raises(UnsafePath) as exc:
        safe_join(tmp_path, name)
    assert exc.value.code == "path.escape"


def test_safe_join_joins_a_plain_name(tmp_path: Path) -> None:
    assert safe_join(tmp_path, "x.md") == tmp_path / "x.md"


def test_refuse_symlinks_checks_every_component_below_the_root(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    refuse_symlinks(tmp_path / "real" / "deep" / "missing", tmp_path)
    with pytest.raises(UnsafePath):
        refuse_symlinks(tmp_path / "link" / "deep", tmp_path)
    with pytest.raises(UnsafePath) as outside:
        refuse_symlinks("/etc/passwd", tmp_path)
    assert outside.value.code == "path.escape"


def test_ensure_dir_creates_with_the_mode_and_refuses_a_symlinked_parent(tmp_path: Path) -> None:
    ensure_dir(tmp_path / "a" / "b", tmp_path, mode=0o700)
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b").st_mode) == 0o700
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "c").symlink_to(outside)
    with pytest.raises(UnsafePath):
        ensure_dir(tmp_path / "c" / "d", tmp_path)
    assert list(outside.iterdir()) == []


def _open_files(tmp_path: Path, count: int) -> list[int]:
    return [os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600) for i in range(count)]


def test_batched_fsyncs_reuse_the_same_threads_and_sync_each_descriptor_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    synced: list[tuple[int, int]] = []
    real = fsutil.ops.fsync

    def record(fd: int) -> None:
        synced.append((fd, threading.get_ident()))
        real(fd)

    monkeypatch.setattr(fsutil.ops, "fsync", record)
    fds = _open_files(tmp_path, 20)
    pool = durable._pool()
    try:
        durable.fsync_all(fds[:10])
        started = pool._started
        assert started >= 9  # kept for the next batch
        durable.fsync_all(fds[10:])
        assert pool._started == started
    finally:
        for fd in fds:
            os.close(fd)
    assert sorted(fd for fd, _ in synced) == sorted(fds)
    # Each descriptor was synced by the caller or by one of the pool's own threads.
    assert {ident for _, ident in synced} <= pool.workers | {threading.get_ident()}


def test_fsync_threads_started_ahead_serve_a_later_batch_which_starts_none(tmp_path: Path) -> None:
    # In a fresh process: the pool is per process, and this suite's other batches have grown it.
    code = (
        "import _thread, os, sys, threading, time\n"
        "from pipeline.apply import durable\n"
        "from pipeline.fsutil import ops\n"
        "durable.start_fsync_threads()\n"
        "pool = durable._pool()\n"
        "ahead = pool._started\n"
        "deadline = time.monotonic() + 10\n"
        "while len(pool.workers) < ahead and time.monotonic() < deadline:\n"
        "    time.sleep(0.001)\n"
        "running = set(pool.workers)\n"
        "starts, synced = [], []\n"
        "real_start, real_fsync = _thread.start_new_thread, ops.fsync\n"
        "_thread.start_new_thread = lambda *a: (starts.append(a), real_start(*a))[1]\n"
        "threading.Thread.start = lambda self: starts.append(self.name)\n"
        "ops.fsync = lambda fd: (synced.append((fd, threading.get_ident())), real_fsync(fd))[1]\n"
        "fds = [os.open(os.path.join(sys.argv[1], f'f{i}'), os.O_WRONLY | os.O_CREAT, 0o600) for i in range(40)]\n"
        "durable.fsync_all(fds)\n"
        "by = {ident for _, ident in synced}\n"
        "print(ahead, len(running), starts, pool.workers == running, by <= running | {threading.get_ident()},\n"
        "      sorted(fd for fd, _ in synced) == sorted(fds))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    want = str(durable._FSYNC_THREADS - 1)
    assert out == [want, want, "[]", "True", "True", "True"]
    assert len(list(tmp_path.iterdir())) == 40


def test_a_failed_fsync_is_raised_after_every_other_descriptor_of_its_batch_is_synced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    fds = _open_files(tmp_path, 12)

    def fail_one(fd: int) -> None:
        if fd == fds[3]:
            raise OSError(errno.EIO, "write-back failed")
        synced.append(fd)

    monkeypatch.setattr(fsutil.ops, "fsync", fail_one)
    try:
        with pytest.raises(OSError) as caught:
            durable.fsync_all(fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert caught.value.errno == errno.EIO
    assert sorted(synced) == sorted(fd for fd in fds if fd != fds[3])


def test_a_forked_child_syncs_its_batch_with_threads_of_its_own(tmp_path: Path) -> None:
    fds = _open_files(tmp_path, 6)
    try:
        durable.fsync_all(fds)  # the parent's threads exist now; the child has none of them
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            signal.alarm(20)  # a child waiting on threads it does not have dies instead of hanging
            try:
                durable.fsync_all(fds)
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
    finally:
        for fd in fds:
            os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0


def test_remove_tree_removes_everything_below_and_never_follows_a_link(tmp_path: Path) -> None:
    from pipeline.fsutil import remove_tree

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.md").write_bytes(b"not the run's")
    run = tmp_path / "runs" / "20261204T000000Z-00000000"
    (run / "backup" / "deeper").mkdir(parents=True)
    for path in (run / "plan.json", run / "backup" / "harness.a.md", run / "backup" / "deeper" / "x"):
        path.write_bytes(b"x")
    (run / "link-to-outside").symlink_to(outside)
    (run / "backup" / "file-link").symlink_to(outside / "keep.md")
    remove_tree(run)
    assert not run.exists() and not os.path.lexists(run)
    assert sorted(os.listdir(outside)) == ["keep.md"] and (outside / "keep.md").read_bytes() == b"not the run's"
    remove_tree(run)  # gone already: nothing to do, nothing raised
    link = tmp_path / "runs" / "a-link"
    link.symlink_to(outside)
    remove_tree(link)  # a link is not a directory memfold made: left as it is, its target untouched
    assert link.is_symlink() and (outside / "keep.md").is_file()


def test_remove_tree_leaves_what_it_cannot_remove_and_removes_the_rest(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import fsutil

    run = tmp_path / "run"
    (run / "stuck").mkdir(parents=True)
    (run / "stuck" / "held").write_bytes(b"x")
    (run / "free").write_bytes(b"x")
    real_unlink = os.unlink

    def refuse_held(name: object, *args: object, **kwargs: object) -> None:
        if name == "held":
            raise PermissionError(13, "held open elsewhere")
        real_unlink(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fsutil.os, "unlink", refuse_held)
    fsutil.remove_tree(run)
    assert sorted(p.relative_to(run).as_posix() for p in run.rglob("*")) == ["stuck", "stuck/held"]


def _stat(uid: int, mode: int) -> os.stat_result:
    return os.stat_result((stat.S_IFREG | mode, 1, 1, 1, uid, 0, 10, 0, 0, 0))


@pytest.mark.parametrize(("owner", "mode", "refused"), [
    ("me", 0o600, False), ("me", 0o644, False), ("root", 0o644, False), ("root", 0o755, False),
    ("me", 0o664, True), ("me", 0o646, True), ("root", 0o666, True), ("other", 0o600, True), ("other", 0o644, True),
])
def test_a_settings_file_must_be_the_users_or_roots_and_writable_by_no_one_else(
        owner: str, mode: int, refused: bool) -> None:
    uid = {"me": os.geteuid(), "root": 0, "other": 65533 if os.geteuid() != 65533 else 65532}[owner]
    if refused:
        with pytest.raises(UnsafeOwner) as exc:
            fsutil.refuse_unsafe_owner("/x/config.yaml", _stat(uid, mode), "config file")
        assert exc.value.code == "settings.unsafe" and exc.value.exit_code == 2
        assert exc.value.data == {"path": "/x/config.yaml", "uid": uid, "owner": exc.value.data["owner"],
                                  "mode": f"{mode:04o}"}
        assert f"mode {mode:04o}" in exc.value.message or f"uid {uid}" in exc.value.message
        assert ("chmod go-w /x/config.yaml" in (exc.value.hint or "")) == bool(mode & 0o022)
        assert ("chown " in (exc.value.hint or "")) == (uid not in (os.geteuid(), 0))
    else:
        fsutil.refuse_unsafe_owner("/x/config.yaml", _stat(uid, mode), "config file")


def test_the_home_refusal_has_its_own_code_and_names_another_home_as_the_way_out() -> None:
    with pytest.raises(UnsafeOwner) as exc:
        fsutil.refuse_unsafe_owner("/srv/mf", _stat(os.geteuid(), 0o777), "memfold home")
    assert exc.value.code == "home.unsafe"
    assert "writable by group and others (mode 0777)" in exc.value.message
    assert "--home" in (exc.value.hint or "")


def test_a_settings_file_read_through_read_bounded_is_checked_on_the_same_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "trusted-projects.json"
    path.write_bytes(b"{}")
    path.chmod(0o600)
    assert read_bounded(path, 100, settings="trust list") == b"{}"
    path.chmod(0o622)
    with pytest.raises(UnsafeOwner) as exc:
        read_bounded(path, 100, settings="trust list")
    assert exc.value.code == "settings.unsafe" and str(path) in exc.value.message
    assert read_bounded(path, 100) == b"{}"  # a file that is not a settings file is not held to the rule
