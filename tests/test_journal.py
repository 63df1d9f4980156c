"""apply.journal: every write of a transaction goes through its root's directory, opened once.

A ``.memory`` swapped for a directory symlink between memfold's checks and its writes must not carry a
single byte to the link's target: not a staged temp, not a renamed memory, not an index.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from pipeline import fsutil
from pipeline.apply import commit, roots
from pipeline.errors import UnsafePath

SECRET_FREE = ("add", "Deploy target", "-d", "deploys go through the blue green script", "--visibility", "safe",
               "-b", "run ops/deploy.sh")


def _swap_mirror(env: Env, outside: Path) -> None:
    """What an attacker with write access to the checkout does: move the mirror away, link its name elsewhere."""
    env.mirror.rename(env.project / ".memory-moved")
    env.mirror.symlink_to(outside, target_is_directory=True)


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "keep.txt").write_text("someone else's directory\n")
    return outside


def _record_writes(monkeypatch: pytest.MonkeyPatch, then: Any = None) -> list[str]:
    """The file behind every descriptor memfold writes bytes to, as it is written (a temp removed again
    by the clean-up of a failed run was still written where it was); ``then(path)`` runs before the write."""
    written: list[str] = []
    write = fsutil.ops.write

    def recording(fd: int, data: bytes) -> int:
        where = os.readlink(f"/proc/self/fd/{fd}")
        if then is not None:
            then(where)
        written.append(os.readlink(f"/proc/self/fd/{fd}"))
        return write(fd, data)

    monkeypatch.setattr(fsutil.ops, "write", recording)
    return written


def _inside(written: list[str], folder: Path) -> list[str]:
    return [path for path in written if path.startswith(str(folder) + os.sep)]


def test_a_mirror_swapped_for_a_link_before_the_commit_is_refused_and_nothing_lands_in_its_target(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("init").code == 0
    outside = _outside(tmp_path)
    original = commit.apply_changes

    def swapped_first(*args: Any, **kwargs: Any) -> Any:
        _swap_mirror(env, outside)  # after every check of the layout, before the first write
        return original(*args, **kwargs)

    monkeypatch.setattr(commit, "apply_changes", swapped_first)
    written = _record_writes(monkeypatch)
    result = env.run(*SECRET_FREE)
    assert _inside(written, outside) == []
    assert result.code == 1 and "[path.symlink]" in result.err, result.err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert not list(env.harness.glob("*deploy*"))
    assert [p.name for p in (env.project / ".memory-moved").iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)] == []


def test_a_mirror_swapped_while_its_files_are_staged_keeps_every_write_in_the_directory_checked(
        env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("init").code == 0
    outside = _outside(tmp_path)
    swapped: list[str] = []

    def swap_on_first_mirror_write(where: str) -> None:
        if not swapped and os.path.dirname(where) == str(env.mirror):
            swapped.append(where)
            _swap_mirror(env, outside)  # the first staged mirror file is written: the rest follow it

    written = _record_writes(monkeypatch, swap_on_first_mirror_write)
    result = env.run(*SECRET_FREE)
    monkeypatch.undo()
    assert swapped, "no file was staged in the mirror"
    assert _inside(written, outside) == []
    # The commit went into the directory memfold checked (now .memory-moved); the check after it reads the
    # mirror by its name, finds the link, and says so.
    assert result.code == 7 and "[verify.post-commit]" in result.err, result.err
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    moved = env.project / ".memory-moved"
    assert "project_deploy-target.md" in {p.name for p in moved.iterdir()}
    assert [p.name for p in moved.iterdir() if p.name.startswith(fsutil.TEMP_PREFIX)] == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors through /proc")
def test_every_root_is_opened_once_per_commit_and_written_through_that_descriptor(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    opened: list[str] = []
    real_open_dir = roots.open_dir

    def counting(path: Any) -> int:
        opened.append(os.fspath(path))
        return real_open_dir(path)

    monkeypatch.setattr(roots, "open_dir", counting)
    relative: list[str] = []
    rename = fsutil.ops.rename

    def recording(src: str, dst: str, **at: int) -> None:
        folder = at.get("dst_dir_fd")
        if folder is not None and os.readlink(f"/proc/self/fd/{folder}") in (str(env.harness), str(env.mirror)):
            relative.append(dst)
        rename(src, dst, **at)

    monkeypatch.setattr(fsutil.ops, "rename", recording)
    assert env.run("update", "project_a", "-b", "a2").code == 0
    assert sorted(opened) == sorted(set(opened))  # each root once
    assert {str(env.harness), str(env.mirror)} <= set(opened)
    assert "project_a.md" in relative and all("/" not in name for name in relative)


def test_a_root_that_is_a_symlink_is_refused_when_opened(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(UnsafePath) as exc:
        fsutil.open_dir(tmp_path / "link")
    assert exc.value.code == "path.symlink"
    fd = fsutil.open_dir(real)
    os.close(fd)
