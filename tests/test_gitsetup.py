"""``memfold hooks install git``: drivers in the repository's shared config, hooks, refusals, exact uninstall."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Env
from gitteam import ok_git, run_git
from test_merge import BASE, change

from pipeline.errors import InputRejected, UnsafePath, UsageError
from pipeline.hosts import gitsetup
from pipeline.mirror.attributes import block

pytestmark = pytest.mark.integration

MEMFOLD = ["/opt/memfold/bin/memfold"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    ok_git(tmp_path, "init", "-q", "-b", "main", str(root))
    ok_git(root, "config", "user.name", "alice")
    ok_git(root, "config", "user.email", "alice@example.com")
    return root


def config(root: Path, key: str) -> str | None:
    done = run_git(root, "config", "--get", key)
    return done.stdout.rstrip("\n") if done.returncode == 0 else None


def state(root: Path) -> dict[str, bytes]:
    """The repository's config, its hooks and its .gitattributes, as bytes."""
    git_dir = Path(ok_git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    found = {"config": (git_dir / "config").read_bytes()}
    found.update({f"hooks/{p.name}": p.read_bytes() for p in sorted((git_dir / "hooks").glob("*"))})
    attributes = root / ".gitattributes"
    if attributes.exists():
        found[".gitattributes"] = attributes.read_bytes()
    return found


def test_install_registers_both_drivers_the_block_and_with_sync_hook_the_hooks(repo: Path) -> None:
    actions = gitsetup.install(repo, MEMFOLD, [*MEMFOLD, "--home", "/h"])
    assert config(repo, "merge.memfold-memory.driver") == (
        "/opt/memfold/bin/memfold merge-file memory %O %A %B %P --marker-size %L --label-base %S "
        "--label-ours %X --label-theirs %Y")
    assert config(repo, "merge.memfold-head.driver").startswith("/opt/memfold/bin/memfold merge-file head %O")
    assert config(repo, "merge.memfold-memory.name") and config(repo, "merge.memfold-head.name")
    assert (repo / ".gitattributes").read_text() == block()
    for name in ("post-merge", "post-checkout"):
        hook = repo / ".git" / "hooks" / name
        assert hook.read_bytes().splitlines()[-2:] == [
            b"/opt/memfold/bin/memfold --home /h sync --quiet </dev/null || true", b"exit 0"]
        assert os.access(hook, os.X_OK)
    assert [a["action"] for a in actions].count("written") == 2


def test_install_again_changes_nothing_and_a_moved_memfold_is_brought_up_to_date(repo: Path) -> None:
    gitsetup.install(repo, MEMFOLD, MEMFOLD)
    before = state(repo)
    actions = gitsetup.install(repo, MEMFOLD, MEMFOLD)
    assert state(repo) == before
    assert all(a["action"].startswith("unchanged") for a in actions), actions
    moved = ["/usr/local/bin/memfold"]
    actions = gitsetup.install(repo, moved, moved)
    assert config(repo, "merge.memfold-head.driver").startswith("/usr/local/bin/memfold merge-file head ")
    assert b"/usr/local/bin/memfold sync --quiet" in (repo / ".git" / "hooks" / "post-merge").read_bytes()
    assert [a["action"] for a in actions if "hooks" in a["path"]] == ["updated", "updated"]


def test_uninstall_restores_the_config_and_hooks_byte_for_byte(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.png binary\n")
    before = state(repo)
    gitsetup.install(repo, MEMFOLD, MEMFOLD)
    gitsetup.uninstall(repo, remove_attributes=False)
    after = state(repo)
    assert after.pop(".gitattributes") == b"*.png binary\n" + block().encode()
    before.pop(".gitattributes")
    assert after == before
    gitsetup.uninstall(repo, remove_attributes=True)
    assert (repo / ".gitattributes").read_text() == "*.png binary\n"


def test_a_driver_or_hook_changed_since_install_is_kept_by_uninstall(repo: Path) -> None:
    gitsetup.install(repo, MEMFOLD, MEMFOLD)
    ok_git(repo, "config", "merge.memfold-head.driver", "my-own-driver %O %A %B")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_bytes(hook.read_bytes() + b"echo mine\n")
    actions = gitsetup.uninstall(repo, remove_attributes=False)
    assert config(repo, "merge.memfold-head.driver") == "my-own-driver %O %A %B"
    assert config(repo, "merge.memfold-memory.driver") is None
    assert hook.read_bytes().endswith(b"echo mine\n")
    assert not (repo / ".git" / "hooks" / "post-merge").exists()
    assert {a["action"] for a in actions} >= {"kept merge.memfold-head (its driver is not memfold's)",
                                              "kept (changed since memfold wrote it)"}


def test_a_hook_memfold_did_not_write_refuses_the_install_before_anything_is_written(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    (hooks / "post-checkout").write_text("#!/bin/sh\necho mine\n")
    before = state(repo)
    with pytest.raises(InputRejected) as caught:
        gitsetup.install(repo, MEMFOLD, MEMFOLD)
    assert caught.value.code == "hooks.git-hook-exists"
    assert caught.value.hint and "/opt/memfold/bin/memfold sync --quiet || true" in caught.value.hint
    assert state(repo) == before


def test_a_symlinked_hook_is_not_memfolds_and_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "shared-hook"
    target.write_text("#!/bin/sh\n")
    (repo / ".git" / "hooks" / "post-merge").symlink_to(target)
    with pytest.raises(InputRejected):
        gitsetup.install(repo, MEMFOLD, MEMFOLD)
    assert target.read_text() == "#!/bin/sh\n"


def test_a_symlinked_hooks_directory_is_refused(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "hooks-elsewhere"
    elsewhere.mkdir()
    hooks = repo / ".git" / "hooks"
    for child in hooks.iterdir():
        child.unlink()
    hooks.rmdir()
    hooks.symlink_to(elsewhere)
    with pytest.raises(UnsafePath):
        gitsetup.install(repo, MEMFOLD, MEMFOLD)
    assert list(elsewhere.iterdir()) == []


def test_core_hooks_path_refuses_the_sync_hook_with_the_line_to_add(repo: Path) -> None:
    ok_git(repo, "config", "core.hooksPath", ".githooks")
    before = state(repo)
    with pytest.raises(UsageError) as caught:
        gitsetup.install(repo, MEMFOLD, MEMFOLD)
    assert caught.value.code == "hooks.git-hooks-path"
    assert ".githooks" in caught.value.message
    assert state(repo) == before
    gitsetup.install(repo, MEMFOLD, None)  # the drivers alone need no hook
    assert config(repo, "merge.memfold-memory.name")


def test_a_symlinked_gitattributes_is_refused_before_the_config_changes(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "shared-attributes"
    outside.write_text("*.png binary\n")
    (repo / ".gitattributes").symlink_to(outside)
    before = (repo / ".git" / "config").read_bytes()
    with pytest.raises(UnsafePath) as caught:
        gitsetup.install(repo, MEMFOLD, None)
    assert caught.value.code == "path.symlink"
    assert outside.read_text() == "*.png binary\n"
    assert (repo / ".git" / "config").read_bytes() == before


def test_a_path_holding_a_percent_sign_is_refused(repo: Path) -> None:
    with pytest.raises(UsageError) as caught:
        gitsetup.install(repo, ["/opt/100%/memfold"], None)
    assert caught.value.code == "hooks.git-path"
    assert not (repo / ".gitattributes").exists()


def test_outside_a_repository_it_says_so(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        gitsetup.install(tmp_path, MEMFOLD, None)
    assert caught.value.code == "hooks.not-git"


def test_a_linked_worktree_registers_in_the_config_every_worktree_shares(repo: Path, tmp_path: Path) -> None:
    ok_git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    linked = tmp_path / "linked"
    ok_git(repo, "worktree", "add", "-q", str(linked), "-b", "side")
    gitsetup.install(linked, MEMFOLD, MEMFOLD)
    assert config(repo, "merge.memfold-memory.driver") is not None
    assert (repo / ".git" / "hooks" / "post-merge").is_file()
    assert (linked / ".gitattributes").is_file() and not (repo / ".gitattributes").exists()


def test_git_runs_the_driver_at_a_path_with_spaces_and_quotes(repo: Path, tmp_path: Path) -> None:
    odd = tmp_path / "it's a \"tools\" dir"
    odd.mkdir()
    wrapper = odd / "memfold"
    wrapper.write_text(f"#!/bin/sh\necho ran >> '{tmp_path}/ran'\nPYTHONPATH='{REPO}' exec '{sys.executable}' "
                       "-m pipeline \"$@\"\n")
    wrapper.chmod(0o755)
    gitsetup.install(repo, [str(wrapper)], None)
    memory = repo / ".memory" / "project_deploy-target.md"
    memory.parent.mkdir()
    memory.write_bytes(BASE)
    ok_git(repo, "add", "-A")
    ok_git(repo, "commit", "-q", "-m", "base")
    ok_git(repo, "checkout", "-q", "-b", "side")
    memory.write_bytes(change(BASE, ("Staging first.", "QA first."), ("2026-10-02T08:14:03Z", "2026-11-02T10:00:00Z")))
    ok_git(repo, "commit", "-q", "-am", "side")
    ok_git(repo, "checkout", "-q", "main")
    memory.write_bytes(change(BASE, ("deploys go", "all deploys go"), ("2026-10-02T08:14:03Z", "2026-11-01T10:00:00Z")))
    ok_git(repo, "commit", "-q", "-am", "main")
    done = run_git(repo, "merge", "--no-edit", "side")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ran").read_text() == "ran\n"
    assert memory.read_bytes() == change(BASE, ("deploys go", "all deploys go"), ("Staging first.", "QA first."),
                                         ("2026-10-02T08:14:03Z", "2026-11-02T10:00:00Z"))


def test_the_cli_installs_with_this_installations_memfold_and_reports_what_to_commit(env: Env) -> None:
    result = env.run("--json", "hooks", "install", "git")
    assert result.code == 0, result.err
    body = result.json()
    assert body["commit"] == [".gitattributes"]
    driver = config(env.project, "merge.memfold-memory.driver")
    assert driver is not None
    executable = driver.split(" merge-file ")[0]
    probe = subprocess.run(["sh", "-c", f"{executable} --version"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert probe.returncode == 0 and probe.stdout.startswith("memfold "), probe.stderr
    assert not (env.home).exists()  # git's setup needs no memfold home
