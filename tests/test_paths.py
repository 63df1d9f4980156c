"""Layout: project roots, scope keys, and symlinks refused on every path memfold owns."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Env

from pipeline.paths import make_layout, project_key, project_root


def test_project_root_is_the_git_top_level_realpath(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    link = tmp_path / "link"
    link.symlink_to(repo)
    assert project_root(link / "src" / "deep") == str(repo.resolve())


def test_a_linked_worktree_is_its_own_root_as_git_says(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(tmp_path / "wt")], check=True)
    (tmp_path / "wt" / "src").mkdir()
    assert (tmp_path / "wt" / ".git").is_file()
    expected = subprocess.run(["git", "-C", str(tmp_path / "wt" / "src"), "rev-parse", "--show-toplevel"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert Path(project_root(tmp_path / "wt" / "src")) == Path(expected) == (tmp_path / "wt").resolve()


@pytest.mark.parametrize("xdg", [None, "", "relative/data", "/abs/data"])
def test_the_default_home_follows_xdg_like_platformdirs(xdg: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from platformdirs import user_data_dir

    from pipeline.paths import default_home

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


@pytest.mark.parametrize("what", ["home", "projects", "store", "runs", "receipts", "mirror"])
def test_a_symlink_on_memfold_paths_is_refused_and_nothing_is_written_outside(env: Env, tmp_path: Path, what: str) -> None:
    assert env.run("init").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    target = {"home": env.home, "projects": env.home / "projects", "store": env.harness,
              "runs": env.project_home / "runs", "receipts": env.project_home / "receipts", "mirror": env.mirror}[what]
    moved = tmp_path / "moved"
    os.rename(target, moved)
    os.symlink(outside, target)
    result = env.run("add", "project_x", "-d", "a fact", "--visibility", "safe")
    assert result.code == 1, result.err
    assert "symlink" in result.err
    assert list(outside.iterdir()) == []


def test_a_layout_changed_between_writes_is_checked_whole_again(env: Env, tmp_path: Path) -> None:
    """A write on a layout that was complete takes a quick look first; what it finds changed gets the
    full check: a loosened project home is 0700 again, a removed run dir is made, a linked lock record
    is refused."""
    assert env.run("add", "project_a", "-d", "alpha fact").code == 0
    env.project_home.chmod(0o755)
    shutil.rmtree(env.project_home / "runs")
    assert env.run("add", "project_b", "-d", "beta fact").code == 0
    assert stat.S_IMODE(env.project_home.stat().st_mode) == 0o700
    assert (env.project_home / "runs").is_dir()
    outside = tmp_path / "owner.json"
    outside.write_bytes(b"")
    (env.project_home / "lock.json").unlink()
    os.symlink(outside, env.project_home / "lock.json")
    result = env.run("add", "project_c", "-d", "gamma fact")
    assert result.code == 1 and "symlink" in result.err, result.err
    assert outside.read_bytes() == b""


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


def _git(repo: Path, *args: str) -> str:
    argv = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def _common_dir(directory: Path) -> Path:
    return Path(_git(directory, "rev-parse", "--path-format=absolute", "--git-common-dir")).resolve()


def _repo_with_worktree(tmp_path: Path) -> tuple[Path, Path]:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "init")
    _git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    return repo, tmp_path / "wt"


def test_linked_worktrees_share_the_key_of_the_main_checkout(tmp_path: Path) -> None:
    repo, wt = _repo_with_worktree(tmp_path)
    nested = wt / "deep" / "er"
    nested.mkdir(parents=True)
    assert _common_dir(nested) == _common_dir(repo) == (repo / ".git").resolve()
    expected = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()
    assert project_key(project_root(nested)) == project_key(project_root(repo)) == expected
    layout = make_layout(tmp_path / "home", nested)
    assert layout.project_root == wt.resolve()
    assert layout.mirror == wt.resolve() / ".memory"
    assert layout.project_home == tmp_path / "home" / "projects" / expected


def test_worktrees_of_a_bare_repository_are_keyed_by_the_bare_repository(tmp_path: Path) -> None:
    seed, _ = _repo_with_worktree(tmp_path / "seed")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    _git(bare, "worktree", "add", "-q", str(tmp_path / "one"))
    _git(bare, "worktree", "add", "-q", "-b", "other", str(tmp_path / "two"))
    assert _common_dir(tmp_path / "one") == bare.resolve()
    keys = {project_key(project_root(tmp_path / name)) for name in ("one", "two")}
    assert keys == {hashlib.sha256(str(bare.resolve()).encode()).hexdigest()}


def test_a_clone_is_a_project_of_its_own(tmp_path: Path) -> None:
    repo, _ = _repo_with_worktree(tmp_path)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    assert project_key(project_root(clone)) != project_key(project_root(repo))


def test_a_submodule_keeps_its_own_work_tree_as_its_key(tmp_path: Path) -> None:
    inner, _ = _repo_with_worktree(tmp_path / "inner")
    outer = tmp_path / "outer"
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    _git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub")
    sub = outer / "sub"
    assert (sub / ".git").is_file()
    assert project_key(project_root(sub)) == hashlib.sha256(str(sub.resolve()).encode()).hexdigest()


def test_finding_the_project_starts_no_git_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, wt = _repo_with_worktree(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    assert make_layout(tmp_path / "home", wt).scope_key == project_key(project_root(tmp_path / "repo"))


def _old_worktree_store(tmp_path: Path, env_home: Path) -> tuple[Path, Path, Env]:
    """A store keyed the old way: created at the worktree's path before it was a worktree (same key)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "init")
    wt = tmp_path / "wt"
    wt.mkdir()
    old = Env(home=env_home, project=wt)
    assert old.run("add", "project_old", "-d", "a fact kept in the worktree", "--visibility", "safe",
                   "-b", "old body").code == 0
    for entry in list(wt.iterdir()):  # git worktree add wants an empty directory
        os.rename(entry, tmp_path / f"saved{entry.name}")
    _git(repo, "worktree", "add", "-q", str(wt))
    os.rename(tmp_path / "saved.memory", wt / ".memory")
    return repo, wt, old


def test_a_store_keyed_by_a_worktree_moves_to_the_repository_once_and_still_verifies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo, wt, old = _old_worktree_store(tmp_path, home)
    old_key = hashlib.sha256(str(wt.resolve()).encode()).hexdigest()
    new_key = project_key(str(repo.resolve()))
    before = (home / "projects" / old_key / "memory" / "project_old.md").read_bytes()
    first = old.run("list")
    assert first.code == 0, first.err
    assert "moved to the repository's store" in first.err
    assert "project_old" in first.out
    assert not (home / "projects" / old_key).exists()
    assert (home / "projects" / new_key / "memory" / "project_old.md").read_bytes() == before
    again = old.run("list")
    assert again.code == 0 and "moved" not in again.err and "store" not in again.err
    main = Env(home=home, project=repo)
    assert "project_old" in main.run("list").out
    assert old.run("verify").code == 0
    assert old.run("audit").code == 0
    assert old.run("add", "project_new", "-d", "written after the move").code == 0
    assert old.run("audit").code == 0


def test_a_worktree_store_beside_an_existing_repository_store_is_kept_and_named_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo, wt, old = _old_worktree_store(tmp_path, home)
    main = Env(home=home, project=repo)
    assert main.run("add", "project_main", "-d", "a fact kept in the main checkout").code == 0
    old_home = home / "projects" / hashlib.sha256(str(wt.resolve()).encode()).hexdigest()
    before = {p.relative_to(old_home): p.read_bytes() for p in old_home.rglob("*") if p.is_file()}
    first = old.run("list")
    assert first.code == 0
    assert str(old_home) in first.err and "untouched" in first.err
    assert "project_main" in first.out and "project_old" not in first.out
    after = {p.relative_to(old_home): p.read_bytes() for p in old_home.rglob("*") if p.is_file()}
    assert {k: v for k, v in after.items() if k != Path("superseded.json")} == before
    second = old.run("list")
    assert second.code == 0 and str(old_home) not in second.err


def test_an_unattended_run_over_all_projects_adopts_an_old_worktree_store_and_consolidates_it(
        tmp_path: Path) -> None:
    import json

    home = tmp_path / "home"
    repo, wt, old = _old_worktree_store(tmp_path, home)
    old_key = hashlib.sha256(str(wt.resolve()).encode()).hexdigest()
    result = Env(home=home, project=tmp_path).run("--json", "consolidate", "--all-projects")
    assert result.code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines() if line.startswith("{")]
    assert [line["status"] for line in lines] == ["consolidated"], lines
    assert "moved to the repository's store" in (home / "logs" / "cron.log").read_text(encoding="utf-8")
    assert not (home / "projects" / old_key).exists()
    assert (home / "projects" / project_key(str(repo.resolve())) / "memory" / "project_old.md").is_file()
    assert old.run("audit").code == 0


def test_a_home_inside_the_mirror_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    from pipeline.errors import UnsafePath
    from pipeline.paths import make_layout
    from pipeline.paths.ondisk import ensure_layout

    project = tmp_path / "project"
    project.mkdir()
    layout = make_layout(project / ".memory" / "home", project)
    with pytest.raises(UnsafePath) as exc:
        ensure_layout(layout)
    assert exc.value.code == "path.roots-overlap"
    assert list(project.iterdir()) == []

