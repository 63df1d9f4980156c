"""Settings merge and removal, the Pi template check, and what install refuses to overwrite."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hostile_repo import tree_digest

from pipeline.errors import InputRejected
from pipeline.hosts.claude import (
    consolidate_command_file,
    find_transcript,
    is_ours,
    merge_hooks,
    project_dir_name,
    remove_hooks,
    session_id,
)
from pipeline.hosts.pi import node_check, render_extension, strip_types

CMD = "/usr/local/bin/memfold inject --format claude-hook"


def test_merge_is_idempotent_and_refreshes_a_moved_executable() -> None:
    data: dict[str, Any] = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo a"}]}]}}
    assert merge_hooks(data, CMD, ["SessionStart"], Path("s.json")) == ["SessionStart"]
    assert merge_hooks(data, CMD, ["SessionStart"], Path("s.json")) == []
    moved = "/opt/memfold/bin/memfold inject --format claude-hook"
    assert merge_hooks(data, moved, ["SessionStart"], Path("s.json")) == ["SessionStart (updated)"]
    assert [h["command"] for g in data["hooks"]["SessionStart"] for h in g["hooks"]] == ["echo a", moved]


def test_remove_keeps_foreign_handlers_that_share_a_group_with_ours() -> None:
    data: dict[str, Any] = {"x": 1, "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [
        {"type": "command", "command": "echo a"}, {"type": "command", "command": CMD}]}]}}
    remove_hooks(data)
    assert data == {"x": 1, "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [
        {"type": "command", "command": "echo a"}]}]}}
    only_ours: dict[str, Any] = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": CMD}]}]}}
    remove_hooks(only_ours)
    assert only_ours == {}


def test_only_memfold_hook_commands_count_as_ours() -> None:
    assert is_ours({"type": "command", "command": "'/a b/memfold' --home /h inject --format claude-hook"})
    assert is_ours({"type": "command", "command": "/usr/bin/python3 -m pipeline inject --format claude-hook"})
    assert not is_ours({"type": "command", "command": "other-tool inject --format claude-hook"})
    assert not is_ours({"type": "command", "command": "/usr/bin/memfold inject"})


def test_install_refuses_to_overwrite_a_command_file_it_did_not_write(env: Env) -> None:
    target = env.project / ".claude" / "commands" / "consolidate.md"
    target.parent.mkdir(parents=True)
    target.write_text("my own /consolidate\n")
    result = env.run("hooks", "install", "claude")
    assert result.code == 1 and "hooks.file-exists" in result.err
    assert target.read_text() == "my own /consolidate\n"


def test_uninstall_keeps_a_command_file_edited_after_install(env: Env) -> None:
    assert env.run("hooks", "install", "claude").code == 0
    target = env.project / ".claude" / "commands" / "consolidate.md"
    target.write_text(target.read_text() + "my note\n")
    assert env.run("hooks", "uninstall", "claude").code == 0
    assert target.read_text().endswith("my note\n")
    assert not (env.project / ".claude" / "settings.json").exists()


# (host, the component that is a symlink, what the link points at inside the outside dir)
SYMLINKED = [
    ("claude", ".claude", ""),
    ("claude", ".claude/commands", "commands"),
    ("claude", ".claude/settings.json", "settings.json"),
    ("claude", ".claude/commands/consolidate.md", "consolidate.md"),
    ("pi", ".pi", ""),
    ("pi", ".pi/extensions", "extensions"),
    ("pi", ".pi/extensions/memfold.ts", "memfold.ts"),
    ("codex", ".codex", ""),
    ("codex", ".codex/hooks.json", "hooks.json"),
]


@pytest.mark.parametrize(("host", "link", "target"), SYMLINKED)
def test_install_refuses_a_symlinked_host_path_and_writes_nothing_outside(
        env: Env, tmp_path: Path, host: str, link: str, target: str) -> None:
    outside = tmp_path / "outside"
    (outside / "commands").mkdir(parents=True)
    (outside / "extensions").mkdir()
    (outside / "settings.json").write_text("{}\n")
    (outside / "hooks.json").write_text("{}\n")
    path = env.project / link
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside / target if target else outside)
    before = tree_digest(outside)
    result = env.run("--json", "hooks", "install", host)
    assert result.code == 1, (result.out, result.err)
    assert result.json()["code"] == "path.symlink"
    assert link in result.json()["message"]
    assert tree_digest(outside) == before
    assert not (env.home / "hosts" / "installed.json").exists()


@pytest.mark.parametrize(("host", "link", "target"), [SYMLINKED[0], SYMLINKED[4], SYMLINKED[7]])
def test_uninstall_refuses_a_host_dir_swapped_for_a_symlink_after_install(
        env: Env, tmp_path: Path, host: str, link: str, target: str) -> None:
    assert env.run("hooks", "install", host).code == 0
    outside = tmp_path / "outside"
    (env.project / link).rename(outside)
    (env.project / link).symlink_to(outside)
    before = tree_digest(outside)
    result = env.run("--json", "hooks", "uninstall", host)
    assert result.code == 1 and result.json()["code"] == "path.symlink"
    assert tree_digest(outside) == before


def test_the_stripped_template_holds_no_type_syntax_and_a_broken_one_fails(tmp_path: Path) -> None:
    source = render_extension(["/usr/bin/memfold", "--home", "/h"])
    stripped = strip_types(source.decode())
    assert "import type" not in stripped and ": string" not in stripped and ": ExtensionAPI" not in stripped
    assert node_check(source, tmp_path)[0]
    assert not node_check(copy.copy(source).replace(b"return undefined;", b"return undefined; )", 1), tmp_path)[0]


def test_the_running_sessions_transcript_is_found_by_its_id_never_by_age(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "projects" / project_dir_name(Path("/w/my.app"))
    folder.mkdir(parents=True)
    assert folder.name == "-w-my-app"
    (folder / "running.jsonl").write_text("{}\n")
    (folder / "other.jsonl").write_text("{}\n")
    os.utime(folder / "running.jsonl", (1, 1))  # the other session wrote last
    assert find_transcript(tmp_path, "running", [Path("/elsewhere"), Path("/w/my.app")]) == folder / "running.jsonl"
    # Started in a subdirectory: its folder is not the project's, the id still finds it.
    sub = tmp_path / "projects" / project_dir_name(Path("/w/my.app/src"))
    sub.mkdir()
    (sub / "in-sub.jsonl").write_text("{}\n")
    assert find_transcript(tmp_path, "in-sub", [Path("/w/my.app")]) == sub / "in-sub.jsonl"
    # A new session whose first message is not saved yet has no transcript: none is borrowed.
    assert find_transcript(tmp_path, "fresh", [Path("/w/my.app")]) is None


def test_only_a_session_id_names_a_transcript() -> None:
    assert session_id("5f0c-aa", {}) == "5f0c-aa"
    assert session_id(None, {"CLAUDE_CODE_SESSION_ID": "from-env"}) == "from-env"
    assert session_id("", {}) is None
    for bad in ("../../etc/passwd", "a/b", "x" * 200, ".hidden"):
        with pytest.raises(InputRejected) as caught:
            session_id(bad, {})
        assert caught.value.code == "hooks.session-id"


HOST_DIRS = (".claude", ".pi", ".codex")


def _committed(env: Env) -> dict[str, str]:
    return {str(p.relative_to(env.project)): p.read_text() for d in HOST_DIRS for p in (env.project / d).rglob("*")
            if p.is_file() and p.name != "settings.local.json"}


@pytest.mark.parametrize("host", ["claude", "pi", "codex"])
def test_committed_host_files_name_memfold_on_path_and_no_machine_path(env: Env, host: str) -> None:
    import sys

    result = env.run("--json", "hooks", "install", host)
    assert result.code == 0, result.err
    files = _committed(env)
    assert files and sorted(files) == sorted(result.json()["commit"])
    machine = [str(env.home), str(env.project), str(Path(sys.executable).parent), str(Path.home()), "--home"]
    for rel, text in files.items():
        assert not [m for m in machine if m in text], (rel, [m for m in machine if m in text])
        assert "memfold inject" in text or "memfold hooks consolidate" in text or '["memfold"]' in text, rel


def test_the_machines_home_goes_to_claudes_local_settings_and_leaves_with_uninstall(env: Env) -> None:
    import json

    local = env.project / ".claude" / "settings.local.json"
    result = env.run("--json", "hooks", "install", "claude")
    assert result.json()["localOnly"] == [".claude/settings.local.json"]
    assert json.loads(local.read_text()) == {"env": {"MEMFOLD_HOME": str(env.home.absolute())}}
    assert env.run("hooks", "uninstall", "claude").code == 0
    assert not local.exists() and not (env.project / ".claude").exists()
    # A local file the user keeps loses only memfold's variable.
    local.parent.mkdir()
    local.write_text('{"env": {"OTHER": "1"}, "model": "x"}')
    env.run("hooks", "install", "claude")
    env.run("hooks", "uninstall", "claude")
    assert json.loads(local.read_text()) == {"env": {"OTHER": "1"}, "model": "x"}


def test_an_absolute_install_is_asked_for_and_says_its_files_are_for_this_machine(env: Env) -> None:
    result = env.run("--json", "hooks", "install", "claude", "--absolute")
    assert result.code == 0 and result.json()["commit"] == []
    assert sorted(result.json()["localOnly"]) == [".claude/commands/consolidate.md", ".claude/settings.json"]
    text = (env.project / ".claude" / "settings.json").read_text()
    assert str(env.home.absolute()) in text and not (env.project / ".claude" / "settings.local.json").exists()


def test_a_detached_run_has_its_own_session_its_output_in_a_private_log_and_outlives_its_starter(
        tmp_path: Path) -> None:
    import os
    import sys
    import time

    from pipeline.hosts.detach import log_path, start_detached

    log = log_path(tmp_path / "logs", "ab" * 32, "20261130T120000Z-1")
    assert log.name == "consolidate-abababababab-20261130T120000Z-1.log"
    script = "import os, sys, time; print(os.getsid(0), flush=True); time.sleep(0.5); print('done', flush=True)"
    pid = start_detached([sys.executable, "-c", script], log, {"PATH": os.environ.get("PATH", "")}, tmp_path)
    deadline = time.monotonic() + 30
    while "done" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    session, done = log.read_text().split()
    assert int(session) == pid != os.getsid(0) and done == "done"
    assert log.stat().st_mode & 0o777 == 0o600 and log.parent.stat().st_mode & 0o777 == 0o700


def test_claude_codes_consolidate_command_starts_the_run_in_the_background() -> None:
    text = consolidate_command_file(["memfold"]).decode()
    (bang,) = [line for line in text.splitlines() if line.startswith("!`")]
    assert bang == "!`memfold hooks consolidate claude --background --session ${CLAUDE_SESSION_ID} $ARGUMENTS`"
    assert "`memfold status`" in text and "log file" in text


def test_pis_extension_runs_consolidate_in_the_background_with_progress_only_when_it_has_a_ui() -> None:
    source = render_extension(["memfold"]).decode()
    assert '"--progress-json"' in source and "ctx.ui.setStatus(STATUS_KEY" in source
    handler = source[source.index('pi.registerCommand("consolidate"'):]
    assert handler.index("if (ctx.hasUI)") < handler.index("consolidateInBackground(") < handler.index(
        'await memfold(pi, ctx.cwd, ["consolidate"')
