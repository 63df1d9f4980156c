"""Step definitions for features/post_check.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from conftest import Env, spawn_probed
from pytest_bdd import given, parsers, scenarios, then, when
from test_warm import _backend as backend_for

from pipeline.errors import MemfoldError
from pipeline.mirror import guard
from pipeline.state.proven import forget_proofs

scenarios("post_check.feature")


def _backend(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    forget_proofs()  # nothing proven by an earlier test in this process
    ctx["full"] = []
    original = guard.full_issues

    def counted(*args: Any, **kwargs: Any) -> Any:
        ctx["full"].append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(guard, "full_issues", counted)
    ctx["backend"] = backend_for(env)
    return ctx["backend"]


def _add(ctx: dict[str, Any], name: str, words: str, visibility: str) -> None:
    out = ctx["backend"].add(name, words, f"{words}.", "project", visibility, None)
    assert out["ok"], out


@given("an MCP server backend on an empty project")
def backend_on_empty(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    _backend(env, ctx, monkeypatch)


@given(parsers.parse('an MCP server backend that has added safe "{name}" saying "{words}"'))
def backend_with_safe(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str, words: str) -> None:
    _backend(env, ctx, monkeypatch)
    _add(ctx, name, words, "safe")
    _add(ctx, "project_alpha", "alpha deploys use the blue green script", "private")


@when("the backend adds 3 safe and 3 private memories, then forgets one of each and rewrites one")
def many_writes(ctx: dict[str, Any]) -> None:
    backend = ctx["backend"]
    words = ["kettle descaling happens on fridays", "badge readers reboot at midnight",
             "parking permits renew each spring", "lunch orders close by eleven",
             "printer toner sits in cabinet four", "visitors sign the blue ledger"]
    for i, text in enumerate(words):
        _add(ctx, f"project_note-{i}", text, "safe" if i % 2 else "private")
    for name in ("project_note-0", "project_note-1"):
        assert backend.forget(name)["ok"]
    assert backend.update("project_note-3", body="rewritten: the train leaves at noon")["ok"]


@when(parsers.parse('I edit "{path}" by hand to say "{words}"'))
def hand_edit(env: Env, ctx: dict[str, Any], path: str, words: str) -> None:
    target = env.project / path
    target.write_bytes(target.read_bytes().replace(b"beta runs the smoke tests", words.encode()))
    ctx["edited"] = target.read_bytes()
    ctx["before"] = env.snapshot()


@when("the backend's privacy rules gain a rule for ticket codes")
def new_rule(env: Env, ctx: dict[str, Any]) -> None:
    from pipeline.privacy import load_ruleset

    backend = ctx["backend"]
    rule = {"id": "ticket-code", "category": "credential", "description": "a ticket code",
            "pattern": r"\bTK-[0-9]{9}\b"}
    backend.svc = backend.svc.with_changes(ruleset=load_ruleset([rule]))
    ctx["before"] = env.snapshot()


@when(parsers.parse('the backend tries to add private "{name}"'))
def try_add(ctx: dict[str, Any], name: str) -> None:
    try:
        ctx["backend"].add(name, "gamma waits for the window", "Gamma waits.", "project", "private", None)
    except MemfoldError as exc:
        ctx["refused"] = exc
    else:
        ctx["refused"] = None


@then("only the first write was checked in full")
def first_only(ctx: dict[str, Any]) -> None:
    assert len(ctx["full"]) == 1


@then("the mirror holds exactly the safe memories, byte for byte as in the private store")
def mirror_exact(env: Env) -> None:
    from pipeline.store.memory import INDEX_NAME, parse_memory

    private = {p.name: p.read_bytes() for p in env.harness.glob("*.md") if p.name != INDEX_NAME}
    safe = {name for name, data in private.items() if parse_memory(data, name).is_safe}
    mirror = {p.name: p.read_bytes() for p in env.mirror.glob("*.md") if p.name != INDEX_NAME}
    assert set(mirror) == safe == {"project_note-3.md", "project_note-5.md"}
    assert all(hashlib.sha256(mirror[n]).digest() == hashlib.sha256(private[n]).digest() for n in safe)
    assert b"rewritten: the train leaves at noon" in mirror["project_note-3.md"]


@then("both indexes on disk are rendered from the memories on disk")
def indexes_exact(env: Env) -> None:
    from pipeline.store.index import render_index
    from pipeline.store.memory import INDEX_NAME, parse_memory

    memories = {p.name: parse_memory(p.read_bytes(), p.name) for p in env.harness.glob("*.md")
                if p.name != INDEX_NAME}
    assert (env.harness / INDEX_NAME).read_bytes() == render_index(memories, mirror=False)
    assert (env.mirror / INDEX_NAME).read_bytes() == render_index(memories, mirror=True)
    assert b"(harness only)" not in (env.mirror / INDEX_NAME).read_bytes()
    assert b"project_note-0.md" not in (env.harness / INDEX_NAME).read_bytes()


@then(parsers.parse("memfold {command} passes"))
def passes(env: Env, command: str) -> None:
    result = env.run(*command.split(" "))
    assert result.code == 0, result.out + result.err


@then(parsers.parse('the write is refused with "{code}" naming "{name}"'))
def refused(ctx: dict[str, Any], code: str, name: str) -> None:
    exc = ctx["refused"]
    assert exc is not None and exc.code == code
    issues = getattr(exc, "issues", None) or []
    assert name in str(exc) or any(name in issue.path and issue.code == code for issue in issues)


@then(parsers.parse('"{path}" still says "{words}"'))
def still_says(env: Env, ctx: dict[str, Any], path: str, words: str) -> None:
    data = (env.project / path).read_bytes()
    assert data == ctx["edited"] and words.encode() in data


@then(parsers.parse('the refusal does not show "{value}"'))
def not_shown(ctx: dict[str, Any], value: str) -> None:
    exc = ctx["refused"]
    assert value not in str(exc) and value not in repr(getattr(exc, "data", None))
    assert all(value not in issue.message for issue in getattr(exc, "issues", []))


@then(parsers.parse('the write went through and its receipt holds "{name}" back as "{code}"'))
def held_back(env: Env, ctx: dict[str, Any], name: str, code: str) -> None:
    import json

    assert ctx["refused"] is None and (env.harness / "project_gamma.md").is_file()
    receipt = json.loads(sorted((env.project_home / "receipts").iterdir())[-1].read_bytes())
    assert [(h["name"], h["code"]) for h in receipt["sync"]["held"]] == [(name, code)]


@then(parsers.parse('the private copy of "{name}" still says "{words}"'))
def private_still(env: Env, name: str, words: str) -> None:
    assert words.encode() in (env.harness / name).read_bytes()


@then("the refused write added no receipt and changed no store file")
def nothing_written(env: Env, ctx: dict[str, Any]) -> None:
    assert env.snapshot() == ctx["before"]
    assert not (env.harness / "project_gamma.md").exists()


# The post-state checks of a memfold process, counted.
_COUNTED = """
from pipeline.mirror import guard
seen = {"full": 0, "derived": 0}
full, derived = guard.full_issues, guard.derived_issues
def counted_full(*a, **k):
    seen["full"] += 1
    return full(*a, **k)
def counted_derived(*a, **k):
    seen["derived"] += 1
    return derived(*a, **k)
guard.full_issues, guard.derived_issues = counted_full, counted_derived
"""


def _process_add(env: Env, ctx: dict[str, Any], name: str, words: str, visibility: str) -> None:
    code, checks, err = spawn_probed(env, _COUNTED, "add", name, "-d", words, "-b", f"{words}.", "--visibility", visibility)
    assert code == 0, err
    ctx["checks"] = checks


@given(parsers.parse('a project where "{safe}" (safe) and "{private}" (private) were added by memfold processes'))
def added_by_processes(env: Env, ctx: dict[str, Any], safe: str, private: str) -> None:
    _process_add(env, ctx, safe, "beta runs the smoke tests", "safe")
    _process_add(env, ctx, private, "alpha deploys use the blue green script", "private")
    assert ctx["checks"] == {"full": 0, "derived": 1}  # the second write already started from the first's proof


@when(parsers.parse('a memfold process adds {visibility} "{name}" saying "{words}"'))
def process_adds(env: Env, ctx: dict[str, Any], visibility: str, name: str, words: str) -> None:
    _process_add(env, ctx, name, words, visibility)


@when(parsers.parse('I edit the private memory "{name}" by hand to say "{words}"'))
def hand_edit_private(env: Env, name: str, words: str) -> None:
    path = env.harness / name
    path.write_bytes(path.read_bytes().rstrip(b"\n") + f"\n{words}\n".encode())


@when(parsers.parse('I append "{line}" to the mirror index by hand'))
def hand_edit_index(env: Env, line: str) -> None:
    with open(env.mirror / "MEMORY.md", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@when("the recorded proof names another version of the code that checks a write")
def other_code(env: Env) -> None:
    path = env.project_home / "cache" / "receipts.json"
    document = json.loads(path.read_bytes())
    document["proof"][6][0][1] += 1  # another inode for the first checking module: another installation
    path.write_text(json.dumps(document))


@then("that process checked the post-state only where it changed")
def checked_where_changed(ctx: dict[str, Any]) -> None:
    assert ctx["checks"] == {"full": 0, "derived": 1}


@then("that process checked the post-state in full")
def checked_in_full(ctx: dict[str, Any]) -> None:
    assert ctx["checks"] == {"full": 1, "derived": 0}


@then(parsers.parse('the mirror holds exactly the safe memories "{names}"'))
def mirror_holds(env: Env, names: str) -> None:
    from pipeline.store.memory import INDEX_NAME

    mirror = {p.name: p.read_bytes() for p in env.mirror.glob("*.md") if p.name != INDEX_NAME}
    assert sorted(mirror) == names.split(", ")
    assert all(data == (env.harness / name).read_bytes() for name, data in mirror.items())


@then(parsers.parse('the private memory "{name}" still says "{words}"'))
def private_says(env: Env, name: str, words: str) -> None:
    assert words.encode() in (env.harness / name).read_bytes()
