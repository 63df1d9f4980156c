"""Layout: project roots, scope keys, and symlinks refused on every path memfold owns."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Env

from pipeline.paths import make_layout, project_root


def test_project_root_is_the_git_top_level_realpath(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert project_root(link / "src" / "deep") == repo.resolve()


def test_a_linked_worktree_and_a_submodule_are_their_own_roots_as_git_says(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    (tmp_path / "wt" / "src").mkdir()
    assert (tmp_path / "wt" / ".git").is_file()
    expected = subprocess.run(["git", "-C", str(tmp_path / "wt" / "src"), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert project_root(tmp_path / "wt" / "src") == Path(expected) == (tmp_path / "wt").resolve()


@pytest.mark.parametrize("xdg", [None, "", "relative/data", "/abs/data"])
def test_the_default_home_follows_xdg_like_platformdirs(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs import user_data_dir

    from pipeline.locate import default_home

    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG rule is computed without platformdirs on Linux only")
    monkeypatch.setenv("HOME", "/home/someone")
    if xdg is None:
        monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_DATA_HOME", xdg)
    env = dict(os.environ)
    env.pop("MEMFOLD_HOME", None)
    assert default_home(env) == user_data_dir("memfold", appauthor=False)
    assert default_home(env) == ("/abs/data/memfold" if xdg == "/abs/data" else "/home/someone/.local/share/memfold")
    assert default_home({**env, "MEMFOLD_HOME": "/elsewhere"}) == "/elsewhere"


def test_outside_git_the_root_is_the_directory_itself(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    layout = make_layout(tmp_path / "home", plain)
    assert layout.project_root == plain.resolve()
    assert layout.scope_key == hashlib.sha256(str(plain.resolve()).encode()).hexdigest()


def test_home_comes_from_memfold_home_when_no_option(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_HOME", str(env.home))
    from pipeline.cli import main

    assert main(["--project", str(env.project), "init"]) == 0
    assert (env.home / "projects").is_dir()


def test_without_any_home_the_default_is_unusable_in_tests(env: Env) -> None:
    from pipeline.cli import main

    assert main(["--project", str(env.project), "init"]) != 0


@pytest.mark.parametrize("what", ["home", "projects", "store", "runs", "mirror"])
def test_a_symlink_on_memfold_paths_is_refused_and_nothing_is_written_outside(env: Env, tmp_path: Path, what: str) -> None:
    assert env.run("init").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    target = {"home": env.home, "projects": env.home / "projects", "store": env.harness,
              "runs": env.project_home / "runs", "mirror": env.mirror}[what]
    moved = tmp_path / "moved"
    os.rename(target, moved)
    os.symlink(outside, target)
    result = env.run("add", "project_x", "-d", "a fact", "--visibility", "safe")
    assert result.code == 1, result.err
    assert "symlink" in result.err
    assert list(outside.iterdir()) == []


def test_two_writers_at_once_lose_no_update(env: Env) -> None:
    assert env.run("init").code == 0
    procs = [
        subprocess.Popen([sys.executable, "-m", "pipeline", *env.args("add", f"project_w{i}", "-d", f"writer {i} fact")],
                         env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for i in range(4)
    ]
    codes = [p.wait(timeout=60) for p in procs]
    assert codes == [0, 0, 0, 0]
    assert sorted(p.name for p in env.harness.glob("project_w*.md")) == [f"project_w{i}.md" for i in range(4)]
    assert env.run("audit").code == 0
