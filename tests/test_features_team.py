"""Step definitions for features/team.feature: several people, real git, the real CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd import given, parsers, scenarios, then, when
from team_repo import Person, Team

pytestmark = pytest.mark.integration

scenarios("team.feature")


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team.create(tmp_path)


@pytest.fixture
def seen() -> dict[str, Any]:
    return {"results": [], "merge": None}


def _title_file(title: str, kind: str = "project") -> str:
    return f"{kind}_{title.lower().replace(' ', '-')}.md"


def _ok(person: Person, line: str) -> str:
    result = person.run(line)
    assert result.code == 0, (person.name, line, result.out, result.err)
    return result.out


def _push(person: Person) -> None:
    person.git("push", "-q", "origin", "HEAD:main")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- Background -------------------------------------------------------------------------------------------


@given(parsers.parse('a bare remote and the people "{first}" and "{second}", each with a home of their own'))
def people(team: Team, first: str, second: str) -> None:
    team.person(first)
    team.person(second)


@given(parsers.parse('alice has cloned the remote and committed the safe memory "{title}" saying "{text}"'))
def alice_first(team: Team, title: str, text: str) -> None:
    alice = team.clone("alice")
    (alice.clone / "README.md").write_text("a project\n")
    alice.commit("start")
    _ok(alice, f"add {title!r} -d {text!r} --visibility safe -b {text!r}")
    alice.commit("a memory for the team")
    _push(alice)


@given(parsers.parse('{name} keeps the private memory "{title}" saying "{text}"'))
def keeps_private(team: Team, name: str, title: str, text: str) -> None:
    _ok(team.person(name), f"add {title!r} -d {text!r} -b {text!r}")


# --- People and git ---------------------------------------------------------------------------------------


@given(parsers.parse("{name} clones the remote"))
@when(parsers.parse("{name} clones the remote"))
def clones(team: Team, name: str) -> None:
    team.clone(name)


@given(parsers.parse("{name} clones the remote and trusts it"))
def clones_and_trusts(team: Team, name: str) -> None:
    person = team.clone(name)
    _ok(person, "trust")


@given(parsers.parse('{name} adds the safe memory "{title}" saying "{text}" and pushes'))
def adds_and_pushes(team: Team, name: str, title: str, text: str) -> None:
    person = team.person(name)
    person.git("pull", "-q", "--no-rebase", "origin", "main")
    _ok(person, f"add {title!r} -d {text!r} --visibility safe -b {text!r}")
    person.commit(f"{name}: {title}")
    _push(person)


@given(parsers.parse('{name} adds the safe memory "{title}" saying "{text}" and commits'))
def adds_and_commits(team: Team, name: str, title: str, text: str) -> None:
    person = team.person(name)
    _ok(person, f"add {title!r} -d {text!r} --visibility safe -b {text!r}")
    person.commit(f"{name}: {title}")


@given(parsers.parse('{name} adds the safe memory "{title}" saying "{text}" without committing'))
def adds_uncommitted(team: Team, name: str, title: str, text: str) -> None:
    _ok(team.person(name), f"add {title!r} -d {text!r} --visibility safe -b {text!r}")


@when("bob stashes his work, pulls with rebase and pops the stash")
def stash_rebase_pop(team: Team, seen: dict[str, Any]) -> None:
    bob = team.person("bob")
    bob.git("stash", "push", "--include-untracked", "-q")
    seen["merge"] = bob.git("pull", "--rebase", "origin", "main", check=False)
    popped = bob.git("stash", "pop", "-q", check=False)
    assert popped.returncode == 0, popped.stdout + popped.stderr


@given(parsers.parse('{name} updates "{title}" to say "{text}" and pushes'))
def updates_and_pushes(team: Team, name: str, title: str, text: str) -> None:
    person = team.person(name)
    _ok(person, f"update {title!r} -b {text!r}")
    person.commit(f"{name}: {title} changed")
    _push(person)


@given(parsers.parse('{name} updates "{title}" to say "{text}" and commits'))
def updates_and_commits(team: Team, name: str, title: str, text: str) -> None:
    person = team.person(name)
    _ok(person, f"update {title!r} -b {text!r}")
    person.commit(f"{name}: {title} changed")


def _alice_pushes(team: Team, line: str) -> None:
    alice = team.person("alice")
    _ok(alice, line)
    alice.commit(line)
    _push(alice)


@given(parsers.parse('alice renames "{old}" to "{new}" and pushes'))
def renames(team: Team, old: str, new: str) -> None:
    _alice_pushes(team, f"rename {old!r} {new!r}")


@given(parsers.parse('alice forgets "{title}" and pushes'))
def forgets(team: Team, title: str) -> None:
    _alice_pushes(team, f"forget {title!r}")


@given(parsers.parse('alice makes "{title}" private and pushes'))
def unpublishes(team: Team, title: str) -> None:
    _alice_pushes(team, f"update {title!r} --visibility private")


@when(parsers.parse("{name} pulls"))
def pulls(team: Team, seen: dict[str, Any], name: str) -> None:
    seen["merge"] = team.person(name).git("pull", "--no-rebase", "origin", "main", check=False)


@then("the pull succeeded")
def pull_succeeded(seen: dict[str, Any]) -> None:
    assert seen["merge"].returncode == 0, seen["merge"].stderr + seen["merge"].stdout


@then("the merge had no conflict")
def no_conflict(seen: dict[str, Any]) -> None:
    merge = seen["merge"]
    assert merge.returncode == 0 and "CONFLICT" not in merge.stdout, merge.stdout + merge.stderr


@then(parsers.parse('the merge had a conflict in "{path}"'))
def a_conflict(seen: dict[str, Any], path: str) -> None:
    merge = seen["merge"]
    assert merge.returncode != 0 and f"Merge conflict in {path}" in merge.stdout, merge.stdout + merge.stderr


@when(parsers.parse('{name} runs "{line}"'))
def runs(team: Team, seen: dict[str, Any], name: str, line: str) -> None:
    seen["results"].append((name, line, team.person(name).run(line)))


@then("every one of those commands exited 0")
def all_ok(seen: dict[str, Any]) -> None:
    failed = [(name, line, r.code, r.err) for name, line, r in seen["results"] if r.code != 0]
    assert failed == []


@then(parsers.parse("{name}'s \"{line}\" exits 0"))
def exits_zero(team: Team, name: str, line: str) -> None:
    result = team.person(name).run(line)
    assert result.code == 0, (result.out, result.err)


# --- What each person has ---------------------------------------------------------------------------------


@then(parsers.parse("bob's mirror still holds alice's \"{name}\" byte for byte"))
def mirror_holds_alices(team: Team, name: str) -> None:
    assert (team.person("bob").mirror / name).read_bytes() == (team.person("alice").mirror / name).read_bytes()


@then(parsers.parse("{name}'s mirror index lists \"{first}\" and \"{second}\""))
def index_lists(team: Team, name: str, first: str, second: str) -> None:
    index = (team.person(name).mirror / "MEMORY.md").read_text()
    assert f"]({first})" in index and f"]({second})" in index, index
    assert index.count("\n- ") == len({line for line in index.splitlines() if line.startswith("- ")})


@then(parsers.parse("{name}'s mirror holds no conflict marker"))
def no_markers(team: Team, name: str) -> None:
    for path in team.person(name).mirror.iterdir():
        assert b"<<<<<<<" not in path.read_bytes(), path


@then(parsers.parse("{name}'s mirror holds \"{file}\""))
def mirror_has(team: Team, name: str, file: str) -> None:
    assert (team.person(name).mirror / file).is_file()


@then(parsers.parse("{name}'s \"{line}\" shows \"{file}\""))
def shows(team: Team, name: str, line: str, file: str) -> None:
    out = _ok(team.person(name), line)
    assert file in out, out


@then(parsers.parse("{name}'s list shows \"{file}\" from the team at \"{path}\""))
def shows_team(team: Team, name: str, file: str, path: str) -> None:
    rows = json.loads(_ok(team.person(name), "list --json"))["memories"]
    row = next(r for r in rows if r["file"] == file)
    assert row["origin"] == "team" and row["path"] == path, row
    assert row["visibility"] == "safe"


@then(parsers.parse("{name}'s \"{line}\" prints \"{text}\""))
def prints(team: Team, name: str, line: str, text: str) -> None:
    out = _ok(team.person(name), line)
    assert text in out, out


@then(parsers.parse("{name}'s \"search {query}\" finds \"{file}\""))
def finds(team: Team, name: str, query: str, file: str) -> None:
    rows = json.loads(_ok(team.person(name), f"search {query} --json"))["results"]
    assert file in [r["file"] for r in rows], rows


@then(parsers.parse("{name}'s inject block lists \"{file}\" as safe and holds \"{text}\""))
def inject_holds(team: Team, name: str, file: str, text: str) -> None:
    block = _ok(team.person(name), "inject --query deploys")
    assert f"- {file} [safe, project]" in block, block
    assert text in block, block


@then(parsers.parse("{name}'s inject block does not hold \"{text}\""))
def inject_lacks(team: Team, name: str, text: str) -> None:
    block = _ok(team.person(name), "inject --query deploys")
    assert text not in block, block


@then(parsers.parse("{name}'s receipt of the sync names the commit and author \"{author}\" for \"{file}\""))
def provenance(team: Team, name: str, author: str, file: str) -> None:
    person = team.person(name)
    receipts = sorted((person.project_home() / "receipts").iterdir())
    rows = [row for path in receipts for row in (json.loads(path.read_text()).get("sync") or {}).get("adopted", [])
            if row["name"] == file]
    assert rows and rows[-1]["source"] == "commit" and rows[-1]["author"] == author, rows
    alice_commit = team.person("alice").git("log", "-1", "--format=%H", "--", f".memory/{file}").stdout.strip()
    assert rows[-1]["commit"] == alice_commit


@then(parsers.parse("{name}'s \"sync --json\" holds \"{file}\" as \"{code}\""))
def sync_holds(team: Team, name: str, file: str, code: str) -> None:
    record = json.loads(_ok(team.person(name), "sync --json"))["sync"]
    assert {"name": file, "code": code}.items() <= next(h for h in record["held"] if h["name"] == file).items()


@then(parsers.parse("{name}'s private store has no \"{file}\""))
def store_lacks(team: Team, name: str, file: str) -> None:
    assert not (team.person(name).harness() / file).exists()


@then(parsers.parse("{name}'s private store has \"{file}\""))
def store_has(team: Team, name: str, file: str) -> None:
    assert (team.person(name).harness() / file).is_file()


@then(parsers.parse("{name}'s private store holds \"{file}\" as alice wrote it"))
def store_holds_alices(team: Team, name: str, file: str) -> None:
    ours = team.person(name).harness() / file
    assert ours.read_bytes() == (team.person("alice").harness() / file).read_bytes()


@then(parsers.parse("{name}'s mirror \"{file}\" still holds the conflict markers"))
def still_markers(team: Team, name: str, file: str) -> None:
    assert b"<<<<<<<" in (team.person(name).mirror / file).read_bytes()


@then(parsers.parse("{name}'s mirror \"{file}\" says \"{text}\" with no conflict marker"))
def settled(team: Team, name: str, file: str, text: str) -> None:
    data = (team.person(name).mirror / file).read_bytes()
    assert text.encode() in data and b"<<<<<<<" not in data and b">>>>>>>" not in data
    assert data == (team.person(name).harness() / file).read_bytes()


@when("bob undoes his last run")
def undo_last(team: Team) -> None:
    bob = team.person("bob")
    run_id = sorted((bob.project_home() / "receipts").iterdir())[-1].name[9:-5]
    _ok(bob, f"undo {run_id}")


# --- Worktrees, branches, checkouts -----------------------------------------------------------------------


@when(parsers.parse('bob adds a linked worktree "{folder}"'))
def worktree(team: Team, folder: str) -> None:
    team.person("bob").git("worktree", "add", "-q", str(team.root / folder), "-b", folder)


@then(parsers.parse('bob\'s worktree "{folder}" is trusted without a trust of its own'))
def worktree_trusted(team: Team, folder: str) -> None:
    status = json.loads(team.person("bob").run("status --json", where=team.root / folder).out)
    assert status["trusted"] is True


@then(parsers.parse('bob\'s list in the worktree "{folder}" shows "{file}"'))
def worktree_lists(team: Team, folder: str, file: str) -> None:
    result = team.person("bob").run("list", where=team.root / folder)
    assert result.code == 0 and file in result.out, result


@given("bob has an empty repository cloned before alice's first push")
def early_clone(team: Team) -> None:
    bob = team.person("bob")
    from team_repo import git

    git(team.root, "init", "-q", "-b", "main", str(bob.clone))
    bob.git("config", "user.name", "bob")
    bob.git("config", "user.email", "bob@example.org")
    bob.git("remote", "add", "origin", str(team.remote))


@given("alice registers memfold's git merge drivers")
def drivers(team: Team) -> None:
    _ok(team.person("alice"), "hooks install git")
    team.person("alice").commit("memfold's attributes")


@given(parsers.parse('alice adds the safe memory "{title}" saying "{text}" on a new branch "{branch}"'))
def on_branch(team: Team, title: str, text: str, branch: str) -> None:
    alice = team.person("alice")
    alice.git("checkout", "-q", "-b", branch, "main")
    _ok(alice, f"add {title!r} -d {text!r} --visibility safe -b {text!r}")
    alice.commit(title)


@given(parsers.parse('alice adds the safe memory "{title}" saying "{text}" on a new branch "{branch}" from the main '
                     'branch'))
def on_branch_from_main(team: Team, title: str, text: str, branch: str) -> None:
    on_branch(team, title, text, branch)


@when(parsers.parse('alice merges branch "{source}" into "{target}"'))
def merges(team: Team, seen: dict[str, Any], source: str, target: str) -> None:
    alice = team.person("alice")
    alice.git("checkout", "-q", target)
    seen["merge"] = alice.git("merge", "--no-edit", source, check=False)


@then("alice's chain head names her newest receipt")
def head_names_newest(team: Team) -> None:
    alice = team.person("alice")
    heads = list((alice.clone / ".memfold" / "heads").iterdir())
    assert len(heads) == 1
    head = json.loads(heads[0].read_text())
    assert head["seq"] == len(list((alice.project_home() / "receipts").iterdir()))


@given("alice notes her store")
def notes(team: Team, seen: dict[str, Any]) -> None:
    harness = team.person("alice").harness()
    seen["noted"] = {p.name: _sha(p) for p in harness.iterdir()}


@when("alice checks out the commit before her last")
def older(team: Team) -> None:
    team.person("alice").git("checkout", "-q", "HEAD~1")


@when("alice checks out the main branch again")
def back(team: Team) -> None:
    team.person("alice").git("checkout", "-q", "main")


@then("alice's store is as she noted it")
def as_noted(team: Team, seen: dict[str, Any]) -> None:
    harness = team.person("alice").harness()
    now = {p.name: _sha(p) for p in harness.iterdir()}
    assert {k: v for k, v in now.items() if k != "MEMORY.md"} == \
        {k: v for k, v in seen["noted"].items() if k != "MEMORY.md"}


@then(parsers.parse('no mirror, git history or other person holds "{first}" or "{second}"'))
def nothing_leaked(team: Team, first: str, second: str) -> None:
    markers = {"alice": first.encode(), "bob": second.encode()}
    for person in team.people.values():
        for path in person.mirror.iterdir():
            data = path.read_bytes()
            assert not any(m in data for m in markers.values()), path
        history = person.git("log", "--all", "-p", "--format=%H").stdout.encode()
        assert not any(m in history for m in markers.values()), person.name
        for other, marker in markers.items():
            if other != person.name and (person.home / "projects").is_dir():
                for path in person.harness().iterdir():
                    assert marker not in path.read_bytes(), (person.name, path)
