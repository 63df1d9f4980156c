"""Step definitions for features/memory_tool.feature: the real SDK's tool runner against the fake model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import Env
from memtool_support import SLACK_TOKEN, Session, log_entries, text_of, use
from pytest_bdd import given, parsers, scenarios, then, when

pytestmark = pytest.mark.integration

scenarios("memory_tool.feature")


def _text(raw: str) -> str:
    """A feature's text: ``\\n`` is a line break, ``<a Slack token>`` a real-shaped token."""
    return raw.replace("\\n", "\n").replace("<a Slack token>", SLACK_TOKEN)


def _say(ctx: dict[str, Any], session: Session, command: dict[str, Any]) -> dict[str, Any]:
    result = session.one(command)
    ctx.setdefault("results", []).append(result)
    return result


@given("a model that calls the memory tool through the SDK's tool runner")
def model_with_tool(tool_session: Session, ctx: dict[str, Any]) -> None:
    ctx["session"] = tool_session


@given(parsers.parse('the model has created "{path}" with the text "{text}"'))
@when(parsers.parse('the model creates "{path}" with the text "{text}"'))
def create(ctx: dict[str, Any], path: str, text: str) -> None:
    _say(ctx, ctx["session"], use("create", path=path, file_text=_text(text)))


@given(parsers.parse('a person makes "{name}" safe'))
def make_safe(env: Env, name: str) -> None:
    assert env.run("update", name, "--visibility", "safe").code == 0
    assert (env.mirror / name).is_file()


@when(parsers.parse('the model views "{path}"'))
@then(parsers.parse('the model views "{path}"'))
def view(ctx: dict[str, Any], path: str) -> None:
    _say(ctx, ctx["session"], use("view", path=path))


@when(parsers.parse('the model replaces "{old}" with "{new}" in "{path}"'))
def replace(ctx: dict[str, Any], old: str, new: str, path: str) -> None:
    _say(ctx, ctx["session"], use("str_replace", path=path, old_str=_text(old), new_str=_text(new)))


@when(parsers.parse('the model inserts "{text}" at line {line:d} of "{path}"'))
def insert(ctx: dict[str, Any], text: str, line: int, path: str) -> None:
    _say(ctx, ctx["session"], use("insert", path=path, insert_line=line, insert_text=_text(text)))


def _script(count: int) -> list[list[dict[str, Any]]]:
    """``count`` commands in turns of five: every command, on ten files, with a few the tool refuses."""
    commands: list[dict[str, Any]] = []
    i = 0
    while len(commands) < count:
        name = f"/memories/note_{i}.md"
        commands += [
            use("create", path=name, file_text=f"# Note {i}\nfirst fact {i}\n"),
            use("str_replace", path=name, old_str=f"first fact {i}", new_str=f"first fact {i}, revised"),
            use("insert", path=name, insert_line=2, insert_text=f"second fact {i}"),
            use("view", path=name, view_range=[1, 2]),
            use("create", path=name, file_text="again") if i % 3 == 0 else use("view", path="/memories"),
        ]
        if i % 2:
            commands.append(use("rename", old_path=name, new_path=f"/memories/renamed_{i}.md"))
        if i % 4 == 3:
            commands.append(use("delete", path=f"/memories/renamed_{i}.md"))
        i += 1
    commands = commands[:count]
    return [commands[at:at + 5] for at in range(0, count, 5)]


@when(parsers.parse("the model runs a scripted session of {count:d} memory commands"))
def scripted_session(ctx: dict[str, Any], count: int) -> None:
    ctx["results"] = ctx["session"].run(*_script(count))


@then(parsers.parse('the model was told "{text}"'))
def told(ctx: dict[str, Any], text: str) -> None:
    assert any(not r.get("is_error") and text_of(r) == text for r in ctx["results"]), ctx["results"]


@then(parsers.parse('the model was refused with "{words}"'))
def refused_with(ctx: dict[str, Any], words: str) -> None:
    assert any(r.get("is_error") is True and words in text_of(r) for r in ctx["results"]), ctx["results"]


@then(parsers.parse("the model saw the lines {lines}"))
def saw_lines(ctx: dict[str, Any], lines: str) -> None:
    expected = [part.strip().strip('"') for part in lines.split(",")]
    shown = text_of(ctx["results"][-1]).split("\n")[1:]
    assert [line.split("\t", 1)[1] for line in shown] == expected
    assert [line.split("\t", 1)[0] for line in shown] == [f"{n:>6}" for n in range(1, len(expected) + 1)]


@then(parsers.parse('"{name}" is a private memory of type "{mtype}" described as "{description}"'))
def private_memory(env: Env, name: str, mtype: str, description: str) -> None:
    shown = env.run("show", name, "--json").json()
    assert (shown["visibility"], shown["type"], shown["description"]) == ("private", mtype, description)
    assert not (env.mirror / name).exists()


@then(parsers.parse('the newest receipt is for command "{command}"'))
def newest_receipt(env: Env, command: str) -> None:
    newest = sorted((env.project_home / "receipts").glob("*.json"))[-1]
    assert json.loads(newest.read_bytes())["command"] == command


@then(parsers.parse("the memory tool log names the codes {codes}"))
def logged_codes(env: Env, codes: str) -> None:
    expected = [part.strip().strip('"') for part in codes.split(",")]
    assert [e["code"] for e in log_entries(env) if not e["ok"]] == expected


@then("no tool result holds the Slack token")
def no_token(ctx: dict[str, Any]) -> None:
    assert all(SLACK_TOKEN not in text_of(r) for r in ctx["results"])


@then(parsers.parse("the model was answered {count:d} times, of which at least {ok:d} without error"))
def answered_count(ctx: dict[str, Any], count: int, ok: int) -> None:
    results = ctx["results"]
    assert len(results) == count
    assert sum(1 for r in results if not r.get("is_error")) >= ok, [text_of(r) for r in results if r.get("is_error")]
