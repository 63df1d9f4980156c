"""Step definitions for features/layout.feature: worktrees, clones and the adoption of old stores."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("layout.feature")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   check=True, capture_output=True)


def _repository(env: Env) -> None:
    _git(env.project, "commit", "-q", "--allow-empty", "-m", "init")


@given("a repository with a linked worktree")
def with_worktree(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    _repository(env)
    _git(env.project, "worktree", "add", "-q", str(tmp_path / "wt"))
    ctx["the worktree"] = Env(home=env.home, project=tmp_path / "wt")
    ctx["the main checkout"] = env


@given("a clone of the repository")
def with_clone(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    subprocess.run(["git", "clone", "-q", str(env.project), str(tmp_path / "clone")], check=True)
    ctx["the clone"] = Env(home=env.home, project=tmp_path / "clone")


@given("a repository with a worktree that has a store of its own")
def with_old_store(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    """The old key of a worktree is the hash of its own path: a store made there before it was one has it."""
    _repository(env)
    wt = tmp_path / "wt"
    wt.mkdir()
    old = Env(home=env.home, project=wt)
    assert old.run("add", "project_old", "-d", "kept in the worktree", "--visibility", "safe").code == 0
    os.rename(wt / ".memory", tmp_path / "mirror")
    os.rename(wt / ".memfold", tmp_path / "heads")  # git adds a worktree only into an empty directory
    _git(env.project, "worktree", "add", "-q", str(wt))
    os.rename(tmp_path / "mirror", wt / ".memory")
    os.rename(tmp_path / "heads", wt / ".memfold")
    ctx["old home"] = env.home / "projects" / hashlib.sha256(str(wt.resolve()).encode()).hexdigest()
    assert ctx["old home"].is_dir()
    ctx["the worktree"] = old


@when(parsers.parse('I run "{command}" in {where}'))
def run_in(ctx: dict[str, Any], command: str, where: str) -> None:
    ctx["result"] = ctx[where].run(*shlex.split(command))


@then("the main checkout and the worktree use one private store")
def one_store(ctx: dict[str, Any]) -> None:
    main, wt = ctx["the main checkout"], ctx["the worktree"]
    assert main.project_home == wt.project_home
    assert (main.harness / "project_deploy.md").is_file()


@then(parsers.parse('the output does not mention "{text}"'))
def output_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["result"].out + ctx["result"].err


@then(parsers.parse('the error does not mention "{text}"'))
def error_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["result"].err


@then("no store is left under the worktree's own path")
def old_store_gone(ctx: dict[str, Any]) -> None:
    assert not ctx["old home"].exists()
    assert (ctx["the worktree"].project_home / "memory" / "project_old.md").is_file()


@then(parsers.parse('the status says the worktree\'s mirror is behind on "{name}", with nothing from outside'))
def status_behind(ctx: dict[str, Any], name: str) -> None:
    import json

    team = json.loads(ctx["result"].out)["team"]
    assert (team["incoming"], team["held"], team["conflicts"]) == ([], [], []), team
    assert team["behind"] == [name]
    # Behind, not edited: the worktree's copy is still the old wording memfold wrote there.
    wt = ctx["the worktree"]
    assert b"ops/deploy.sh" in (wt.mirror / name).read_bytes() and b"ops/ship.sh" in (wt.harness / name).read_bytes()


@then(parsers.parse('the worktree\'s mirror copy of "{name}" is byte-identical to the private copy'))
def worktree_copy(ctx: dict[str, Any], name: str) -> None:
    wt = ctx["the worktree"]
    assert (wt.mirror / name).read_bytes() == (wt.harness / name).read_bytes()


@when(parsers.parse('I append a line to the worktree\'s mirror copy of "{name}"'))
def hand_edit_worktree_mirror(ctx: dict[str, Any], name: str) -> None:
    with open(ctx["the worktree"].mirror / name, "a", encoding="utf-8") as fh:
        fh.write("edited by hand\n")


@then(parsers.parse('the worktree\'s mirror copy of "{name}" still ends with the hand edit'))
def hand_edit_kept(ctx: dict[str, Any], name: str) -> None:
    assert (ctx["the worktree"].mirror / name).read_bytes().endswith(b"edited by hand\n")


@then("the worktree's own store is still in place")
def old_store_kept(ctx: dict[str, Any]) -> None:
    assert (ctx["old home"] / "memory" / "project_old.md").is_file()
    # Read where it is: no store was made (or moved) under the repository's key by a session start.
    assert list((ctx["the worktree"].home / "projects").iterdir()) == [ctx["old home"]]
