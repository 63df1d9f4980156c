"""Hostile stores and repositories: links, special files, odd names, huge and growing files, deep trees."""

from __future__ import annotations

import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import Env, Result

SECRET = b"---\ndescription: outside secret\n---\nOUTSIDE-SECRET-CONTENT\n"


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail the test instead of hanging (no plugin needed): SIGALRM raises in the main thread."""

    def expired(_sig: int, _frame: object) -> None:
        raise TimeoutError(f"hung for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def store(env: Env) -> Env:
    assert env.run("init").code == 0
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    return env


def _fails_closed(result: Result, code: str, exit_code: int = 1) -> None:
    assert result.code == exit_code, (result.code, result.out, result.err)
    assert f"[{code}]" in result.err, result.err
    assert "OUTSIDE-SECRET-CONTENT" not in result.out + result.err


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "project_z.md").write_bytes(SECRET)
    return outside


@pytest.mark.parametrize("command", [("list",), ("add", "project_b", "-d", "beta", "-b", "b"), ("consolidate",
                                                                                               "--no-context")])
def test_a_symlinked_private_store_is_refused_and_nothing_outside_is_touched(
    store: Env, tmp_path: Path, command: tuple[str, ...]
) -> None:
    outside = _outside(tmp_path)
    before = sorted(os.listdir(outside))
    os.rename(store.harness, tmp_path / "moved")
    store.harness.symlink_to(outside)
    with deadline(30):
        result = store.run(*command)
    _fails_closed(result, "path.symlink")
    assert sorted(os.listdir(outside)) == before and (outside / "project_z.md").read_bytes() == SECRET


def test_a_symlinked_mirror_file_is_held_never_followed_and_a_symlinked_mirror_is_refused(
        store: Env, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    link = store.mirror / "project_z.md"
    link.symlink_to(outside / "project_z.md")
    with deadline(30):
        result = store.run("add", "project_b", "-d", "beta", "-b", "b")
    # A link git put in the mirror is held: the user's write goes through, and the link is neither read
    # nor followed nor replaced.
    assert result.code == 0 and "project_z.md (held.link)" in result.err, result.err
    assert "OUTSIDE-SECRET-CONTENT" not in result.out + result.err
    assert link.is_symlink() and (outside / "project_z.md").read_bytes() == SECRET
    assert not (store.harness / "project_z.md").exists()
    link.unlink()
    os.rename(store.mirror, tmp_path / "moved-mirror")
    store.mirror.symlink_to(outside)
    with deadline(30):
        _fails_closed(store.run("add", "project_b", "-d", "beta", "--visibility", "safe", "-b", "b"), "path.symlink")
    assert sorted(os.listdir(outside)) == ["project_z.md"]


def test_a_fifo_or_socket_with_a_memory_name_is_refused_without_blocking(store: Env, tmp_path: Path) -> None:
    fifo = store.harness / "project_fifo.md"
    os.mkfifo(fifo)
    with deadline(20):
        _fails_closed(store.run("list"), "path.not-regular")
    fifo.unlink()
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(store.mirror / "project_sock.md"))
        with deadline(20):
            result = store.run("add", "project_b", "-d", "beta", "--visibility", "safe", "-b", "b")
        # In the mirror a special file is held, never opened: the write goes through around it.
        assert result.code == 0 and "project_sock.md (held.link)" in result.err, result.err
        assert stat.S_ISSOCK(os.lstat(store.mirror / "project_sock.md").st_mode)
    finally:
        sock.close()


def test_special_files_without_a_memory_name_are_ignored(store: Env) -> None:
    os.mkfifo(store.harness / "notes.fifo")
    before = store.snapshot()
    with deadline(20):
        result = store.run("list", "--json")
    assert result.code == 0 and [m["file"] for m in result.json()["memories"]] == ["project_a.md"], result.out
    assert store.snapshot() == before


def test_case_twins_are_a_stable_error_and_confusables_are_reported_as_ignored(store: Env) -> None:
    (store.harness / "project_A.md").write_bytes((store.harness / "project_a.md").read_bytes())
    with deadline(20):
        _fails_closed(store.run("list"), "store.case-collision")
    (store.harness / "project_A.md").unlink()
    cyrillic = "project_\u0430.md"  # Cyrillic a: names are ASCII-only, so this is not a memory
    (store.harness / cyrillic).write_bytes(SECRET)
    (store.harness / "memory.MD").write_bytes(SECRET)
    with deadline(20):
        listed = store.run("list", "--json")
        status = store.run("status", "--json")
    assert listed.code == 0 and [m["file"] for m in listed.json()["memories"]] == ["project_a.md"]
    assert "OUTSIDE-SECRET-CONTENT" not in listed.out
    warnings = status.json()["warnings"]
    assert f"ignored in the private store: {cyrillic}" in warnings, warnings
    assert "ignored in the private store: memory.MD" in warnings, warnings


def test_non_utf8_bytes_in_a_memory_are_a_stable_error_and_the_rest_still_lists(store: Env) -> None:
    bad = b"---\ndescription: caf\xe9 \xff\xfe\n---\nbody \x80\n"
    (store.harness / "project_bad.md").write_bytes(bad)
    with deadline(20):
        listed = store.run("list", "--json")
        doctor = store.run("doctor", "--json")
    assert listed.code == 0, listed.err
    assert "project_bad.md" not in {m["file"] for m in listed.json()["memories"]}
    assert doctor.code == 1
    found = [b for b in doctor.json()["broken"] if b["path"].endswith("project_bad.md")]
    assert found and found[0]["code"].startswith("memory."), doctor.out
    assert (store.harness / "project_bad.md").read_bytes() == bad  # nothing rewrote it


def test_a_one_gigabyte_sparse_memory_is_refused_by_size_without_reading_it(store: Env) -> None:
    big = store.harness / "project_big.md"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)
    started = time.monotonic()
    with deadline(20):
        _fails_closed(store.run("add", "project_b", "-d", "beta", "-b", "b"), "bounds.file-size")
    assert time.monotonic() - started < 10


def test_a_memory_growing_while_read_is_bounded(store: Env) -> None:
    grower = store.harness / "project_grow.md"
    grower.write_bytes(b"---\ndescription: grows\n---\n")
    stop = threading.Event()

    def grow() -> None:
        with open(grower, "ab") as fh:
            while not stop.is_set():
                fh.write(b"x" * 4096)
                fh.flush()

    thread = threading.Thread(target=grow, daemon=True)
    thread.start()
    codes = set()
    try:
        with deadline(30):
            for _ in range(5):
                result = store.run("list", "--json")
                codes.add(result.code if result.code == 0 else result.json()["code"])
    finally:
        stop.set()
        thread.join()
    # Either it was read below the bound, or refused by the bound: never an unbounded read or a crash.
    assert codes <= {0, "bounds.file-size"}, codes
    assert "bounds.file-size" in codes or grower.stat().st_size <= 64 * 1024


def test_deep_directories_and_a_directory_named_like_a_memory(store: Env) -> None:
    deep = store.harness / "deep"
    path = deep
    for _ in range(200):
        path = path / "d"
    path.mkdir(parents=True)
    (path / "project_hidden.md").write_bytes(SECRET)
    with deadline(20):
        result = store.run("list", "--json")
    assert result.code == 0 and [m["file"] for m in result.json()["memories"]] == ["project_a.md"]
    (store.harness / "project_dir.md").mkdir()
    with deadline(20):
        _fails_closed(store.run("list"), "path.not-regular")


def test_a_symlinked_project_home_is_refused(store: Env, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    home = store.project_home
    os.rename(home, tmp_path / "moved-home")
    home.symlink_to(outside)
    with deadline(30):
        result = store.run("add", "project_b", "-d", "beta", "-b", "b")
    _fails_closed(result, "path.symlink")
    assert sorted(os.listdir(outside)) == ["project_z.md"]
