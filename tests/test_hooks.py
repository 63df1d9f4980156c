"""Settings merge and removal, the Pi template check, and what install refuses to overwrite."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hostile_repo import tree_digest

from pipeline.hosts.claude import find_transcript, is_ours, merge_hooks, project_dir_name, remove_hooks
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


def test_the_newest_transcript_of_the_project_is_found(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "projects" / project_dir_name(Path("/w/my.app"))
    folder.mkdir(parents=True)
    assert folder.name == "-w-my-app"
    (folder / "a.jsonl").write_text("{}\n")
    (folder / "b.jsonl").write_text("{}\n")
    os.utime(folder / "a.jsonl", (1, 1))
    assert find_transcript(tmp_path, [Path("/elsewhere"), Path("/w/my.app")]) == folder / "b.jsonl"
    assert find_transcript(tmp_path, [Path("/elsewhere")]) is None
