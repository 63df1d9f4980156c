"""A run keeps the pre-state of every root's touched files in one directory, ``backup/<root>.<name>``;
runs written with a folder per root (``backup/<root>/<name>``) are still read by undo, roll-back and
the report."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import Env

from pipeline.apply import journal

BODY = "The release train leaves on Thursdays; the zebra-kite check runs first."


def _newest_run(env: Env) -> tuple[Path, dict[str, object]]:
    receipt_path = sorted((env.project_home / "receipts").iterdir())[-1]
    receipt = json.loads(receipt_path.read_bytes())
    return env.project_home / "runs" / str(receipt["runId"]), receipt


def nest_backups_by_root(run_dir: Path) -> None:
    """Rewrite a run's backups as runs written before kept them: one folder per root."""
    backup = run_dir / journal.BACKUP
    for entry in sorted(backup.iterdir()):
        root, _, name = entry.name.partition(".")
        (backup / root).mkdir(exist_ok=True)
        os.rename(entry, backup / root / name)


def _seeded(env: Env) -> bytes:
    assert env.run("add", "project_train", "-d", "release train day", "-b", BODY).code == 0
    before = (env.harness / "project_train.md").read_bytes()
    assert env.run("update", "project_train", "-b", "Trains leave on Fridays now.").code == 0
    return before


def test_a_write_keeps_each_roots_pre_state_as_a_link_in_one_backup_directory(env: Env) -> None:
    before = _seeded(env)
    run_dir, receipt = _newest_run(env)
    backup = run_dir / journal.BACKUP
    entries = sorted(re.sub(r"heads\.[0-9a-f]{16}", "heads.<chain>", p.name) for p in backup.iterdir())
    assert entries == ["harness.project_train.md", "heads.<chain>.json", "home.newest-receipt.json"]
    assert all(p.is_file() and not p.is_symlink() for p in backup.iterdir())  # no folder per root
    kept = backup / "harness.project_train.md"
    assert kept.read_bytes() == before
    source = receipt["sourceHashes"]
    assert isinstance(source, dict)
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == source["harness"]["project_train.md"]
    # A hard link to the inode the store let go: the store's file is a new one.
    assert kept.stat().st_ino != (env.harness / "project_train.md").stat().st_ino
    assert backup.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("layout", ["one directory", "a folder per root"])
def test_undo_puts_back_the_pre_state_from_either_layout(env: Env, layout: str) -> None:
    before = _seeded(env)
    run_dir, _ = _newest_run(env)
    if layout == "a folder per root":
        nest_backups_by_root(run_dir)
        assert (run_dir / "backup" / "harness" / "project_train.md").is_file()
    assert journal.backup_path(run_dir, "harness", "project_train.md").read_bytes() == before
    result = env.run("undo", run_dir.name)
    assert result.code == 0, result.err
    assert (env.harness / "project_train.md").read_bytes() == before


@pytest.mark.parametrize("layout", ["one directory", "a folder per root"])
def test_a_roll_back_restores_from_either_layout(env: Env, layout: str) -> None:
    before = _seeded(env)
    after = (env.harness / "project_train.md").read_bytes()
    assert after != before
    run_dir, _ = _newest_run(env)
    if layout == "a folder per root":
        nest_backups_by_root(run_dir)
    body = journal.read_journal(run_dir / journal.JOURNAL)
    roots = {"harness": env.harness, "public": env.mirror, "heads": env.heads, "home": env.project_home,
             "receipts": env.project_home / "receipts", "run": run_dir}
    journal.roll_back(run_dir, roots.__getitem__, body)
    assert (env.harness / "project_train.md").read_bytes() == before
    assert journal.read_journal(run_dir / journal.JOURNAL)["state"] == "rolled-back"


def test_backup_path_prefers_the_flat_name_and_falls_back_to_the_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "backup" / "public").mkdir(parents=True)
    assert journal.backup_path(run_dir, "public", "a.md") == run_dir / "backup" / "public.a.md"  # neither
    (run_dir / "backup" / "public" / "a.md").write_bytes(b"old layout")
    assert journal.backup_path(run_dir, "public", "a.md") == run_dir / "backup" / "public" / "a.md"
    (run_dir / "backup" / "public.a.md").write_bytes(b"new layout")
    assert journal.backup_path(run_dir, "public", "a.md").read_bytes() == b"new layout"


@pytest.mark.parametrize("layout", ["one directory", "a folder per root", "none"])
def test_the_report_finds_a_forgotten_memorys_text_in_either_layout(env: Env, layout: str) -> None:
    assert env.run("add", "project_train", "-d", "release train day", "-b", BODY).code == 0
    added, _ = _newest_run(env)
    assert env.run("forget", "project_train").code == 0
    run_dir, _ = _newest_run(env)
    shutil.rmtree(added)  # pruned: its plan held the text too
    if layout == "a folder per root":
        nest_backups_by_root(run_dir)
    elif layout == "none":
        for entry in (run_dir / "backup").iterdir():
            entry.unlink()
    result = env.run("report", "--json")
    assert result.code == 0, result.err
    page = Path(result.json()["report"]).read_text(encoding="utf-8")
    # The forgotten memory's text is held only by the forget run's backup now.
    assert ("zebra-kite" in page) is (layout != "none")
