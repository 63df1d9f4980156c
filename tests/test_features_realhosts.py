"""Step definitions for features/realhosts.feature: memfold run by the real hosts from npm."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from fake_model_server import FakeModelServer
from pytest_bdd import given, parsers, scenarios, then, when
from realclis import RealClis, host, host_store

scenarios("realhosts.feature")
pytestmark = pytest.mark.integration


@given(parsers.parse('memfold installed into the real "{name}" from npm'))
def installed(env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path, ctx: dict[str, Any],
              name: str) -> None:
    # Claude Code takes the home from the local settings install writes; Pi from the environment.
    h = host(env, real_clis, fake_model, tmp_path, name, memfold_home_in_env=name != "claude")
    ctx["description"] = host_store(h)
    done = h.memfold("hooks", "install", name)
    assert done.returncode == 0, done.stderr
    ctx["host"], ctx["receipts"] = h, h.receipts()



@given(parsers.parse('a Claude Code session that asked "{prompt}"'))
def claude_session(ctx: dict[str, Any], prompt: str) -> None:
    ctx["session"] = ctx["host"].claude(prompt)["session_id"]


@given(parsers.parse('a later Claude Code session that asked "{prompt}"'))
def later_session(ctx: dict[str, Any], prompt: str) -> None:
    ctx["host"].claude(prompt)
    ctx["receipts"] = ctx["host"].receipts()


@when(parsers.parse('that first session is resumed with "{prompt}"'))
def resumed(ctx: dict[str, Any], prompt: str) -> None:
    ctx["host"].claude("--resume", ctx["session"], prompt)


@then("one receipt was added")
def one_receipt(ctx: dict[str, Any]) -> None:
    after = ctx["host"].receipts_once(len(ctx["receipts"]) + 1)
    assert len(after) == len(ctx["receipts"]) + 1
    ctx["snapshot"] = ctx["host"].snapshot_of(after[-1])


@then(parsers.parse('its snapshot is that session\'s transcript, holding "{said}" and not "{other}"'))
def snapshot_is_session(ctx: dict[str, Any], said: str, other: str) -> None:
    snapshot = ctx["snapshot"]
    assert snapshot["contextMode"] == "transcript" and snapshot["source"] == f"{ctx['session']}.jsonl"
    texts = [e["text"] for e in snapshot["entries"]]
    assert said in texts and not any(other in t for t in texts)


@then(parsers.parse('the model was shown the memory "{description}"'))
def model_shown(ctx: dict[str, Any], description: str) -> None:
    assert description == ctx["description"] and ctx["host"].asked(description)


@when(parsers.parse('I run pi with "{prompt}"'))
def run_pi(ctx: dict[str, Any], prompt: str) -> None:
    ctx["pi"] = ctx["host"].run("pi", "-p", prompt)


@then(parsers.parse('pi exits 0 and says "{text}"'))
def pi_says(ctx: dict[str, Any], text: str) -> None:
    assert ctx["pi"].returncode == 0, ctx["pi"].stderr
    assert text in ctx["pi"].stderr


@then("its snapshot holds no context")
def no_context(ctx: dict[str, Any]) -> None:
    assert ctx["snapshot"]["contextMode"] == "disabled" and ctx["snapshot"]["entries"] == []


@given("a store with one memory and the real MCP Inspector from npm")
def inspector(env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path,
              ctx: dict[str, Any]) -> None:
    ctx["host"] = host(env, real_clis, fake_model, tmp_path, "claude", memfold_home_in_env=True)
    host_store(ctx["host"])


@when(parsers.parse('the Inspector calls "{tool}" with "{arg}"'))
def inspector_call(ctx: dict[str, Any], tool: str, arg: str) -> None:
    done = ctx["host"].run("mcp-inspector", "--cli", "memfold", "mcp", "--method", "tools/call",
                           "--tool-name", tool, "--tool-arg", arg, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ctx["result"] = json.loads(done.stdout)


@then(parsers.parse('the Inspector shows a tool error starting "{start}" with a hint'))
def inspector_error(ctx: dict[str, Any], start: str) -> None:
    result = ctx["result"]
    assert result["isError"] is True and "structuredContent" not in result
    (block,) = result["content"]
    assert block["text"].startswith(start) and "\nhint: " in block["text"]
