"""Step definitions for features/githost.feature: hostile git dirs and symlinked host directories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Env
from hostile_repo import make_hostile, tree_digest
from pytest_bdd import given, parsers, scenarios, then

scenarios("githost.feature")


@given("a project whose .git file names a git dir configured to run a program everywhere")
def hostile_git_dir(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    scratch = tmp_path / "hostile"
    scratch.mkdir()
    ctx["hostile"] = make_hostile(env.project, scratch)
    # Committed but not in the worktree: a hand-placed mirror file would be refused as drift.
    (env.project / ".memory" / "project_team.md").unlink()


@then("no program the repository configures has run")
def nothing_ran(ctx: dict[str, Any]) -> None:
    assert ctx["hostile"].ran() == []


@given(parsers.parse('the project\'s "{path}" is a symlink to a directory outside'))
def symlinked_host_dir(env: Env, ctx: dict[str, Any], tmp_path: Path, path: str) -> None:
    outside = tmp_path / "outside"
    (outside / "commands").mkdir(parents=True)
    (outside / "extensions").mkdir()
    link = env.project / path
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    ctx["outside_dir"] = (outside, tree_digest(outside))


@then("the directory outside is unchanged")
def outside_dir_unchanged(ctx: dict[str, Any]) -> None:
    outside, digest = ctx["outside_dir"]
    assert tree_digest(outside) == digest


@then("memfold recorded no installed file")
def nothing_recorded(env: Env) -> None:
    assert not (env.home / "hosts" / "installed.json").exists()
