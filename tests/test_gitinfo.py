"""Git facts about the mirror: right answers, and no program a hostile repository configures ever runs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Env
from hostile_repo import Hostile, git, make_hostile

from pipeline.mirror import gitinfo
from pipeline.mirror.gitinfo import MAX_BLOB, committed_versions, merge_file

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    project = tmp_path / "project"
    project.mkdir()
    return make_hostile(project, tmp_path)


def test_the_hostile_repository_really_runs_programs_under_plain_git(hostile: Hostile) -> None:
    subprocess.run(("git", "status"), cwd=hostile.project, capture_output=True, check=False)
    subprocess.run(("git", "log", "-p", "-1"), cwd=hostile.project, capture_output=True, check=False)
    ran = hostile.ran()
    assert any(line.endswith(" 2 ") or " 2 " in line for line in ran), ran  # core.fsmonitor, protocol 2
    assert any("post-index-change" in line for line in ran), ran
    assert any(" process" in line for line in ran), ran  # the filter process outranks clean
    assert any(" textconv " in line for line in ran), ran
    assert any("--verify" in line for line in ran), ran  # gpg.program, by log.showSignature


def test_git_facts_come_through_a_git_file_without_running_anything(hostile: Hostile) -> None:
    assert gitinfo.tracked(hostile.project) == ["project_team.md"]
    assert gitinfo.ever_committed(hostile.project) == {"project_team.md"}
    assert hostile.ran() == []


def test_every_memfold_command_that_reads_the_project_runs_nothing_the_repository_configures(
        hostile: Hostile, tmp_path: Path) -> None:
    env = Env(home=tmp_path / "home", project=hostile.project)
    # Still in the index and in history, but not a hand-placed mirror file that every write would refuse.
    (hostile.project / ".memory" / "project_team.md").unlink()
    commands = [
        ("init",), ("add", "project_ports", "-d", "dev server on port 8080", "--visibility", "safe"),
        ("add", "user_editor", "-d", "prefers vim keybindings", "-t", "user"),
        ("status",), ("--json", "status"), ("audit",), ("list",), ("inject",), ("trust",), ("inject",),
        ("mirror", "check"), ("consolidate", "--no-context"), ("verify",), ("hooks", "install", "claude"),
        ("hooks", "install", "codex"), ("hooks", "install", "pi"), ("search", "port"), ("show", "project_ports"),
        ("recover",), ("forget", "user_editor"), ("hooks", "uninstall", "claude"), ("untrust",),
    ]
    codes = {" ".join(args): env.run(*args).code for args in commands}
    assert codes == {" ".join(args): 0 for args in commands}
    status = env.run("--json", "status").json()
    assert status["git"]["tracked"] == ["project_team.md"]
    assert hostile.ran() == []


def test_gits_text_merge_runs_nothing_a_hostile_repository_configures(hostile: Hostile,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(hostile.project)  # a merge driver runs at the top of the work tree
    assert merge_file(b"A\nb\nc\nd\n", b"a\nb\nc\nd\n", b"a\nb\nc\nD\n") == (b"A\nb\nc\nD\n", True)
    assert merge_file(b"X\n", b"b\n", b"Y\n", ("mine", "old", "yours"), 3) == (
        b"<<< mine\nX\n===\nY\n>>> yours\n", False)
    assert merge_file(b"\0x", b"\0y", b"\0z") is None  # binary: git will not
    assert hostile.ran() == []


def test_gits_text_merge_follows_the_repositorys_conflict_style(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    git("init", "-q", str(tmp_path))
    git("config", "merge.conflictStyle", "diff3", cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    merged = merge_file(b"X\n", b"b\n", b"Y\n")
    assert merged == (b"<<<<<<< ours\nX\n||||||| base\nb\n=======\nY\n>>>>>>> theirs\n", False)


def test_inherited_git_variables_do_not_redirect_the_question(hostile: Hostile, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git("init", "-q", str(other))
    env = {**os.environ, "GIT_DIR": str(other / ".git"), "GIT_INDEX_FILE": str(tmp_path / "nowhere")}
    out = gitinfo.run_git(("ls-files", "-z"), hostile.project, base_env=env)
    assert out is not None and "project_team.md" in out
    assert hostile.ran() == []


def test_a_directory_with_no_repository_at_or_below_gets_no_answer_from_a_repository_above(tmp_path: Path) -> None:
    git("init", "-q", str(tmp_path))
    inner = tmp_path / "plain"
    inner.mkdir()
    assert gitinfo.tracked(inner) is None


def test_a_memory_made_private_after_it_was_committed_is_reported_as_a_past_leak(env: Env) -> None:
    assert env.run("add", "project_ci", "-d", "CI runs on every push", "--visibility", "safe").code == 0
    git("-c", "user.email=a@example.com", "-c", "user.name=A", "add", ".memory", ".memfold", cwd=env.project)
    git("-c", "user.email=a@example.com", "-c", "user.name=A", "commit", "-qm", "mirror", cwd=env.project)
    assert env.run("update", "project_ci", "--visibility", "private").code == 0
    status = env.run("--json", "status").json()
    assert status["git"]["pastLeaks"] == ["project_ci.md"]
    # The mirror holds memory files and its index only; the chain head is committed beside it.
    assert status["git"]["tracked"] == ["MEMORY.md", "project_ci.md"]
    heads = git("ls-files", ".memfold/heads", cwd=env.project)
    assert len(heads.splitlines()) == 1
    assert any("project_ci.md is private now" in w for w in status["warnings"])


def test_a_partial_clone_never_fetches_missing_history_through_the_repository_s_transport(tmp_path: Path) -> None:
    source = tmp_path / "source"
    git("init", "-q", str(source))
    (source / ".memory").mkdir()
    for name in ("project_a.md", "project_b.md"):
        (source / ".memory" / name).write_text("x\n")
        git("add", "-A", cwd=source)
        git("-c", "user.email=a@example.com", "-c", "user.name=A", "commit", "-qm", name, cwd=source)
    git("config", "uploadpack.allowFilter", "true", cwd=source)
    clone = tmp_path / "clone"
    git("clone", "-q", "--no-checkout", "--filter=tree:0", source.as_uri(), str(clone))
    marker = tmp_path / "ran.txt"
    upload = tmp_path / "upload.sh"
    upload.write_text(f'#!/bin/sh\necho "$*" >> {marker}\nexec git-upload-pack "$@"\n')
    upload.chmod(0o755)
    git("config", "remote.origin.uploadpack", str(upload), cwd=clone)
    git("config", "protocol.file.allow", "always", cwd=clone)
    assert gitinfo.ever_committed(clone) is None  # the trees are not here, and are not fetched
    status = Env(home=tmp_path / "home", project=clone).run("--json", "status").json()
    assert any("could not be read" in w for w in status["warnings"])
    assert not marker.exists()
    git("log", "--all", "--name-only", "--format=", cwd=clone)
    assert marker.exists()  # plain git does run the repository's program


# Committed versions of one mirror file: exact bytes, every version, and nothing but this repository.


def _plain_git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _history_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _commit_file(repo: Path, data: bytes | None) -> str:
    target = repo / ".memory" / "chain-head-0123456789abcdef.json"
    target.parent.mkdir(exist_ok=True)
    if data is None:
        _plain_git(repo, "rm", "-q", str(target))
    else:
        target.write_bytes(data)
        _plain_git(repo, "add", str(target))
    _plain_git(repo, "commit", "-q", "-m", "step")
    return _plain_git(repo, "rev-parse", "HEAD")


PATH = ".memory/chain-head-0123456789abcdef.json"


def test_every_committed_version_comes_back_newest_first_with_its_exact_bytes(tmp_path: Path) -> None:
    repo = _history_repo(tmp_path / "repo")
    first = _commit_file(repo, b'{"seq": 1}\n')
    second = _commit_file(repo, b'{"seq": 2}\r\n\x00')
    deleted = _commit_file(repo, None)
    third = _commit_file(repo, b'{"seq": 3}\n')
    assert committed_versions(repo, PATH) == [(third, b'{"seq": 3}\n'), (deleted, None),
                                              (second, b'{"seq": 2}\r\n\x00'), (first, b'{"seq": 1}\n')]


def test_outside_a_repository_or_before_the_first_commit_there_is_no_history(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert committed_versions(plain, PATH) is None
    assert committed_versions(_history_repo(tmp_path / "empty"), PATH) is None


def test_a_blob_over_the_bound_is_not_read(tmp_path: Path) -> None:
    repo = _history_repo(tmp_path / "repo")
    commit = _commit_file(repo, b"x" * (MAX_BLOB + 1))
    assert committed_versions(repo, PATH) == [(commit, b"")]


def test_git_variables_in_the_environment_cannot_point_the_read_at_another_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _history_repo(tmp_path / "repo")
    mine = _commit_file(repo, b"mine\n")
    other = _history_repo(tmp_path / "other")
    _commit_file(other, b"planted\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert committed_versions(repo, PATH) == [(mine, b"mine\n")]
