"""Step definitions for features/hosts.feature and features/operations.feature."""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, Result
from mcp_client import server_params, tool_error, with_initialize, with_session
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("hosts.feature", "operations.feature")

DATA = Path(__file__).resolve().parent / "data" / "imports"
TOKEN = "ghp_" + "Q7vR2mK9xL4pW8sT1nB6yC3zH5jD0fG2aE4u"
TOOLS = {"memory_add", "memory_update", "memory_forget", "memory_list", "memory_search", "memory_consolidate",
         "memory_status", "memory_verify", "memory_show"}
READ_ONLY = {"memory_list", "memory_search", "memory_status", "memory_verify", "memory_show"}


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A host's environment: ``memfold`` on PATH (this installation's), the package importable."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")])
    return {**os.environ, "PYTHONPATH": str(REPO), "PATH": path, **(extra or {})}


def _claude_local_env(env: Env) -> dict[str, str]:
    """What Claude Code adds to every hook and command from ``.claude/settings.local.json``."""
    local = env.project / ".claude" / "settings.local.json"
    return dict(json.loads(local.read_text()).get("env", {})) if local.exists() else {}


# --- MCP ---------------------------------------------------------------------------------------------


@when("an MCP client lists the tools and calls each of them")
def mcp_round_trip(env: Env, ctx: dict[str, Any]) -> None:
    async def body(session: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": (await session.list_tools()).tools}
        call = session.call_tool
        out["add"] = await call("memory_add", {"name": "project_mcp-added", "description": "added over MCP",
                                               "body": "from the SDK client", "visibility": "safe"})
        await call("memory_add", {"name": "project_gone", "description": "to be forgotten", "body": "x"})
        out["dup"] = await call("memory_add", {"name": "project_twin", "description": "added over MCP"})
        out["update"] = await call("memory_update", {"name": "project_mcp-added", "body": "updated body"})
        out["list"] = await call("memory_list", {})
        out["search"] = await call("memory_search", {"query": "added MCP"})
        out["forget"] = await call("memory_forget", {"name": "project_gone"})
        out["consolidate"] = await call("memory_consolidate", {"dry_run": True})
        out["status"] = await call("memory_status", {})
        out["verify"] = await call("memory_verify", {})
        return out

    ctx["mcp"] = with_session(env.home, env.project, body)


@then("every memfold tool is listed with annotations and an output schema")
def mcp_tools(ctx: dict[str, Any]) -> None:
    tools = {t.name: t for t in ctx["mcp"]["tools"]}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        hints = tool.annotations
        assert hints.read_only_hint is (name in READ_ONLY) and hints.open_world_hint is False, name
        assert tool.output_schema and tool.output_schema.get("type") == "object", name
    for key in ("add", "update", "list", "search", "forget", "consolidate", "status", "verify"):
        result = ctx["mcp"][key]
        assert not result.is_error, (key, result.content)
        assert result.structured_content["ok"] is True, key
    assert next(r["file"] for r in ctx["mcp"]["search"].structured_content["results"]) == "project_mcp-added.md"
    assert ctx["mcp"]["verify"].structured_content["ok"] is True


@when(parsers.parse('an MCP client forgets "{name}", adds a memory without a name and calls "{tool}"'))
def mcp_errors(env: Env, ctx: dict[str, Any], name: str, tool: str) -> None:
    async def body(session: Any) -> list[Any]:
        return [await session.call_tool("memory_forget", {"name": name}),
                await session.call_tool("memory_add", {"description": "nameless"}),
                await session.call_tool(tool, {})]

    ctx["before"] = env.snapshot()
    ctx["errors"] = with_session(env.home, env.project, body)


@then("each call came back as a tool error with no structured content")
def mcp_error_shape(env: Env, ctx: dict[str, Any]) -> None:
    ctx["parsed"] = [tool_error(r) for r in ctx["errors"]]  # asserts isError, no structuredContent, one text
    assert env.snapshot() == ctx["before"]


@then(parsers.parse('the errors are "{a}", "{b}" and "{c}", each with a hint'))
def mcp_error_codes(ctx: dict[str, Any], a: str, b: str, c: str) -> None:
    assert [e["code"] for e in ctx["parsed"]] == [a, b, c]
    assert all(e["hint"] for e in ctx["parsed"])


@then(parsers.parse('the argument error says "{text}"'))
def mcp_argument_error(ctx: dict[str, Any], text: str) -> None:
    assert ctx["parsed"][1]["message"] == text


@when("an MCP client initializes a session")
def mcp_initialize(env: Env, ctx: dict[str, Any]) -> None:
    ctx["init"] = with_initialize(env.home, env.project)


@then(parsers.parse('serverInfo names "{name}" with this package\'s version'))
def mcp_server_info(ctx: dict[str, Any], name: str) -> None:
    from pipeline import __version__

    info = ctx["init"].server_info
    assert (info.name, info.version) == (name, __version__) and __version__


@then(parsers.parse('a server waiting for its next line exits 0 on "{a}" and on "{b}" with no traceback'))
def mcp_signals(env: Env, a: str, b: str) -> None:
    import signal

    for signame in (a, b):
        params = server_params(env.home, env.project)
        proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=params.env, cwd=params.cwd)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
                         b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.send_signal(getattr(signal, signame))
        try:
            code = proc.wait(10)
        finally:
            proc.kill()
        err = proc.stderr.read()
        assert code == 0 and b"Traceback" not in err, (signame, err)


@then(parsers.parse('the duplicate add came back as a tool error with code "{code}"'))
def mcp_duplicate(ctx: dict[str, Any], code: str) -> None:
    assert tool_error(ctx["mcp"]["dup"])["code"] == code


@then("the forgotten memory is gone from the private store")
def mcp_forgot(env: Env) -> None:
    assert not (env.harness / "project_gone.md").exists()
    assert b"updated body" in (env.mirror / "project_mcp-added.md").read_bytes()


# --- Claude Code -------------------------------------------------------------------------------------


def _hook_command(env: Env) -> str:
    settings = json.loads((env.project / ".claude" / "settings.json").read_text())
    return str(settings["hooks"]["SessionStart"][-1]["hooks"][0]["command"])


@given("the memfold config file is not valid YAML")
def broken_config(env: Env) -> None:
    assert env.run("hooks", "install", "claude").code == 0
    (env.home / "config.yaml").write_text("inject: [unclosed\n")


@when("Claude Code runs the installed SessionStart hook")
def run_hook(env: Env, ctx: dict[str, Any]) -> None:
    hook = {"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": str(env.project),
            "hook_event_name": "SessionStart", "source": "startup"}
    # Claude Code runs hook commands through a shell, with the hook JSON on stdin.
    proc = subprocess.run(["/bin/sh", "-c", _hook_command(env)], input=json.dumps(hook), capture_output=True,
                          text=True, timeout=60, cwd=str(env.project), env=_child_env(_claude_local_env(env)))
    ctx["hook"] = proc


@then(parsers.parse('the hook exits 0 with additionalContext mentioning "{text}"'))
def hook_context(ctx: dict[str, Any], text: str) -> None:
    proc = ctx["hook"]
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert text in out["hookSpecificOutput"]["additionalContext"]


@then("the hook exits 0 and prints nothing")
def hook_silent(ctx: dict[str, Any]) -> None:
    assert ctx["hook"].returncode == 0 and ctx["hook"].stdout == ""


@then("the hook log names the reason")
def hook_log(env: Env) -> None:
    log = (env.home / "logs" / "hook.log").read_text()
    assert "inject:" in log and "Error" in log, log


@given("a project Claude settings file with an unrelated SessionStart hook")
def claude_settings(env: Env, ctx: dict[str, Any]) -> None:
    path = env.project / ".claude" / "settings.json"
    path.parent.mkdir()
    original = {"model": "sonnet", "hooks": {"SessionStart": [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "echo unrelated"}]}]}}
    path.write_text(json.dumps(original, indent=2) + "\n")
    ctx["settings"] = path.read_bytes()


def _ours(handler: dict[str, Any]) -> bool:
    return "inject --format claude-hook" in handler.get("command", "")


@then(parsers.parse('the Claude settings keep the unrelated hook and hold one memfold hook for "{a}" and "{b}"'))
def settings_merged(env: Env, a: str, b: str) -> None:
    data = json.loads((env.project / ".claude" / "settings.json").read_text())
    assert data["model"] == "sonnet"
    start = data["hooks"]["SessionStart"]
    assert start[0] == {"matcher": "startup", "hooks": [{"type": "command", "command": "echo unrelated"}]}
    for event in (a, b):
        ours = [h for g in data["hooks"][event] for h in g["hooks"] if _ours(h)]
        assert len(ours) == 1, (event, data)
        assert shlex.split(ours[0]["command"])[0] == "memfold"


@then(parsers.parse('the consolidate command file runs "{tail}" before the model sees it'))
def command_file(env: Env, tail: str) -> None:
    text = (env.project / ".claude" / "commands" / "consolidate.md").read_text()
    assert text.startswith("---\ndescription: ")
    bang = [line for line in text.splitlines() if line.startswith("!`")]
    assert len(bang) == 1 and bang[0].endswith(f"{tail}`"), bang
    assert "allowed-tools: Bash(" in text


@then("the Claude settings file is byte-identical to the original")
def settings_restored(env: Env, ctx: dict[str, Any]) -> None:
    assert json.loads((env.project / ".claude" / "settings.json").read_bytes()) == json.loads(ctx["settings"])


@then("the consolidate command file and its directory are gone")
def command_gone(env: Env) -> None:
    assert not (env.project / ".claude" / "commands").exists()
    assert (env.project / ".claude" / "settings.json").exists()


@given("CLAUDE_CONFIG_DIR points to an empty directory")
def claude_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctx: dict[str, Any]) -> None:
    target = tmp_path / "claude-config"
    target.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(target))
    ctx["claude_dir"] = target


@then(parsers.parse('the Claude config dir holds "{a}" and "{b}"'))
def claude_dir_holds(ctx: dict[str, Any], a: str, b: str) -> None:
    assert (ctx["claude_dir"] / a).is_file() and (ctx["claude_dir"] / b).is_file()


@then("the Claude config dir is empty")
def claude_dir_empty(ctx: dict[str, Any]) -> None:
    assert list(ctx["claude_dir"].iterdir()) == []


def _claude_projects(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from pipeline.hosts.claude import project_dir_name

    claude = tmp_path / "claude-config"
    folder = claude / "projects" / project_dir_name(env.project.resolve())
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    monkeypatch.chdir(env.project)
    return folder


@given(parsers.parse('a Claude Code transcript of this project for session "{session}"'))
def transcript(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctx: dict[str, Any], session: str) -> None:
    folder = _claude_projects(env, tmp_path, monkeypatch)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": session, "cwd": str(env.project),
            "message": {"role": "user", "content": "We build with pnpm workspaces."}}
    (folder / f"{session}.jsonl").write_text(json.dumps(line) + "\n")
    os.utime(folder / f"{session}.jsonl", (1, 1))
    ctx["transcripts"] = folder


@given("another session of this project wrote its transcript later")
def other_session(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctx: dict[str, Any]) -> None:
    folder = _claude_projects(env, tmp_path, monkeypatch)
    line = {"type": "user", "uuid": "o1", "parentUuid": None, "sessionId": "other", "cwd": str(env.project),
            "message": {"role": "user", "content": "Another session talks about Kubernetes."}}
    (folder / "other.jsonl").write_text(json.dumps(line) + "\n")
    ctx["transcripts"] = folder
    ctx["receipts"] = sorted((env.project_home / "receipts").iterdir()) if (env.home / "projects").exists() else []


@then(parsers.parse('the output names the transcript of session "{session}"'))
def names_transcript(ctx: dict[str, Any], session: str) -> None:
    assert f"transcript: {ctx['transcripts'] / f'{session}.jsonl'}" in ctx["result"].out


def _newest_consolidation(env: Env) -> tuple[dict[str, Any], Path]:
    newest = sorted((env.project_home / "receipts").iterdir())[-1]
    receipt = json.loads(newest.read_text())
    assert receipt["command"] == "consolidate"
    return receipt, env.project_home / "runs" / receipt["runId"]


@then(parsers.parse('the newest receipt is a consolidation whose context is the transcript of session "{session}"'))
def consolidation_receipt(env: Env, ctx: dict[str, Any], session: str) -> None:
    _, run_dir = _newest_consolidation(env)
    snapshot = json.loads((run_dir / "snapshot.json").read_text())
    assert snapshot["contextMode"] == "transcript" and snapshot["source"] == f"{session}.jsonl", snapshot
    assert [e["text"] for e in snapshot["entries"]] == ["We build with pnpm workspaces."]


@then("the newest receipt is a consolidation without context")
def consolidation_without(env: Env) -> None:
    _, run_dir = _newest_consolidation(env)
    snapshot = json.loads((run_dir / "snapshot.json").read_text())
    assert snapshot["contextMode"] == "disabled", snapshot.get("contextMode")
    assert "Kubernetes" not in (run_dir / "snapshot.json").read_text()


@then("no receipt was written")
def no_receipt_written(env: Env, ctx: dict[str, Any]) -> None:
    now = sorted((env.project_home / "receipts").iterdir()) if (env.home / "projects").exists() else []
    assert now == ctx["receipts"]


@then(parsers.parse('no file under ".claude", ".pi" or ".codex" but ".claude/settings.local.json" holds a machine path'))
def no_machine_path(env: Env) -> None:
    files = [p for d in (".claude", ".pi", ".codex") for p in (env.project / d).rglob("*")
             if p.is_file() and p.name != "settings.local.json"]
    assert len(files) == 4, files  # settings.json, commands/consolidate.md, memfold.ts, hooks.json
    machine = (str(env.home), str(env.project), str(Path(sys.executable).parent), str(Path.home()), "--home")
    for path in files:
        text = path.read_text()
        assert not [m for m in machine if m in text], path


@then('".claude/settings.local.json" sets MEMFOLD_HOME to this store\'s home')
def local_home(env: Env) -> None:
    assert _claude_local_env(env) == {"MEMFOLD_HOME": str(env.home.absolute())}


@then("Claude Code's SessionStart hook, run with that local setting, reaches this store")
def hook_reaches(env: Env, ctx: dict[str, Any]) -> None:
    assert env.run("add", "project_local", "-d", "reached through the local home").code == 0
    run_hook(env, ctx)
    assert "reached through the local home" in json.loads(ctx["hook"].stdout)["hookSpecificOutput"]["additionalContext"]


# --- Pi and Codex ------------------------------------------------------------------------------------


@then(parsers.parse('"{rel}" passes node\'s syntax check'))
def pi_syntax(env: Env, rel: str, tmp_path: Path) -> None:
    from pipeline.hosts.pi import node_check

    ok, err = node_check((env.project / rel).read_bytes(), tmp_path)
    assert ok, err


@then(parsers.parse('the Pi extension registers "{command}" and runs memfold "{sub}" at "{event}"'))
def pi_content(env: Env, command: str, sub: str, event: str) -> None:
    text = (env.project / ".pi" / "extensions" / "memfold.ts").read_text()
    assert f'pi.registerCommand("{command}"' in text and f'pi.on("{event}"' in text and f'["{sub}"]' in text
    argv = json.loads(text.split("const MEMFOLD: string[] = ", 1)[1].split(";", 1)[0])
    assert argv == ["memfold"]


@then(parsers.parse('"{rel}" runs the memfold hook at "{event}"'))
def codex_hooks(env: Env, rel: str, event: str) -> None:
    data = json.loads((env.project / rel).read_text())
    handlers = [h for g in data["hooks"][event] for h in g["hooks"]]
    assert len(handlers) == 1 and _ours(handlers[0])


@then(parsers.parse('"{rel}" does not exist in the project'))
def absent(env: Env, rel: str) -> None:
    assert not (env.project / rel).exists()


# --- cron and systemd --------------------------------------------------------------------------------


@given(parsers.parse("the config says consolidation is due after {n:d} writes"))
def due_config(env: Env) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text("consolidate:\n  due_writes: 2\n  due_hours: 1000\n")


@given(parsers.parse("the config says consolidation is due after {hours:d} hours"))
def due_hours_config(env: Env, hours: int) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.yaml").write_text(f"consolidate:\n  due_writes: 1000\n  due_hours: {hours}\n")


def _receipt_files(project: Env) -> list[Path]:
    from pipeline.paths import scope_key

    return sorted((project.home / "projects" / scope_key(project.project.resolve()) / "receipts").glob("*.json"))


def _project(env: Env, tmp_path: Path, ctx: dict[str, Any], label: str) -> Env:
    root = tmp_path / label
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    other = Env(home=env.home, project=root)
    ctx.setdefault("projects", {})[label] = other
    return other


def _writes(project: Env, n: int) -> None:
    for i in range(n):
        assert project.run("add", f"project_note-{i}", "-d", f"note number {i}", "-b", f"body {i}").code == 0


@given(parsers.parse('a project "{label}" with {n:d} writes'))
def project_with_writes(env: Env, tmp_path: Path, ctx: dict[str, Any], label: str, n: int) -> None:
    _writes(_project(env, tmp_path, ctx, label), n)


@given(parsers.parse('a project "{label}" with {n:d} write, consolidated since'))
def project_consolidated(env: Env, tmp_path: Path, ctx: dict[str, Any], label: str, n: int) -> None:
    project = _project(env, tmp_path, ctx, label)
    _writes(project, n)
    assert project.run("consolidate", "--no-context").code == 0


@given(parsers.parse('the project "{label}" is locked by another process'))
def lock_project(ctx: dict[str, Any], label: str) -> Any:
    project = ctx["projects"][label]
    code = ("import sys, time\nfrom pathlib import Path\nfrom pipeline.apply.lock import project_lock\n"
            "home = Path(sys.argv[1])\n"
            "with project_lock(home / 'lock', home / 'lock.json', run_id='20261130T120000Z-0badc0de',"
            " operation='consolidate', timeout=1, now='2026-11-30T12:00:00Z'):\n"
            "    print('locked', flush=True)\n    time.sleep(60)\n")
    homes = {p.name: p for p in (project.home / "projects").iterdir()}
    from pipeline.paths import scope_key

    home = homes[scope_key(project.project.resolve())]
    proc = subprocess.Popen([sys.executable, "-c", code, str(home)], stdout=subprocess.PIPE, text=True,
                            env=_child_env())
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    ctx["holder"] = proc


@pytest.fixture(autouse=True)
def _release_holder(ctx: dict[str, Any]) -> Any:
    yield
    holder = ctx.get("holder")
    if holder is not None:
        holder.kill()
        holder.wait()


@when(parsers.parse('cron runs "{command}"'))
def cron_run(env: Env, ctx: dict[str, Any], command: str, days: int = 0) -> None:
    extra = {}
    if days:
        later = dt.datetime.fromisoformat(os.environ["MEMFOLD_NOW"].replace("Z", "+00:00")) + dt.timedelta(days=days)
        extra["MEMFOLD_NOW"] = later.strftime("%Y-%m-%dT%H:%M:%SZ")
    ctx.setdefault("receipts_before", {label: _receipt_files(p) for label, p in ctx.get("projects", {}).items()})
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--home", str(env.home), *shlex.split(command)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env=_child_env(extra), cwd=str(env.home))
    ctx["cron"] = proc
    ctx["lines"] = {}
    roots = {str(p.project.resolve()): label for label, p in ctx["projects"].items()}
    for line in proc.stdout.splitlines():
        data = json.loads(line)
        ctx["lines"][roots.get(data["project"], data["project"])] = data


@when(parsers.parse('cron runs "{command}" {days:d} days later'))
def cron_run_later(env: Env, ctx: dict[str, Any], command: str, days: int) -> None:
    ctx.pop("receipts_before", None)
    cron_run(env, ctx, command, days)
    assert ctx["cron"].returncode == 0, ctx["cron"].stderr


@when(parsers.parse('the project "{label}" gets {n:d} more write'))
def one_more_write(ctx: dict[str, Any], label: str, n: int) -> None:
    project = ctx["projects"][label]
    for i in range(n):
        assert project.run("add", f"Later note {i}", "-d", f"a later note {i}", "-b", "later").code == 0


@then(parsers.parse('the line for "{label}" is skipped because nothing changed since the last consolidation'))
def cron_settled(ctx: dict[str, Any], label: str) -> None:
    line = ctx["lines"][label]
    assert line["status"] == "skipped" and line["exitCode"] == 0, line
    assert line["due"]["due"] is False and line["due"]["hoursSince"] >= 24, line
    assert "nothing more to merge" in line["reason"] and line["reason"].startswith("not due"), line


@then(parsers.parse('the project "{label}" has no new receipt'))
def no_new_receipt(ctx: dict[str, Any], label: str) -> None:
    before = ctx["receipts_before"][label]
    assert before and _receipt_files(ctx["projects"][label]) == before


@then("the cron run exits 0 and prints one JSON line per project and nothing else")
def cron_lines(ctx: dict[str, Any]) -> None:
    proc = ctx["cron"]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert len(proc.stdout.splitlines()) == 3 and set(ctx["lines"]) == {"locked", "fresh", "due"}, proc.stdout


@then(parsers.parse('the line for "{label}" is skipped with reason "{reason}"'))
def cron_locked(ctx: dict[str, Any], label: str, reason: str) -> None:
    line = ctx["lines"][label]
    assert line["status"] == "skipped" and line["reason"] == reason and line["exitCode"] == 0
    assert line["holder"]["runId"] == "20261130T120000Z-0badc0de"


@then(parsers.parse('the line for "{label}" is skipped as not due'))
def cron_not_due(ctx: dict[str, Any], label: str) -> None:
    line = ctx["lines"][label]
    assert line["status"] == "skipped" and line["reason"].startswith("not due") and line["due"]["writesSince"] == 0


@then(parsers.parse('the line for "{label}" is consolidated and verified'))
def cron_due(ctx: dict[str, Any], label: str) -> None:
    line = ctx["lines"][label]
    assert line["status"] == "consolidated" and line["verified"] is True and Path(line["receipt"]).is_file()


@then(parsers.parse('the cron log names the project "{label}"'))
def cron_log(env: Env, ctx: dict[str, Any], label: str) -> None:
    log = (env.home / "logs" / "cron.log").read_text()
    assert f"skipped {ctx['projects'][label].project.resolve()}" in log


@then(parsers.parse('status of "{label}" says consolidation is not due'))
def status_due(ctx: dict[str, Any], label: str) -> None:
    data = ctx["projects"][label].run("status", "--json").json()
    assert data["due"] is False and data["writesSinceConsolidation"] == 0 and data["lastConsolidation"]


@when(parsers.parse('I run "{command}" with a user home'))
def run_with_user_home(env: Env, ctx: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       command: str) -> None:
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ctx["user_home"] = user_home
    ctx["result"] = env.run(*shlex.split(command))


@then(parsers.parse('the user unit dir holds "{service}" and "{timer}"'))
def units_written(ctx: dict[str, Any], service: str, timer: str) -> None:
    assert ctx["result"].code == 0, ctx["result"].err
    unit_dir = ctx["user_home"] / ".config" / "systemd" / "user"
    assert sorted(p.name for p in unit_dir.iterdir()) == sorted([service, timer])
    ctx["units"] = {p.name: p.read_text() for p in unit_dir.iterdir()}


@then(parsers.parse('the timer is hourly and persistent and the service runs "{tail}"'))
def units_content(ctx: dict[str, Any], tail: str) -> None:
    units = ctx["units"]
    timer, service = units["memfold-consolidate.timer"], units["memfold-consolidate.service"]
    assert "OnCalendar=hourly" in timer and "Persistent=true" in timer and "WantedBy=timers.target" in timer
    exec_start = next(line for line in service.splitlines() if line.startswith("ExecStart="))
    assert "Type=oneshot" in service and exec_start.endswith(tail) and "--home" in exec_start


# --- import and export -------------------------------------------------------------------------------


def _import(env: Env, ctx: dict[str, Any], fmt: str, *paths: Path) -> Result:
    result = env.run("import", fmt, *map(str, paths), "--json")
    ctx.setdefault("imports", []).append(result)
    return result


@when(parsers.parse('I import "{fmt}" from "{source}"'))
def import_fixture(env: Env, ctx: dict[str, Any], fmt: str, source: str) -> None:
    _import(env, ctx, fmt, *(DATA / s for s in source.split()))


@then(parsers.parse("the import exits 0 with a receipt and {count:d} new memories"))
def import_ok(env: Env, ctx: dict[str, Any], count: int) -> None:
    result = ctx["imports"][-1]
    assert result.code == 0, result.err
    data = result.json()
    assert len(data["imported"]) == count and Path(data["receipt"]).is_file()
    assert json.loads(Path(data["receipt"]).read_text())["command"] == "import"
    on_disk = {p.name for p in env.harness.iterdir()} - {"MEMORY.md"}
    assert on_disk == {i["name"] for i in data["imported"]}


@then(parsers.parse('the import skipped "{source}" because "{reason}"'))
def import_skipped(ctx: dict[str, Any], source: str, reason: str) -> None:
    skipped = ctx["imports"][-1].json()["skipped"]
    assert any(s["source"].strip() == source.strip() and reason in s["reason"] for s in skipped), skipped


@then(parsers.parse('every imported memory is "{visibility}" unless listed as safe "{safe}"'))
def import_visibility(env: Env, ctx: dict[str, Any], visibility: str, safe: str) -> None:
    for item in ctx["imports"][-1].json()["imported"]:
        expected = "safe" if item["name"] == safe else visibility
        assert item["visibility"] == expected, item
        assert (env.mirror / item["name"]).exists() == (expected == "safe")


@then("nothing was imported and no receipt was written")
def import_again(env: Env, ctx: dict[str, Any]) -> None:
    result = ctx["imports"][-1]
    assert result.code == 0 and result.json()["imported"] == [] and result.json()["runId"] is None
    assert len(list((env.project_home / "receipts").iterdir())) == 1


@given("a harness pair whose public memory holds a GitHub token")
def secret_pair(tmp_path: Path, ctx: dict[str, Any]) -> None:
    private, public = tmp_path / "private", tmp_path / "public"
    private.mkdir()
    public.mkdir()
    text = f"---\nname: CI\ndescription: the CI token\ntype: reference\n---\ntoken {TOKEN}\n"
    for root in (private, public):
        (root / "reference_ci.md").write_text(text)
    ctx["pair"] = (private, public)


@when("I import the harness pair")
def import_pair(env: Env, ctx: dict[str, Any]) -> None:
    assert _import(env, ctx, "harness", *ctx["pair"]).code == 0


@when("I export the store as a Claude memory dir")
def export_store(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    ctx["export"] = tmp_path / "exported"
    result = env.run("export", "claude", str(ctx["export"]))
    assert result.code == 0, result.err
    assert (ctx["export"] / "MEMORY.md").is_file()


@when("I import the export into a fresh project")
def import_export(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    fresh = Env(home=tmp_path / "fresh-home", project=tmp_path / "fresh")
    fresh.project.mkdir()
    result = _import(fresh, ctx, "claude", ctx["export"])
    assert result.code == 0 and len(result.json()["imported"]) == 2, result.out + result.err
    ctx["fresh"] = fresh


@then("the fresh project's private store is byte-identical to the original's")
def round_trip(env: Env, ctx: dict[str, Any]) -> None:
    assert ctx["fresh"].snapshot() == env.snapshot()


# --- transcript candidates ---------------------------------------------------------------------------


@given(parsers.parse('a Claude Code transcript that says "{said}" and then writes memory "{name}" described as '
                     '"{description}"'))
def mention_then_write(env: Env, monkeypatch: pytest.MonkeyPatch, said: str, name: str, description: str) -> None:
    fact = said.split(":", 1)[1].strip()
    content = f"---\nname: {name}\ndescription: {description}\nmetadata:\n  type: project\n---\n{fact}\n"
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "message": {"role": "user",
                                                                                         "content": said}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s", "message": {
            "id": "m1", "type": "message", "role": "assistant", "content": [{
                "type": "tool_use", "id": "t1", "name": "Write",
                "input": {"file_path": f"/home/u/.claude/projects/-w/memory/{name}.md", "content": content}}]}},
    ]
    (env.project / "transcript.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.chdir(env.project)


@then(parsers.parse('the private store holds only "{file}" with name "{name}" and description "{description}"'))
def only_memory(env: Env, file: str, name: str, description: str) -> None:
    from pipeline.store.memory import parse_memory

    assert sorted(p.name for p in env.harness.glob("*.md") if p.name != "MEMORY.md") == [file]
    memory = parse_memory((env.harness / file).read_bytes(), file)
    assert (memory.name, memory.description) == (name, description)
    assert memory.body.strip() == "we deploy on Fridays after 14:00 UTC."


@then(parsers.parse('"show {name}" prints the memory'))
def show_prints(env: Env, name: str) -> None:
    result = env.run("show", name)
    assert result.code == 0 and "production deploys happen on Fridays" in result.out, result.err
