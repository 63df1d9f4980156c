"""Step definitions for features/githost.feature: hostile git dirs and symlinked host directories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Env
from hostile_git import make_hostile
from pytest_bdd import given, scenarios, then

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
