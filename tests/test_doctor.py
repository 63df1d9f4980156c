"""One broken file never stops the store: every command works on the rest and names the file and its fix."""

from __future__ import annotations

import hashlib
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Env

BROKEN = {
    "project_yaml.md": (b"---\nname: [unclosed\ndescription: bad\n---\nbody\n", "memory.yaml"),
    "project_nofront.md": (b"just text, no frontmatter\n", "memory.frontmatter"),
    "project_kind.md": (b"---\ndescription: a fact\ntype: fact\n---\nbody\n", "memory.type"),
    "project_nodesc.md": (b"---\nname: no description\n---\nbody\n", "memory.description"),
    "project_latin1.md": (b"---\ndescription: caf\xe9\n---\nbody\n", "memory.encoding"),
    "project_baddate.md": (b"---\ndescription: d\ncreated: 2026-13-45\n---\nbody\n", "memory.date"),
}


@pytest.fixture
def store(env: Env) -> Env:
    assert env.run("add", "project_good", "-d", "the build uses make", "-b", "make all").code == 0
    assert env.run("add", "project_shared", "-d", "CI runs on every push", "--visibility", "safe").code == 0
    for name, (data, _) in BROKEN.items():
        (env.harness / name).write_bytes(data)
    return env


def _hashes(env: Env) -> dict[str, str]:
    return {n: hashlib.sha256((env.harness / n).read_bytes()).hexdigest() for n in BROKEN}


def test_doctor_lists_each_broken_file_with_its_full_path_problem_and_fix(store: Env) -> None:
    result = store.run("--json", "doctor")
    assert result.code == 1
    broken = {b["file"]: b for b in result.json()["broken"]}
    assert {n: b["code"] for n, b in broken.items()} == {n: code for n, (_, code) in BROKEN.items()}
    for name, entry in broken.items():
        assert entry["path"] == str(store.harness / name)
        assert f"memfold forget {name}" in entry["fix"] and entry["problem"]
    human = store.run("doctor")
    assert str(store.harness / "project_yaml.md") in human.out and "fix:" in human.out


def test_doctor_on_a_healthy_store_exits_0(env: Env) -> None:
    assert env.run("add", "project_good", "-d", "the build uses make").code == 0
    result = env.run("doctor")
    assert result.code == 0 and "healthy" in result.out


@pytest.mark.parametrize("args", [["list"], ["show", "project_good"], ["search", "make"], ["status"],
                                  ["add", "project_more", "-d", "tests run with make test"]])
def test_the_rest_of_the_store_keeps_working(store: Env, args: list[str]) -> None:
    before = _hashes(store)
    result = store.run(*args)
    assert result.code == 0, result.err
    assert _hashes(store) == before


def test_list_and_status_show_the_good_memories_and_status_names_the_broken(store: Env) -> None:
    listed = store.run("--json", "list").json()["memories"]
    assert [m["file"] for m in listed] == ["project_good.md", "project_shared.md"]
    status = store.run("--json", "status").json()
    assert {b["file"] for b in status["broken"]} == set(BROKEN) and status["memories"] == 2
    assert str(store.harness / "project_kind.md") in store.run("status").out


def test_forget_removes_a_broken_file(store: Env) -> None:
    result = store.run("forget", "project_yaml")
    assert result.code == 0, result.err
    assert not (store.harness / "project_yaml.md").exists()


def test_show_of_a_broken_file_names_the_problem(store: Env) -> None:
    result = store.run("--json", "show", "project_kind")
    assert result.code == 1 and result.json()["code"] == "memory.broken"
    assert "fact" in result.json()["message"]


def test_consolidation_leaves_broken_files_untouched_and_says_so(store: Env) -> None:
    before = _hashes(store)
    result = store.run("--json", "consolidate", "--no-context")
    assert result.code == 0, result.err
    assert {u["file"] for u in result.json()["untouched"]} == set(BROKEN)
    assert _hashes(store) == before
    text = store.run("consolidate", "--no-context").out
    assert "untouched" in text and str(store.harness / "project_nodesc.md") in text


def test_inject_says_which_files_it_skipped(store: Env) -> None:
    result = store.run("inject", "--format", "json")
    assert result.code == 0
    text = result.json()["text"]
    assert "project_good.md" in text and "skipped 6 private memory file(s) that do not parse" in text


def test_a_broken_safe_memory_is_withdrawn_from_the_mirror_not_published(store: Env) -> None:
    (store.harness / "project_shared.md").write_bytes(b"---\ndescription: [\nvisibility: safe\n---\n")
    result = store.run("add", "project_more", "-d", "tests run with make test")
    assert result.code == 0, result.err
    assert not (store.mirror / "project_shared.md").exists()
    assert b"[\n" in (store.harness / "project_shared.md").read_bytes()


def test_edit_opens_a_broken_file_and_commits_the_fix(store: Env, tmp_path: Path) -> None:
    editor = tmp_path / "fix.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[-1])\n"
                      "p.write_text('---\\ndescription: fixed by hand\\n---\\nbody\\n')\n")
    primary, secondary = pty.openpty()
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", *store.args("edit", "project_nofront")], stdin=secondary,
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO), "EDITOR": f"{sys.executable} {editor}"})
    os.close(primary)
    os.close(secondary)
    assert proc.returncode == 0, proc.stderr
    fixed = (store.harness / "project_nofront.md").read_text()
    assert "description: fixed by hand" in fixed and "modified: 2026-11-30T12:00:00Z" in fixed


def test_clear_removes_broken_files_too(store: Env) -> None:
    result = store.run("clear", "--yes")
    assert result.code == 0, result.err
    assert sorted(p.name for p in store.harness.iterdir()) == ["MEMORY.md"]
