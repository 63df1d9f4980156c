"""Step definitions for features/security.feature: hostile homes, files, names, clients and races."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from mcp_client import answer, close_server, raw_server, send, tool_error, with_session
from pytest_bdd import given, parsers, scenarios, then, when
from unprivileged import OrdinaryUser, _ensure_user

from pipeline import fsutil

scenarios("security.feature")

ALLOW_ALL = 'privacy:\n  allowlist: ["(?s).*"]\n'
GITHUB_TOKEN = "GITHUB_TOKEN=ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9"
ACME_RULE = ('privacy: {rules: [{id: acme-internal-token, category: credential, description: ACME token, '
             'pattern: "\\\\b(acme_[a-z0-9]{16})\\\\b"}]}\n')


def _published(project: Path) -> list[str]:
    """Mirror files that hold a token of the scenarios."""
    mirror = project / ".memory"
    if not mirror.is_dir():
        return []
    return sorted(p.name for p in mirror.iterdir() if p.is_file() and re.search(rb"ghp_|acme_", p.read_bytes()))


# --- homes and settings files -----------------------------------------------------------------------------


@given("a memfold home that another user owns and everyone may write")
def foreign_home(env: Env, ctx: dict[str, Any]) -> None:
    env.home.mkdir()
    if os.geteuid() == 0:
        other = _ensure_user()
        os.chown(env.home, other.pw_uid, other.pw_gid)
        ctx["owner"] = f"uid {other.pw_uid} ({other.pw_name})"
    env.home.chmod(0o777)


@given("a config in that home that allowlists everything")
def allow_all(env: Env) -> None:
    config = env.home / "config.yaml"
    config.write_text(ALLOW_ALL)
    owner = os.stat(env.home)
    os.chown(config, owner.st_uid, owner.st_gid)


@given(parsers.parse("a config that allowlists everything, with mode {mode}"))
def open_config(env: Env, mode: str) -> None:
    env.home.mkdir(mode=0o700)
    config = env.home / "config.yaml"
    config.write_text(ALLOW_ALL)
    config.chmod(int(mode, 8))


@then(parsers.parse("the error names the home, its owner and its mode {mode}"))
def names_home(env: Env, ctx: dict[str, Any], mode: str) -> None:
    err = ctx["result"].err
    assert str(env.home) in err and f"mode {mode}" in err, err
    if "owner" in ctx:
        assert ctx["owner"] in err and "chown" in err, err


@then("nothing is published to the mirror")
def nothing_published(env: Env) -> None:
    assert _published(env.project) == []
    assert not any(env.home.glob("projects/*/memory/*.md"))


@given("the project is trusted")
def trusted(env: Env) -> None:
    assert env.run("trust").code == 0


@given("the trust list is writable by others")
def open_trust(env: Env) -> None:
    (env.home / "trusted-projects.json").chmod(0o646)


@then(parsers.parse('the output does not mention "{text}"'))
def output_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["result"].out + ctx["result"].err


def _hook(env: Env, prompt: str, session: str) -> Any:
    data = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "session_id": session,
                       "cwd": str(env.project)})
    return env.run("inject", "--format", "claude-hook", stdin=data)


@given("the memfold home is writable by everyone")
def open_home(env: Env, ctx: dict[str, Any]) -> None:
    ready = _hook(env, "where is the staging database", "before")
    assert ready.code == 0 and "project_notes" in ready.out  # injected while the home is the user's alone
    env.home.chmod(0o777)


@when(parsers.parse('the Claude prompt hook runs for "{prompt}"'))
def prompt_hook(env: Env, ctx: dict[str, Any], prompt: str) -> None:
    ctx["result"] = _hook(env, prompt, "after")  # a session of its own: nothing was sent in it yet


@then("the hook exits 0 and prints nothing")
def hook_silent(ctx: dict[str, Any]) -> None:
    assert ctx["result"].code == 0 and ctx["result"].out == "", ctx["result"]


# --- the same, as an ordinary user --------------------------------------------------------------------------


def _as_user(user: OrdinaryUser, *args: str) -> Any:
    # The working directory holds the fixture's copy of the package without its data: the checkout's is used.
    script = ("import sys\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
              "from pipeline.cli import main\nraise SystemExit(main(sys.argv[1:]))\n")
    return user.run(script, *args, env={"PYTHONPATH": user.checkout_path(), "MEMFOLD_NOW": "2026-11-30T12:00:00Z"})


def _user_project(user: OrdinaryUser, ctx: dict[str, Any], home: Path) -> None:
    project = user.path("project")
    project.mkdir()
    os.chown(project, user.uid, user.gid)
    ctx["user"], ctx["user home"], ctx["user project"] = user, home, project


@given("an ordinary user with a home that everyone may write and a config that allowlists everything")
def user_open_home(ordinary_user: OrdinaryUser, ctx: dict[str, Any]) -> None:
    home = ordinary_user.path("shared-home")
    home.mkdir()  # root's, when the tests run as root: a home root owns is no better when anyone may write it
    (home / "config.yaml").write_text(ALLOW_ALL)
    home.chmod(0o777)
    _user_project(ordinary_user, ctx, home)


@given("an ordinary user with a home of their own and a config root owns that adds a rule")
def user_own_home(ordinary_user: OrdinaryUser, ctx: dict[str, Any]) -> None:
    home = ordinary_user.path("own-home")
    home.mkdir(mode=0o700)
    os.chown(home, ordinary_user.uid, ordinary_user.gid)
    config = home / "config.yaml"
    config.write_text(ACME_RULE)  # root's (when the tests run as root), 0644: root may set a user's config
    config.chmod(0o644)
    _user_project(ordinary_user, ctx, home)


def _user_add(ctx: dict[str, Any], body: str) -> None:
    user, home, project = ctx["user"], ctx["user home"], ctx["user project"]
    ctx["user result"] = _as_user(user, "--home", str(home), "--project", str(project), "add", "CI token",
                                  "-d", "the CI token", "--visibility", "safe", "-b", body)


@when("that user adds a safe memory holding a GitHub token")
def user_adds_github(ctx: dict[str, Any]) -> None:
    _user_add(ctx, GITHUB_TOKEN)


@when("that user adds a safe memory holding a token the added rule matches")
def user_adds_acme(ctx: dict[str, Any]) -> None:
    _user_add(ctx, "ACME=acme_k3j9x2m8q7w1z5v4")


@then(parsers.parse('that user\'s command exits {code:d} naming "{text}"'))
def user_exit(ctx: dict[str, Any], code: int, text: str) -> None:
    proc = ctx["user result"]
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == code and text in err, (proc.returncode, err)


@then("nothing is published to that user's mirror")
def user_nothing_published(ctx: dict[str, Any]) -> None:
    assert _published(ctx["user project"]) == []


# --- JSON and YAML nested too deep -------------------------------------------------------------------------


def _head(env: Env) -> Path:
    heads = [*env.mirror.glob("chain-head-*.json"), *(env.project / ".memfold" / "heads").glob("*.json")]
    assert len(heads) == 1, heads
    return heads[0]


@given("the chain head in the mirror is 2,000 nested arrays")
def deep_head(env: Env) -> None:
    _head(env).write_text("[" * 2000 + "]" * 2000)


@then("no internal error is reported")
def no_internal_error(ctx: dict[str, Any]) -> None:
    text = ctx["result"].out + ctx["result"].err
    assert "internal error" not in text and "RecursionError" not in text and "Traceback" not in text, text


@given(parsers.parse("the project's {file} is 3,000 nested arrays"))
def deep_settings(env: Env, ctx: dict[str, Any], file: str) -> None:
    path = env.project / file
    path.parent.mkdir()
    path.write_text('{"hooks": ' + "[" * 3000 + "]" * 3000 + "}\n")
    ctx["settings"] = (path, path.read_bytes())


@then(parsers.parse("the project's {file} is unchanged"))
def settings_unchanged(ctx: dict[str, Any], file: str) -> None:
    path, data = ctx["settings"]
    assert path.read_bytes() == data


@given("a config nested 5,000 levels deep")
def deep_config(env: Env) -> None:
    env.home.mkdir()
    (env.home / "config.yaml").write_text("privacy:\n  allowlist: " + "[" * 5000 + "]" * 5000 + "\n")


# --- names and the MCP server -------------------------------------------------------------------------------


@when(parsers.parse('an MCP client calls memory_forget with the name "{name}"'))
def mcp_forget(env: Env, ctx: dict[str, Any], name: str) -> None:
    async def body(session: Any) -> Any:
        return await session.call_tool("memory_forget", {"name": name})

    ctx["tool"] = with_session(env.home, env.project, body)


@then(parsers.parse('the tool error code is "{code}"'))
def tool_code(ctx: dict[str, Any], code: str) -> None:
    assert tool_error(ctx["tool"])["code"] == code


@given(parsers.parse("the config bounds one MCP request at {size:d} bytes"))
def mcp_bound(env: Env, size: int) -> None:
    (env.home / "config.yaml").write_text(f"mcp:\n  max_request_bytes: {size}\n")


@when(parsers.parse("an MCP client sends a request of {size:d} bytes, then memory_list"))
def mcp_oversized(env: Env, ctx: dict[str, Any], size: int) -> None:
    proc = raw_server(env.home, env.project)
    head = b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"memory_add","arguments":{"body":"'
    tail = b'","name":"big","description":"d"}}}'
    line = head + b"x" * (size - len(head) - len(tail)) + tail
    send(proc, line + b"\n")
    first = answer(proc)
    send(proc, {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "memory_list", "arguments": {}}})
    ctx["answers"] = (first, answer(proc), len(line))
    ctx["stderr"] = close_server(proc)


@then(parsers.parse('the first answer is the error "{code}" for that request\'s id'))
def first_refused(ctx: dict[str, Any], code: str) -> None:
    first, _, size = ctx["answers"]
    assert first["id"] == 41 and first["error"]["data"] == {"code": code, "bytes": size, "maxBytes": 65536}


@then(parsers.parse('the second answer lists "{name}"'))
def second_served(ctx: dict[str, Any], name: str) -> None:
    second = ctx["answers"][1]
    assert second["id"] == 42 and [m["file"] for m in second["result"]["structuredContent"]["memories"]] == [name]


@then("the server ends cleanly")
def server_clean(ctx: dict[str, Any]) -> None:
    assert b"Traceback" not in ctx["stderr"]


@given("a copy of the newest receipt outside the store")
def receipt_copy(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    newest = sorted((env.project_home / "receipts").iterdir())[-1]
    copy = tmp_path / "elsewhere" / "receipt.json"
    copy.parent.mkdir()
    copy.write_bytes(newest.read_bytes())
    ctx["copy"], ctx["run"] = copy, json.loads(newest.read_bytes())["runId"]


def _verify(env: Env, *targets: str) -> list[Any]:
    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_verify", {"target": target}) for target in targets]

    return with_session(env.home, env.project, body)  # type: ignore[no-any-return]


@when("an MCP client verifies that copy, a missing file and /etc/passwd")
def verify_outside(env: Env, ctx: dict[str, Any]) -> None:
    ctx["verified"] = _verify(env, str(ctx["copy"]), str(ctx["copy"].with_name("missing.json")), "/etc/passwd")


@then(parsers.parse('the three answers are the same error "{code}"'))
def same_answers(ctx: dict[str, Any], code: str) -> None:
    errors = [tool_error(result) for result in ctx["verified"]]
    assert errors[0]["code"] == code and errors == [errors[0]] * 3


@when("an MCP client verifies the newest run by its id")
def verify_run(env: Env, ctx: dict[str, Any]) -> None:
    ctx["verified"] = _verify(env, ctx["run"])


@then("the answer is a verified receipt")
def verified(ctx: dict[str, Any]) -> None:
    (result,) = ctx["verified"]
    assert not result.is_error and result.structured_content["ok"] is True


# --- the mirror: case collisions, the swap race, the public report ---------------------------------------------


@given(parsers.parse('a teammate\'s "{name}" in the mirror'))
def teammate_copy(env: Env, name: str) -> None:
    own = next(p for p in env.mirror.glob("*.md") if p.name.lower() == name.lower())
    (env.mirror / name).write_bytes(own.read_bytes().replace(b"a safe memory", b"another spelling"))


@given("the mirror will be swapped for a link to another directory as its first file is staged")
def swap_race(env: Env, ctx: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.txt").write_text("someone else's directory\n")
    ctx["outside"] = outside
    write = fsutil.ops.write
    written: list[str] = ctx.setdefault("written", [])

    def swap_on_first_mirror_write(fd: int, data: bytes) -> int:
        where = os.readlink(f"/proc/self/fd/{fd}")
        if not written and os.path.dirname(where) == str(env.mirror):
            env.mirror.rename(env.project / ".memory-moved")
            env.mirror.symlink_to(outside, target_is_directory=True)
        if written or os.path.dirname(where) == str(env.mirror):
            written.append(os.readlink(f"/proc/self/fd/{fd}"))  # every file written from the swap on
        return write(fd, data)

    monkeypatch.setattr(fsutil.ops, "write", swap_on_first_mirror_write)


@then("the other directory holds only what it held")
def outside_untouched(ctx: dict[str, Any]) -> None:
    assert ctx["written"], "the mirror was never staged"
    # Nothing written there at any moment (a temp removed again by a failed run was still written there).
    assert [path for path in ctx["written"] if path.startswith(str(ctx["outside"]) + os.sep)] == []
    assert sorted(p.name for p in ctx["outside"].iterdir()) == ["keep.txt"]


@then("the memory landed in the mirror directory memfold had checked")
def landed_in_checked(env: Env) -> None:
    moved = env.project / ".memory-moved"
    names = {p.name for p in moved.iterdir()}
    assert "project_deploy-target.md" in names and not [n for n in names if n.startswith(fsutil.TEMP_PREFIX)]


@then("the report does not hold the scope key or any prefix of it")
def report_without_key(env: Env, ctx: dict[str, Any]) -> None:
    found = re.search(r"report: (\S+\.html) \(", ctx["result"].out)
    assert found, ctx["result"].out
    path = Path(found.group(1))
    page = path.read_text()
    key = env.project_home.name
    assert all(key[:n] not in page for n in (64, 16, 12, 8)) and key[:8] not in path.name
