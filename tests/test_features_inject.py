"""Step definitions for features/inject.feature: the injected block and terminal output."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_cli_store import TERMINAL_HOSTILE
from test_inject import DB_PASSWORD, HOSTILE_BODIES, TOKEN, harness_of, parse_block

scenarios("inject.feature")


@given(parsers.parse('another project holds the private memory "{name}" with body "{body}"'))
def other_project(env: Env, ctx: dict[str, Any], tmp_path_factory: pytest.TempPathFactory, name: str,
                  body: str) -> None:
    other = Env(home=env.home, project=tmp_path_factory.mktemp("other") / "project")
    other.project.mkdir()
    subprocess.run(["git", "init", "-q", str(other.project)], check=True)
    assert other.run("add", name.removesuffix(".md"), "-d", "their private notes", "-b", body).code == 0
    ctx["other"] = other


@given("this project is trusted and its .memory is a symlink to the other project's private store")
def symlinked_mirror(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("trust").code == 0
    for entry in env.mirror.iterdir():
        entry.unlink()
    env.mirror.rmdir()
    env.mirror.symlink_to(harness_of(ctx["other"]))


@given(parsers.parse('the private memory "{name}" holds a GitHub token in its body'))
def token_memory(env: Env, name: str) -> None:
    body = f"deploy with {TOKEN}\ndb postgres://app:{DB_PASSWORD}@db/prod"
    assert env.run("add", name, "-d", "how deploys authenticate", "-b", body).code == 0


@given(parsers.parse('the config sets "{yaml}"'))
def config_sets(env: Env, yaml: str) -> None:
    (env.home / "config.yaml").write_text(yaml + "\n")


@given("private memories whose bodies hold look-alike closing tags and fake headers")
def hostile_bodies(env: Env) -> None:
    for name, body in HOSTILE_BODIES.items():
        path = env.harness / name
        path.write_text(f"---\nname: {name[:-3]}\ndescription: memory {name[8:-3]}\ntype: project\n"
                        f"visibility: private\n---\n{body}\n", encoding="utf-8")


@given("a memory edited by hand with ESC, BEL, NUL, a C1 control and U+202E in every field")
def hostile_terminal_memory(env: Env, ctx: dict[str, Any]) -> None:
    ctx["body"] = f"deploy body {TERMINAL_HOSTILE}end\n"
    (env.harness / "project_hostile.md").write_bytes(
        (f"---\nname: {json.dumps('deploy ' + TERMINAL_HOSTILE)}\n"
         f"description: {json.dumps('deploy ' + TERMINAL_HOSTILE)}\ntype: project\nvisibility: private\n---\n"
         + ctx["body"]).encode())


@when(parsers.parse("Claude Code's prompt hook runs for \"{prompt}\""))
def prompt_hook(env: Env, ctx: dict[str, Any], prompt: str) -> None:
    hook = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(env.project)}
    result = env.run("inject", "--format", "claude-hook", stdin=json.dumps(hook))
    assert result.code == 0
    ctx["hook"] = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]


@then(parsers.parse('the output does not contain "{text}"'))
def output_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["result"].out + ctx["result"].err


@then(parsers.parse('the hook context does not contain "{text}"'))
def hook_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["hook"]


@then(parsers.parse('the hook context mentions "{text}"'))
def hook_mentions(ctx: dict[str, Any], text: str) -> None:
    assert text in ctx["hook"]


@then("the output does not contain the token")
def output_lacks_token(ctx: dict[str, Any]) -> None:
    shown = ctx["result"].out + ctx["result"].err
    assert TOKEN not in shown and DB_PASSWORD not in shown


@then("the hook context does not contain the token")
def hook_lacks_token(ctx: dict[str, Any]) -> None:
    assert TOKEN not in ctx["hook"] and DB_PASSWORD not in ctx["hook"]


@then("the output contains the token")
def output_has_token(ctx: dict[str, Any]) -> None:
    assert f"| deploy with {TOKEN}" in ctx["result"].out


@then("the block closes exactly once, on its last line")
def closes_once(ctx: dict[str, Any]) -> None:
    block = parse_block(ctx["result"].out)
    assert block["closing"] == [block["last"]]


@then("the block lists exactly the store's memories, each with one header of its own")
def lists_exactly(env: Env, ctx: dict[str, Any]) -> None:
    block = parse_block(ctx["result"].out)
    stored = sorted(p.name for p in env.harness.iterdir() if p.name != "MEMORY.md")
    assert block["index"] == stored
    assert sorted(block["bodies"]) == [f"{name} (private)" for name in stored]


@then("the output holds no control, bidi or invisible character")
def no_controls(ctx: dict[str, Any]) -> None:
    shown = ctx["result"].out + ctx["result"].err
    assert "deploy" in shown
    assert sorted({f"U+{ord(ch):04X}" for ch in shown if not ch.isprintable() and ch not in "\n\t"}) == []


@then("the JSON body is the memory's exact text")
def exact_json(ctx: dict[str, Any]) -> None:
    assert ctx["result"].json()["body"] == ctx["body"]
