"""What one direct edit creates on disk: every file and directory, counted by name (a regression guard)."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import pytest
from conftest import Env

_MADE: list[tuple[str, str]] = []
_ON: list[bool] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _ON:
        return
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)) and isinstance(args[2], int) \
            and args[2] & os.O_CREAT and os.path.isabs(os.fsdecode(args[0])):  # a name in an open dir: _opening
        _MADE.append(("file", os.fsdecode(args[0])))
    elif event == "os.mkdir" and not os.path.lexists(args[0]):  # not the no-op of an existing dir
        _MADE.append(("dir", os.fsdecode(args[0])))
    elif event == "os.link":
        _MADE.append(("link", _at(os.fsdecode(args[1]), args[3])))


def _at(name: str, dir_fd: int | None) -> str:
    """A name given relative to an open directory (a transaction writes each root through one), as a path."""
    if dir_fd is None or dir_fd < 0:
        return name
    return os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name)


_REAL_OPEN = os.open


def _opening(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
    """os.open, noting each file created relative to an open directory (its audit event names no directory)."""
    if _ON and dir_fd is not None and flags & os.O_CREAT:
        _MADE.append(("file", _at(os.fsdecode(path), dir_fd)))
    return _REAL_OPEN(path, flags, mode, dir_fd=dir_fd)


sys.addaudithook(_hook)


def _created(env: Env, monkeypatch: pytest.MonkeyPatch, *command: str) -> list[tuple[str, str]]:
    _MADE.clear()
    _ON.append(True)
    monkeypatch.setattr(os, "open", _opening)
    try:
        assert env.run(*command).code == 0
    finally:
        _ON.clear()
        monkeypatch.setattr(os, "open", _REAL_OPEN)
    home, run = str(env.project_home), str(env.project_home / "runs")
    out = []
    for kind, path in _MADE:
        path = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "<run>", path)
        path = re.sub(r"\.memfold-(?:[0-9a-f]{12}-|\d\dZ-[0-9a-f]{8}-)", ".tmp-", path)
        path = re.sub(r"(heads/\.tmp-|heads\.)[0-9a-f]{16}", r"\1<chain>", path)
        out.append((kind, path.replace(run, "<runs>").replace(home, "<home>").replace(str(env.mirror), "<mirror>")
                    .replace(str(env.heads), "<heads>")))
    return sorted(out)


def test_an_add_creates_the_run_files_the_journal_needs_and_no_scratch_dir(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("project_a", "user_c"):
        assert env.run("add", name, "-d", f"{name} fact", "-b", name, "--visibility", "safe").code == 0
    made = _created(env, monkeypatch, "add", "project_b", "-d", "beta fact", "-b", "b")
    assert made == sorted([
        ("dir", "<runs>/<run>"), ("dir", "<runs>/<run>/backup"),
        ("file", "<home>/lock"), ("file", "<home>/lock.json"), ("file", "<home>/.tmp-pending.tmp"),
        ("file", "<home>/.tmp-newest-receipt.json.tmp"),
        ("file", "<home>/memory/.tmp-MEMORY.md.tmp"), ("file", "<home>/memory/.tmp-project_b.md.tmp"),
        ("file", "<home>/receipts/.tmp-00000003-<run>.json.tmp"), ("file", "<heads>/.tmp-<chain>.json.tmp"),
        ("file", "<runs>/<run>/.tmp-done-journal.json.tmp"), ("file", "<runs>/<run>/.tmp-journal.json.tmp"),
        ("link", "<runs>/<run>/.tmp-post-receipt.json.tmp"), ("file", "<runs>/<run>/manifest.json"),
        ("file", "<runs>/<run>/plan.json"), ("file", "<runs>/<run>/pre-receipt.json"),
        ("file", "<runs>/<run>/snapshot.json"),
        ("link", "<runs>/<run>/backup/harness.MEMORY.md"), ("link", "<runs>/<run>/backup/home.newest-receipt.json"),
        ("link", "<runs>/<run>/backup/heads.<chain>.json"),
    ])
    run_dir = next((env.project_home / "runs").iterdir())
    assert not (run_dir / "scratch").exists()
