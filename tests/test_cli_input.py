"""Bad input is a clear error with a stable code and exit code, never an internal error or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Env


@pytest.mark.parametrize(("args", "code", "exit_code"), [
    (["add", "project_x", "-d", "d", "--expires", "2026-13-45"], "memory.expires", 1),
    (["add", "project_x", "-d", "d", "--expires", "2026-02-30"], "memory.expires", 1),
    (["add", "project_x", "-d", "d", "--expires", "tomorrow"], "memory.expires", 1),
    (["update", "project_a", "--expires", "2026-02-30"], "memory.expires", 1),
    (["add", "project_x", "-d", "d", "--body-file", "{tmp}/missing.txt"], "input.body-file", 1),
    (["add", "project_x", "-d", "d", "--body-file", "{tmp}"], "input.body-file", 1),
    (["--global", "mirror", "check"], "mirror.global", 2),
    (["add", "project_x", "-d", "d", "--body", "a\0b"], "usage.nul", 2),
])
def test_bad_input_gets_its_code_and_exit_code_and_changes_nothing(env: Env, tmp_path: Path, args: list[str],
                                                                   code: str, exit_code: int) -> None:
    assert env.run("add", "project_a", "-d", "the first memory").code == 0
    before = env.snapshot()
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = env.run("--json", *args)
    assert (result.code, result.json()["code"]) == (exit_code, code), (result.out, result.err)
    assert env.snapshot() == before
    human = env.run(*args)
    assert human.code == exit_code and f"[{code}]" in human.err
    assert "internal error" not in human.err and "Traceback" not in human.err


def test_a_body_file_that_is_a_symlink_to_a_text_file_is_read(env: Env, tmp_path: Path) -> None:
    target = tmp_path / "body.txt"
    target.write_text("the body text\n")
    (tmp_path / "link.txt").symlink_to(target)
    assert env.run("add", "project_x", "-d", "d", "--body-file", str(tmp_path / "link.txt")).code == 0
    assert (env.harness / "project_x.md").read_text().endswith("the body text\n")


def test_a_home_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("")
    result = Env(home=not_a_dir, project=project).run("--json", "add", "project_x", "-d", "d")
    assert result.code == 2 and result.json()["code"] == "usage.home"
    assert not_a_dir.read_text() == ""


def test_a_path_the_os_refuses_is_an_io_error_not_a_bug(env: Env, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    result = env.run("--json", "export", "claude", str(blocked / "dest"))
    assert result.code == 1 and result.json()["code"] == "io.path"
    assert str(blocked / "dest") in result.json()["message"]


ODD = ["", "-", "x" * 300, "../x", "/etc/passwd", "a b", "\u00e9", "2026-13-45", "-1", "9" * 30, "MEMORY", "con",
       ".md", "\u202e"]
TEMPLATES = [["add", "{}", "-d", "d"], ["add", "project_n", "-d", "d", "--type", "{}"],
             ["add", "project_n", "-d", "d", "--visibility", "{}"], ["add", "project_n", "-d", "d", "--expires", "{}"],
             ["add", "project_n", "-d", "d", "--body-file", "{}"], ["update", "{}", "-d", "x"], ["forget", "{}"],
             ["show", "{}"], ["search", "q", "--limit", "{}"], ["rename", "project_a", "{}"],
             ["inject", "--max-bytes", "{}"], ["undo", "{}"], ["verify", "{}"], ["import", "claude", "{}"]]


def test_odd_arguments_never_reach_the_internal_error_handler(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the first memory").code == 0
    for template in TEMPLATES:
        for value in ODD:
            args = [a.replace("{}", value) for a in template]
            result = env.run(*args)
            assert "internal error" not in result.err and "Traceback" not in result.err, (args, result.err)
            assert result.code in (0, 1, 2, 5, 7), (args, result.code, result.err)
