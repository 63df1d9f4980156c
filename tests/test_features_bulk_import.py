"""Step definitions for features/bulk_import.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, fresh_interpreter, syncfs_here
from pytest_bdd import given, parsers, scenarios, then, when
from test_apply import Fault

from pipeline import fsutil
from pipeline.apply import journal
from pipeline.bench.importing import write_claude_dir

scenarios("bulk_import.feature")


@given(parsers.parse("a Claude Code memory dir of {count:d} files"))
def claude_dir(tmp_path: Path, ctx: dict[str, Any], count: int) -> None:
    ctx["source"] = tmp_path / "claude-memory"
    write_claude_dir(ctx["source"], count)


@given("syncing a filesystem fails with an I/O error")
def failing_syncfs(monkeypatch: pytest.MonkeyPatch) -> None:
    if not syncfs_here():
        pytest.skip("syncfs(2) with error reporting (Linux 5.8+) on a local disk filesystem")
    Fault(monkeypatch, "syncfs", 1, errno.EIO)


@given("another process rewrites a staged copy before the commit point")
def rewrite_staged(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    original = journal.fsync_all

    def then_rewrite(fds: list[int], dirs: list[Path] | None = None) -> None:
        original(fds, dirs)
        for staged in sorted(env.harness.glob(".memfold-*-cache-note-1.md.tmp")):
            time.sleep(0.02)  # a timestamp tick later
            data = staged.read_bytes()
            with open(staged, "r+b") as fh:
                fh.write(data.replace(b"cache", b"CACHE", 1))  # the same size, in place

    monkeypatch.setattr(journal, "fsync_all", then_rewrite)


@when("I import that dir")
def import_dir(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[str] = []
    commit: list[int] = []
    syncfs, rename = fsutil.ops.syncfs, fsutil.ops.rename

    def recording_syncfs(fd: int) -> None:
        syncfs(fd)
        syncs.append("after commit" if commit else "before commit")

    def recording_rename(src: str, dst: str, **at: int) -> None:
        rename(src, dst, **at)
        if dst.endswith("/journal.json"):
            commit.append(1)

    monkeypatch.setattr(fsutil.ops, "syncfs", recording_syncfs)
    monkeypatch.setattr(fsutil.ops, "rename", recording_rename)
    ctx["result"] = env.run("--json", "import", "claude", str(ctx["source"]))
    ctx["syncs"] = syncs


@when("I import that dir in a fresh interpreter")
def import_fresh(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = fresh_interpreter(env, ["import", "claude", str(ctx["source"])])


@then(parsers.parse("the private store holds the {count:d} memories and their index"))
def holds(env: Env, ctx: dict[str, Any], count: int) -> None:
    assert ctx["result"].code == 0, ctx["result"].err
    stored = sorted(p.name for p in env.harness.iterdir())
    assert len(stored) == count + 1 and "MEMORY.md" in stored, stored
    index = (env.harness / "MEMORY.md").read_text(encoding="utf-8")
    assert all(f"({name})" in index for name in stored if name != "MEMORY.md")


@then("the filesystem was synced once, before the commit point")
def synced_once(ctx: dict[str, Any]) -> None:
    if not syncfs_here():
        pytest.skip("syncfs(2) with error reporting (Linux 5.8+) on a local disk filesystem")
    assert ctx["syncs"] == ["before commit"]
