"""Step definitions for features/retrieval.feature: ranking, the byte budget, per-session bodies."""

from __future__ import annotations

import json
from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("retrieval.feature")


def _search(env: Env, query: str) -> list[str]:
    result = env.run("--json", "search", query)
    assert result.code == 0, result
    return [r["file"] for r in json.loads(result.out)["results"]]


def _hook(env: Env, ctx: dict[str, Any], event: str, session: str, prompt: str | None = None) -> None:
    hook: dict[str, Any] = {"hook_event_name": event, "cwd": str(env.project), "session_id": session}
    if prompt is not None:
        hook["prompt"] = prompt
    result = env.run("inject", "--format", "claude-hook", stdin=json.dumps(hook))
    assert result.code == 0, result
    ctx["hook"] = json.loads(result.out)["hookSpecificOutput"]["additionalContext"] if result.out.strip() else ""


@given(parsers.parse("{count:d} memories about deploys"))
def many_memories(env: Env, count: int) -> None:
    for i in range(count):
        assert env.run("add", f"project_deploy-{i:02d}", "-d", f"deploy step {i} of the release",
                       "-b", f"Step {i}: run the deploy script with care.").code == 0


@given(parsers.parse("{count:d} feedback memories about code review"))
def feedback_memories(env: Env, count: int) -> None:
    for i in range(count):
        assert env.run("add", f"feedback_review-{i:02d}", "-t", "feedback", "-d", f"review rule {i} for pull requests",
                       "-b", f"Rule {i}: keep the pull request small.").code == 0


@then(parsers.parse('the session context holds the index and feedback bodies, not the body of "{file}"'))
def session_bodies(ctx: dict[str, Any], file: str) -> None:
    headers = [line for line in ctx["start"].splitlines() if line.startswith("### ")]
    assert headers and all(h.startswith("### feedback_review-") for h in headers), headers
    assert f"- {file} [private, project]" in ctx["start"] and f"### {file}" not in ctx["start"]


@when(parsers.parse('Claude Code starts session "{session}"'))
def session_start(env: Env, ctx: dict[str, Any], session: str) -> None:
    _hook(env, ctx, "SessionStart", session)
    ctx["start"] = ctx["hook"]


@when(parsers.parse('Claude Code\'s prompt hook runs in session "{session}" for "{prompt}"'))
def prompt_hook(env: Env, ctx: dict[str, Any], session: str, prompt: str) -> None:
    _hook(env, ctx, "UserPromptSubmit", session, prompt)


@then(parsers.parse('searching "{query}" ranks "{file}" first'))
def ranks_first(env: Env, query: str, file: str) -> None:
    found = _search(env, query)
    assert found and found[0] == file, found


@then(parsers.parse('searching "{query}" finds nothing'))
def finds_nothing(env: Env, query: str) -> None:
    assert _search(env, query) == []


@then(parsers.parse("the output is at most {size:d} bytes"))
def output_bounded(ctx: dict[str, Any], size: int) -> None:
    assert 0 < len(ctx["result"].out.encode("utf-8")) <= size


@then("the output names the private store's directory")
def names_store(env: Env, ctx: dict[str, Any]) -> None:
    assert str(env.harness) in ctx["result"].out


@then(parsers.parse('the prompt context holds the body of "{file}" only'))
def body_only(ctx: dict[str, Any], file: str) -> None:
    headers = [line for line in ctx["hook"].splitlines() if line.startswith("### ")]
    assert headers == [f"### {file} (private)"], ctx["hook"]
    assert f"| {file.removesuffix('.md')} body" in ctx["hook"]


@then("the prompt context holds no index and no guidance")
def no_index(ctx: dict[str, Any]) -> None:
    assert "## Index" not in ctx["hook"] and "memfold add" not in ctx["hook"]
    assert "## Index" in ctx["start"] and "memfold add" in ctx["start"]


@then("the hook adds nothing")
def adds_nothing(ctx: dict[str, Any]) -> None:
    assert ctx["hook"] == ""


@given(parsers.parse('an MCP server that has searched "{query}" already'))
def searching_server(env: Env, ctx: dict[str, Any], query: str) -> None:
    from test_warm import _backend

    ctx["server"] = _backend(env)  # the backend `memfold mcp` serves, in this process
    assert ctx["server"].search(query, 10)["results"], query


@when(parsers.parse('an editor saves "{file}" in place with "{old}" changed to "{new}"'))
def save_in_place(env: Env, ctx: dict[str, Any], file: str, old: str, new: str) -> None:
    path = env.harness / file
    ctx["dir_stat"] = path.parent.stat()
    data = path.read_bytes()
    assert old.encode() in data
    with open(path, "r+b") as handle:  # the same inode truncated and rewritten: no rename, no new entry
        handle.truncate(0)
        handle.write(data.replace(old.encode(), new.encode()))


@then("the private store's directory has the stat it had before the save")
def directory_unchanged(env: Env, ctx: dict[str, Any]) -> None:
    before, after = ctx["dir_stat"], env.harness.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_ctime_ns) == (before.st_ino, before.st_mtime_ns,
                                                                    before.st_ctime_ns)


@then(parsers.parse('the MCP server\'s search for "{query}" ranks "{file}" first'))
def server_ranks_first(ctx: dict[str, Any], query: str, file: str) -> None:
    found = [r["file"] for r in ctx["server"].search(query, 10)["results"]]
    assert found and found[0] == file, found
