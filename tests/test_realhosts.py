"""memfold installed into the real hosts from npm (Claude Code, Pi, Codex, the MCP Inspector), each
talking to a fake model on 127.0.0.1: the memory reaches the model, /consolidate consolidates the
running session and never reports success when nothing ran, MCP tool errors reach a real client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env
from fake_model_server import FakeModelServer
from realclis import VERSIONS, Host, RealClis, host, host_store

pytestmark = pytest.mark.integration


def _installed(h: Host, name: str, *flags: str) -> str:
    description = host_store(h)
    done = h.memfold("hooks", "install", name, *flags)
    assert done.returncode == 0, done.stderr
    return description


def _break_config(h: Host) -> None:
    (h.env.home / "config.yaml").write_text("workers: [unclosed\n")


def _report_reply(text: str) -> str:
    """A model that reports what the /consolidate command printed, as the command file asks."""
    return "REPORT: FAILED" if "memfold /consolidate FAILED" in text else "REPORT: done"


# --- Claude Code -----------------------------------------------------------------------------------


@pytest.fixture
def claude(env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path) -> Host:
    # No MEMFOLD_HOME in the environment: Claude Code takes it from the local settings install wrote.
    return host(env, real_clis, fake_model, tmp_path, "claude", memfold_home_in_env=False)



def test_claude_code_shows_the_model_the_memory_and_consolidates_the_running_session(claude: Host) -> None:
    description = _installed(claude, "claude")
    session = claude.claude("what do we know about deploys?")["session_id"]
    assert claude.asked(description)
    claude.claude("an unrelated later session about the cache")  # now the project's newest transcript
    before = claude.receipts()

    claude.claude("--resume", session, "/consolidate")

    after = claude.receipts_once(len(before) + 1)
    assert len(after) == len(before) + 1
    snapshot = claude.snapshot_of(after[-1])
    assert snapshot["contextMode"] == "transcript" and snapshot["source"] == f"{session}.jsonl"
    said = [e["text"] for e in snapshot["entries"]]
    assert "what do we know about deploys?" in said and not any("unrelated later session" in t for t in said)
    assert claude.asked("transcript: ")  # the model was shown the report, to relay it


def test_claude_code_consolidate_as_the_first_command_of_a_new_session_writes_a_receipt(claude: Host) -> None:
    _installed(claude, "claude")
    before = claude.receipts()

    claude.claude("/consolidate")

    after = claude.receipts_once(len(before) + 1)
    assert len(after) == len(before) + 1
    assert claude.snapshot_of(after[-1])["contextMode"] == "disabled"
    assert claude.asked("has no saved messages yet, consolidated without session context")


def test_claude_code_consolidate_that_fails_is_reported_in_the_printed_result(claude: Host) -> None:
    _installed(claude, "claude")
    claude.server.reply = _report_reply
    _break_config(claude)
    before = claude.receipts()

    result = claude.claude("/consolidate")

    assert result["result"] == "REPORT: FAILED"
    assert claude.asked("error [config.")
    assert claude.receipts() == before


# --- Pi ------------------------------------------------------------------------------------------


@pytest.fixture
def pi(env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path) -> Host:
    return host(env, real_clis, fake_model, tmp_path, "pi", memfold_home_in_env=True)


def _sessions(h: Host) -> list[Path]:
    return sorted((h.user_home / ".pi" / "agent" / "sessions").rglob("*.jsonl"))


def test_pi_shows_the_model_the_memory_and_consolidates_the_session_it_runs_in(pi: Host) -> None:
    description = _installed(pi, "pi")
    assert pi.run("pi", "-p", "what do we know about deploys?").returncode == 0
    assert pi.asked(description)
    (first,) = _sessions(pi)
    assert pi.run("pi", "-p", "an unrelated later session about the cache").returncode == 0
    before = pi.receipts()

    done = pi.run("pi", "-p", "--session", str(first), "/consolidate")

    assert done.returncode == 0, done.stderr
    assert f"memfold: session context: {first}" in done.stderr
    after = pi.receipts()
    assert len(after) == len(before) + 1
    snapshot = pi.snapshot_of(after[-1])
    assert snapshot["contextMode"] == "transcript" and snapshot["source"] == first.name
    said = [e["text"] for e in snapshot["entries"]]
    assert "what do we know about deploys?" in said and not any("unrelated later session" in t for t in said)


def test_pi_consolidate_as_the_first_command_runs_without_context_and_says_so(pi: Host) -> None:
    _installed(pi, "pi")
    before = pi.receipts()

    done = pi.run("pi", "-p", "/consolidate")

    assert done.returncode == 0, done.stderr
    assert "this session has no saved messages yet: consolidated without session context" in done.stderr
    after = pi.receipts()
    assert len(after) == len(before) + 1 and pi.snapshot_of(after[-1])["contextMode"] == "disabled"


def test_pi_consolidate_that_fails_exits_non_zero_and_says_why(pi: Host) -> None:
    _installed(pi, "pi")
    _break_config(pi)
    before = pi.receipts()

    done = pi.run("pi", "-p", "/consolidate")

    assert done.returncode != 0
    assert "memfold /consolidate FAILED" in done.stderr and "config." in done.stderr
    assert pi.receipts() == before


# --- Codex ---------------------------------------------------------------------------------------


def test_codex_runs_the_hook_once_memfold_recorded_codexs_trust(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path) -> None:
    codex = host(env, real_clis, fake_model, tmp_path, "codex", memfold_home_in_env=True)
    description = _installed(codex, "codex")
    exec_ = ("codex", "exec", "--json", "--skip-git-repo-check", "hello")
    assert codex.run(*exec_).returncode == 0
    assert codex.server.model_calls() and not codex.asked(description)  # untrusted: Codex skipped the hook

    trusted = codex.memfold("--json", "hooks", "install", "codex", "--trust-project")

    assert trusted.returncode == 0, trusted.stderr
    report = json.loads(trusted.stdout)
    assert report["codexTrust"]["project_trusted"] is True and report["next"] == []
    assert report["codexTrust"]["trusted"] == [f"{env.project}/.codex/hooks.json:session_start:0:0"]
    assert codex.run(*exec_).returncode == 0
    assert codex.asked(description)


# --- MCP Inspector -------------------------------------------------------------------------------


def _inspect(h: Host, tool: str, *args: str) -> dict[str, Any]:
    argv = ["mcp-inspector", "--cli", "memfold", "mcp", "--method", "tools/call", "--tool-name", tool]
    for arg in args:
        argv += ["--tool-arg", arg]
    done = h.run(*argv, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_mcp_inspector_receives_memfolds_tool_errors_as_tool_errors(
        env: Env, real_clis: RealClis, fake_model: FakeModelServer, tmp_path: Path) -> None:
    h = host(env, real_clis, fake_model, tmp_path, "claude", memfold_home_in_env=True)
    host_store(h)

    missing = _inspect(h, "memory_forget", "name=project_nothing-here")
    arguments = _inspect(h, "memory_add", "description=no name given")
    listed = _inspect(h, "memory_list")

    assert missing["isError"] is True and "structuredContent" not in missing
    assert missing["content"][0]["text"].startswith("[memory.not-found] no memory named 'project_nothing-here'")
    assert "\nhint: " in missing["content"][0]["text"]
    assert arguments["isError"] is True
    assert arguments["content"][0]["text"].startswith("[mcp.arguments] memory_add: 'name' is required\nhint: ")
    # A success carries structured content that the client validated against the output schema.
    assert listed.get("isError") in (None, False)
    assert [m["file"] for m in listed["structuredContent"]["memories"]] == ["project_deploy-day.md"]


def test_the_hosts_under_test_are_the_versions_the_docs_report(real_clis: RealClis) -> None:
    readme = (REPO / "docs" / "hosts" / "index.md").read_text()
    names = {"claude": "Claude Code", "pi": "Pi", "codex": "Codex CLI", "inspector": "MCP Inspector"}
    for name, version in VERSIONS.items():
        assert real_clis.version(name) == version, name
        assert " ".join(f"{names[name]} {version}".split()) in " ".join(readme.split()), name
