"""Step definitions for features/gitmerge.feature: a team's clones, real git merges, memfold's drivers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Result
from gitteam import HEADS, Mate, Team, git_env, make_team, memfold_stub
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline.mirror.attributes import BEGIN, block
from pipeline.store.memory import parse_memory

pytestmark = pytest.mark.integration

scenarios("gitmerge.feature")

CHAIN = "c4a1" * 16


@pytest.fixture
def team_box() -> dict[str, Team]:
    return {}


def _mate(team_box: dict[str, Team], name: str) -> Mate:
    return team_box["team"].mates[name]


@given(parsers.parse('a team of "{first}" and "{second}" sharing a bare remote, both with memfold\'s merge drivers'))
def team_with_drivers(team_box: dict[str, Team], tmp_path: Path, first: str, second: str) -> None:
    team_box["team"] = make_team(tmp_path, (first, second), drivers=(first, second))


@given(parsers.parse('a team of "{first}" and "{second}" sharing a bare remote, where only "{only}" has '
                     "memfold's merge drivers"))
def team_partly(team_box: dict[str, Team], tmp_path: Path, first: str, second: str, only: str) -> None:
    team_box["team"] = make_team(tmp_path, (first, second), drivers=(only,))


@given(parsers.parse('"{who}" adds the safe memory "{title}" and pushes'))
def add_and_push(team_box: dict[str, Team], who: str, title: str) -> None:
    mate = _mate(team_box, who)
    _add(mate, title)
    mate.ok("push", "-q", "origin", "HEAD")


@given(parsers.parse('"{who}" adds the safe memory "{title}" and commits'))
def add_and_commit(team_box: dict[str, Team], who: str, title: str) -> None:
    _add(_mate(team_box, who), title)


def _add(mate: Mate, title: str) -> None:
    result = mate.memfold("add", title, "-d", f"{title} as {mate.name} knows it", "--visibility", "safe",
                          "-b", f"first line of {title}\nsecond line\nthird line")
    assert result.code == 0, result.err
    mate.commit(f"{mate.name}: {title}")


@given(parsers.parse('"{who}" changes the description of "{name}" at "{now}" and pushes'))
def change_description(team_box: dict[str, Team], monkeypatch: pytest.MonkeyPatch, who: str, name: str,
                       now: str) -> None:
    _update_and_push(_mate(team_box, who), monkeypatch, now, name, "--description", f"described by {who}")


@given(parsers.parse('"{who}" changes the first body line of "{name}" to "{line}" and pushes'))
def change_line_and_push(team_box: dict[str, Team], monkeypatch: pytest.MonkeyPatch, who: str, name: str,
                         line: str) -> None:
    mate = _mate(team_box, who)
    body = line + "\n" + _body(mate, name).split("\n", 1)[1]
    _update_and_push(mate, monkeypatch, "2026-12-01T09:00:00Z", name, "--body", body)


def _update_and_push(mate: Mate, monkeypatch: pytest.MonkeyPatch, now: str, name: str, *options: str) -> None:
    monkeypatch.setenv("MEMFOLD_NOW", now)
    result = mate.memfold("update", name, *options)
    assert result.code == 0, result.err
    mate.commit(f"{mate.name}: update {name}")
    mate.ok("push", "-q", "origin", "HEAD")


# Bob's store does not hold alice's memory until `memfold sync` adopts it: he changes the file the way his
# memfold writes one.
@given(parsers.parse('"{who}" changes the body of "{name}" at "{now}" and commits'))
def change_body(team_box: dict[str, Team], who: str, name: str, now: str) -> None:
    mate = _mate(team_box, who)
    mate.edit_memory(name, now, body=_body(mate, name).replace("third line", f"third line, as {who} has it"))
    mate.commit(f"{who}: body of {name}")


@given(parsers.parse('"{who}" changes the first body line of "{name}" to "{line}" and commits'))
def change_line(team_box: dict[str, Team], who: str, name: str, line: str) -> None:
    mate = _mate(team_box, who)
    mate.edit_memory(name, "2026-12-02T09:00:00Z", body=line + "\n" + _body(mate, name).split("\n", 1)[1])
    mate.commit(f"{who}: first line of {name}")


def _body(mate: Mate, name: str) -> str:
    return parse_memory(mate.path(name).read_bytes(), name).body


@given(parsers.parse('"{who}" commits the chain head at seq {seq:d}'))
def head_on_current(team_box: dict[str, Team], who: str, seq: int) -> None:
    mate = _mate(team_box, who)
    mate.write_head(CHAIN, seq)
    mate.commit(f"head {seq}")


@given(parsers.parse('"{who}" commits the chain head at seq {seq:d} on a new branch "{branch}"'))
def head_on_new_branch(team_box: dict[str, Team], who: str, seq: int, branch: str) -> None:
    mate = _mate(team_box, who)
    mate.ok("checkout", "-q", "-b", branch)
    head_on_current(team_box, who, seq)


@given(parsers.parse('"{who}" commits the chain head at seq {seq:d} on "{branch}"'))
def head_on_branch(team_box: dict[str, Team], who: str, seq: int, branch: str) -> None:
    mate = _mate(team_box, who)
    mate.ok("checkout", "-q", branch)
    head_on_current(team_box, who, seq)


@given(parsers.parse('"{who}" starts the branch "{branch}"'))
def start_branch(team_box: dict[str, Team], who: str, branch: str) -> None:
    _mate(team_box, who).ok("checkout", "-q", "-b", branch)


@given(parsers.parse('"{who}" goes back to "{branch}"'))
def back_to(team_box: dict[str, Team], who: str, branch: str) -> None:
    _mate(team_box, who).ok("checkout", "-q", branch)


@given(parsers.parse('"{who}" installs the git hooks with "--sync-hook" through a memfold on PATH whose sync fails'))
def install_through_stub(team_box: dict[str, Team], ctx: dict[str, Any], tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch, who: str) -> None:
    mate = _mate(team_box, who)
    log = tmp_path / "sync-calls.log"
    stub = memfold_stub(tmp_path / "bin", log, sync_exit=3)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["memfold", "--home", str(mate.home), "--project", str(mate.clone), "hooks", "install",
                           "git", "--sync-hook"], capture_output=True, text=True, env=git_env(), timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    ctx["sync_log"] = log


@given(parsers.parse('"{who}" has a post-merge hook of his own'))
def own_hook(team_box: dict[str, Team], ctx: dict[str, Any], who: str) -> None:
    hook = _mate(team_box, who).clone / ".git" / "hooks" / "post-merge"
    hook.write_text("#!/bin/sh\necho merged >> merged.log\n")
    hook.chmod(0o755)
    ctx["own_hook"] = (hook, hook.read_bytes())


@given(parsers.parse('I remember "{who}"\'s git config and hooks'))
def remember_git(team_box: dict[str, Team], ctx: dict[str, Any], who: str) -> None:
    ctx["git_state"] = _git_state(_mate(team_box, who))


def _git_state(mate: Mate) -> dict[str, bytes]:
    git_dir = mate.clone / ".git"
    hooks = {f"hooks/{p.name}": p.read_bytes() for p in sorted((git_dir / "hooks").iterdir())}
    return {"config": (git_dir / "config").read_bytes(), **hooks}


@given(parsers.parse('"{who}" runs "{command}"'))
@when(parsers.parse('"{who}" runs "{command}"'))
def git_command(team_box: dict[str, Team], ctx: dict[str, Any], who: str, command: str) -> None:
    args = shlex.split(command)
    assert args[0] == "git"
    ctx["git"] = _mate(team_box, who).git(*args[1:])


@when(parsers.parse('"{who}" runs memfold "{command}"'))
def memfold_command(team_box: dict[str, Team], ctx: dict[str, Any], who: str, command: str) -> None:
    ctx["memfold"] = _mate(team_box, who).memfold(*shlex.split(command))


@given(parsers.parse('"{who}" runs memfold "{command}"'))
def memfold_done(team_box: dict[str, Team], who: str, command: str) -> None:
    result = _mate(team_box, who).memfold(*shlex.split(command))
    assert result.code == 0, result.err


@then(parsers.parse("git exits {code:d}"))
def git_exits(ctx: dict[str, Any], code: int) -> None:
    done = ctx["git"]
    assert done.returncode == code, (done.stdout, done.stderr)


@then(parsers.parse("memfold exits {code:d}"))
def memfold_exits(ctx: dict[str, Any], code: int) -> None:
    result: Result = ctx["memfold"]
    assert result.code == code, (result.out, result.err)


@then(parsers.parse('memfold exits {code:d} naming "{error}"'))
def memfold_fails(ctx: dict[str, Any], code: int, error: str) -> None:
    result: Result = ctx["memfold"]
    assert result.code == code and error in result.err, (result.out, result.err)


@then(parsers.parse('"{who}" has no unmerged file'))
def nothing_unmerged(team_box: dict[str, Team], who: str) -> None:
    mate = _mate(team_box, who)
    assert mate.ok("ls-files", "--unmerged") == ""
    assert mate.ok("status", "--porcelain") == ""


@then(parsers.parse('git lists "{name}" as unmerged for "{who}"'))
def unmerged(team_box: dict[str, Team], name: str, who: str) -> None:
    listed = _mate(team_box, who).ok("diff", "--name-only", "--diff-filter=U").split()
    assert listed == [f".memory/{name}"], listed


@then(parsers.parse('"{who}"\'s mirror index lists "{first}" and "{second}"'))
def index_lists(team_box: dict[str, Team], who: str, first: str, second: str) -> None:
    text = _mate(team_box, who).path("MEMORY.md").read_text()
    assert f"]({first})" in text and f"]({second})" in text and "<<<<<<<" not in text, text


@then(parsers.parse('"{who}"\'s "{name}" is byte-identical to "{other}"\'s'))
def identical(team_box: dict[str, Team], who: str, name: str, other: str) -> None:
    assert _mate(team_box, who).path(name).read_bytes() == _mate(team_box, other).path(name).read_bytes()


@then(parsers.parse('"{who}"\'s "{name}" has alice\'s description, bob\'s body and modified "{later}"'))
def merged_fields(team_box: dict[str, Team], who: str, name: str, later: str) -> None:
    data = _mate(team_box, who).path(name).read_bytes()
    memory = parse_memory(data, name)
    assert memory.description == "described by alice"
    assert memory.body.endswith("third line, as bob has it\n")
    assert memory.modified == later
    assert memory.created == "2026-11-30" and memory.visibility == "safe"
    committed = _mate(team_box, who).ok("show", f"HEAD:.memory/{name}").encode()
    assert committed == data


@then(parsers.parse('"{who}"\'s "{name}" holds git\'s conflict markers with "{mine}" above "{theirs}"'))
def conflict_markers(team_box: dict[str, Team], who: str, name: str, mine: str, theirs: str) -> None:
    text = _mate(team_box, who).path(name).read_text()
    start, middle, end = text.index("\n<<<<<<< "), text.index("\n=======\n"), text.index("\n>>>>>>> ")
    assert start < middle < end, text
    assert mine in text[start:middle] and theirs in text[middle:end], text


@then(parsers.parse('"{who}"\'s chain head is the one at seq {seq:d}'))
def head_is(team_box: dict[str, Team], who: str, seq: int) -> None:
    mate = _mate(team_box, who)
    path = mate.clone / HEADS / f"{CHAIN[:16]}.json"
    assert json.loads(path.read_bytes())["seq"] == seq
    assert mate.ok("show", f"HEAD:{HEADS.as_posix()}/{CHAIN[:16]}.json").encode() == path.read_bytes()


@then(parsers.parse('"{who}"\'s chain head names her newest receipt'))
def head_names_newest(team_box: dict[str, Team], who: str) -> None:
    mate = _mate(team_box, who)
    (path,) = (mate.clone / HEADS).iterdir()
    newest = max((mate.env.project_home / "receipts").iterdir())
    head = json.loads(path.read_bytes())
    assert head["seq"] == int(newest.name[:8]) == 3
    assert head["runId"] in newest.name
    assert mate.ok("show", f"HEAD:{HEADS.as_posix()}/{path.name}").encode() == path.read_bytes()
    assert mate.memfold("audit").code == 0


@then(parsers.parse('the memfold on PATH ran "{args}" once in "{who}"\'s clone, after "--home" and bob\'s home'))
def ran_once(team_box: dict[str, Team], ctx: dict[str, Any], args: str, who: str) -> None:
    ran_times(team_box, ctx, args, 1, who)


@then(parsers.parse('the memfold on PATH ran "{args}" {times:d} times in "{who}"\'s clone, after "--home" and '
                    "bob's home"))
def ran_times(team_box: dict[str, Team], ctx: dict[str, Any], args: str, times: int, who: str) -> None:
    mate = _mate(team_box, who)
    lines = ctx["sync_log"].read_text().splitlines()
    assert lines == [f"--home {mate.home} {args}\t{mate.clone}"] * times, lines


@then(parsers.parse('"{who}"\'s private store holds "{name}" as the mirror has it'))
def adopted(team_box: dict[str, Team], who: str, name: str) -> None:
    mate = _mate(team_box, who)
    assert (mate.env.harness / name).read_bytes() == mate.path(name).read_bytes()


@then(parsers.parse('"{who}"\'s post-merge hook is unchanged'))
def own_hook_unchanged(ctx: dict[str, Any], who: str) -> None:
    hook, data = ctx["own_hook"]
    assert hook.read_bytes() == data


@then(parsers.parse('"{who}"\'s git config names no memfold merge driver'))
def no_driver(team_box: dict[str, Team], who: str) -> None:
    assert b"[merge " not in (_mate(team_box, who).clone / ".git" / "config").read_bytes()


@then(parsers.parse('"{who}"\'s git config and hooks are as remembered'))
def git_as_remembered(team_box: dict[str, Team], ctx: dict[str, Any], who: str) -> None:
    assert _git_state(_mate(team_box, who)) == ctx["git_state"]


@then(parsers.parse('"{who}"\'s .gitattributes still holds memfold\'s block'))
def block_kept(team_box: dict[str, Team], who: str) -> None:
    text = (_mate(team_box, who).clone / ".gitattributes").read_text()
    assert text.count(BEGIN) == 1 and block() in text
