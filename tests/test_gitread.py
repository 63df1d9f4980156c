"""Reading committed versions of one file from git: exact bytes, every version, and nothing but this repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.gitread import MAX_BLOB, committed_versions


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _commit_file(repo: Path, data: bytes | None) -> str:
    target = repo / ".memory" / "chain-head-0123456789abcdef.json"
    target.parent.mkdir(exist_ok=True)
    if data is None:
        _git(repo, "rm", "-q", str(target))
    else:
        target.write_bytes(data)
        _git(repo, "add", str(target))
    _git(repo, "commit", "-q", "-m", "step")
    return _git(repo, "rev-parse", "HEAD")


PATH = ".memory/chain-head-0123456789abcdef.json"


def test_every_committed_version_comes_back_newest_first_with_its_exact_bytes(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
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
    assert committed_versions(_repo(tmp_path / "empty"), PATH) is None


def test_a_blob_over_the_bound_is_not_read(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    commit = _commit_file(repo, b"x" * (MAX_BLOB + 1))
    assert committed_versions(repo, PATH) == [(commit, b"")]


def test_git_variables_in_the_environment_cannot_point_the_read_at_another_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path / "repo")
    mine = _commit_file(repo, b"mine\n")
    other = _repo(tmp_path / "other")
    _commit_file(other, b"planted\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert committed_versions(repo, PATH) == [(mine, b"mine\n")]
