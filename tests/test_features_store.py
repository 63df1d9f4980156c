"""Runs features/store.feature and features/receipts.feature; the shared steps live in conftest.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import Env, _last_run
from pytest_bdd import given, scenarios, then, when
from test_backup_layout import nest_backups_by_root

scenarios("store.feature", "receipts.feature")


def _newest_entry(env: Env) -> tuple[Path, Path]:
    """The newest log entry and the post receipt in the run dir it names."""
    log = max((env.project_home / "receipts").iterdir())
    return log, env.project_home / "runs" / json.loads(log.read_bytes())["runId"] / "post-receipt.json"


@then("the newest log entry and its run's post receipt are one file with two names")
def one_file(env: Env) -> None:
    log, post = _newest_entry(env)
    assert json.loads(log.read_bytes())["phase"] == "post"
    assert log.samefile(post), (log.stat(), post.stat())
    assert log.stat().st_nlink == 2


@when("I remember the newest log entry")
def remember_entry(env: Env, ctx: dict[str, Any]) -> None:
    log, post = _newest_entry(env)
    ctx["entry"] = (log, post.parent, log.read_bytes())


@given("the config keeps 1 run dir")
@when("the config keeps 1 run dir")
def keep_one(env: Env) -> None:
    (env.home / "config.yaml").write_text("runs: {keep: 1}\n", encoding="utf-8")


@then("the remembered entry's run dir is gone")
def run_dir_gone(ctx: dict[str, Any]) -> None:
    _log, run_dir, _data = ctx["entry"]
    assert not run_dir.exists()


@then("the remembered entry is byte-identical to before and is its only name")
def entry_intact(ctx: dict[str, Any]) -> None:
    log, _run_dir, data = ctx["entry"]
    assert log.read_bytes() == data
    assert log.stat().st_nlink == 1


@then('"verify" of the remembered entry exits 0')
def verify_entry(env: Env, ctx: dict[str, Any]) -> None:
    log, _run_dir, _data = ctx["entry"]
    result = env.run("verify", str(log))
    assert result.code == 0, result.out


@then("the last run's backup directory holds only files, named by root and file")
def backups_in_one_directory(env: Env) -> None:
    backup = _last_run(env) / "backup"
    entries = {p.name: p for p in backup.iterdir()}
    assert "harness.project_ci.md" in entries and "public.project_ci.md" in entries, sorted(entries)
    assert all(p.is_file() and not p.is_symlink() for p in entries.values()), sorted(entries)
    assert all(name.partition(".")[0] in ("harness", "public", "heads", "home") for name in entries), sorted(entries)


@when("the last run's backups are moved into a folder per root, as older versions kept them")
def nest_backups(env: Env) -> None:
    backup = _last_run(env) / "backup"
    nest_backups_by_root(backup.parent)
    assert not [p for p in backup.iterdir() if p.is_file()]
