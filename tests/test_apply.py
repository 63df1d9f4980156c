"""The journal: failures before and after the commit point, recovery, and SIGKILL at every step."""

from __future__ import annotations

import errno
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import REPO, Env, tree_hashes

from pipeline import fsutil


def _seed(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    assert env.run("add", "user_b", "-d", "beta fact", "-t", "user", "-b", "b").code == 0


class Fault:
    """Fail the Nth call of one fsutil op with an OSError."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, op: str, nth: int, err: int = errno.EIO) -> None:
        self.calls = 0
        original = getattr(fsutil.ops, op)

        def failing(*args: object, **kwargs: object) -> object:
            self.calls += 1
            if self.calls == nth:
                raise OSError(err, os.strerror(err))
            return original(*args, **kwargs)

        monkeypatch.setattr(fsutil.ops, op, failing)


def _temps(env: Env) -> list[str]:
    return [p.name for root in (env.harness, env.mirror, env.project_home / "receipts")
            for p in root.iterdir() if p.name.startswith(".memfold-")]


def _save(env: Env, saved: Path) -> None:
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(env.home, saved / "home", symlinks=True)
    shutil.copytree(env.project, saved / "project", symlinks=True)


def _restore(env: Env, saved: Path) -> None:
    shutil.rmtree(env.home)
    shutil.rmtree(env.project)
    shutil.copytree(saved / "home", env.home, symlinks=True)
    shutil.copytree(saved / "project", env.project, symlinks=True)


UPDATE = ("update", "user_b", "--visibility", "safe", "-b", "b2")
FORGET = ("forget", "project_a")


@pytest.mark.parametrize(("op", "command"), [("write", UPDATE), ("fsync", UPDATE), ("rename", UPDATE),
                                             ("unlink", FORGET)])
def test_a_failing_syscall_anywhere_rolls_back_with_exit_6(
    env: Env, op: str, command: tuple[str, ...], tmp_path: Path
) -> None:
    _seed(env)
    saved = tmp_path / "saved"
    _save(env, saved)
    before = env.snapshot()
    receipts_before = sorted(p.name for p in (env.project_home / "receipts").iterdir())
    assert env.run(*command).code == 0
    after = env.snapshot()
    outcomes: Counter[str] = Counter()
    for nth in range(1, 200):
        _restore(env, saved)
        with pytest.MonkeyPatch.context() as mp:
            fault = Fault(mp, op, nth, errno.ENOSPC)
            result = env.run(*command)
        if fault.calls < nth:
            break
        assert env.run("recover").code == 0
        if result.code == 0:
            outcomes["failed after the commit point: committed"] += 1
            assert env.snapshot() == after
        else:
            outcomes["rolled back, exit 6"] += 1
            assert result.code == 6, result.err
            assert "No space left" in result.err
            assert env.snapshot() == before, f"{op} #{nth}"
            assert sorted(p.name for p in (env.project_home / "receipts").iterdir()) == receipts_before
        assert _temps(env) == []
        assert env.run("audit").code == 0
    print(f"\nfault sweep {op}: {dict(outcomes)}")
    assert outcomes["rolled back, exit 6"] >= 1


def test_recovery_rolls_a_committed_journal_forward(env: Env) -> None:
    _seed(env)
    from pipeline.apply import journal as apply

    def crash(*_args: object) -> None:
        raise KeyboardInterrupt  # stands in for a crash right after the commit point

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(apply, "roll_forward", crash)
        assert env.run("forget", "project_a").code == 130
    assert (env.project_home / "pending").exists()
    assert (env.mirror / "project_a.md").exists()
    status = env.run("status", "--json").json()
    assert status["pendingRecovery"]
    result = env.run("list", "--json")
    assert env.run("recover", "--json").json()["recovered"].startswith("rolled-forward")
    assert not (env.mirror / "project_a.md").exists() and not (env.harness / "project_a.md").exists()
    assert result.code == 0
    assert env.run("audit").code == 0
    assert env.run("verify").code == 0


def test_a_corrupt_journal_needs_recovery_exit_8(env: Env) -> None:
    _seed(env)
    run = env.project_home / "runs" / json.loads(sorted((env.project_home / "receipts").iterdir())[-1].read_text())["runId"]
    (env.project_home / "pending").write_text(run.name + "\n")
    journal = run / "journal.json"
    journal.write_text(journal.read_text().replace('"done"', '"committed"'))
    result = env.run("add", "project_c", "-d", "gamma")
    assert result.code == 8 and "checksum" in result.err


CHILD = r"""
import os, signal, sys
sys.path.insert(0, {repo!r})
from pipeline import fsutil
target = int(sys.argv[1])
count = [0]
def wrap(fn):
    def inner(*args, **kwargs):
        count[0] += 1
        if count[0] == target:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return inner
for name in ("write", "fsync", "link", "rename", "unlink"):
    setattr(fsutil.ops, name, wrap(getattr(fsutil.ops, name)))
from pipeline.cli import main
code = main(sys.argv[2:])
sys.stderr.write("OPS %d\n" % count[0])
raise SystemExit(code)
"""

COMMANDS = [
    ["update", "user_b", "--visibility", "safe", "-b", "b2"],
    ["add", "project_c", "-d", "gamma fact", "--visibility", "safe", "-b", "c"],
    ["forget", "project_a"],
]


def _child(env: Env, script: Path, nth: int, command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), str(nth), *env.args(*command)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.integration
def test_sigkill_across_every_stage_leaves_pre_or_post_state(env: Env, tmp_path: Path) -> None:
    """CI size: every step of update, every second step of add and forget (100+ kills)."""
    _sigkill_sweep(env, tmp_path, strides=(1, 2, 2), minimum=100)


@pytest.mark.stress
@pytest.mark.integration
def test_sigkill_at_every_filesystem_step_leaves_pre_or_post_state(env: Env, tmp_path: Path) -> None:
    _sigkill_sweep(env, tmp_path, strides=(1, 1, 1), minimum=150)


def _sigkill_sweep(env: Env, tmp_path: Path, *, strides: tuple[int, ...], minimum: int, child: str = CHILD,
                   commands: list[list[str]] = COMMANDS) -> None:
    """Kill ``child`` (a script like ``CHILD``) at each ``stride``-th filesystem step of each command."""
    env.project = tmp_path / "plain-project"
    env.project.mkdir()
    _seed(env)
    script = tmp_path / "child.py"
    script.write_text(child.format(repo=str(REPO)))
    saved = tmp_path / "saved"
    kills, outcomes = 0, Counter[str]()
    for command, stride in zip(commands, strides, strict=False):
        _save(env, saved)
        pre = env.snapshot()
        full = _child(env, script, 10**9, command)
        assert full.returncode == 0, full.stderr
        total = int(full.stderr.rsplit("OPS ", 1)[1].split()[0])
        post = env.snapshot()
        for nth in range(1, total + 1, stride):
            _restore(env, saved)
            proc = _child(env, script, nth, command)
            assert proc.returncode == -signal.SIGKILL, (nth, proc.stderr)
            kills += 1
            assert env.run("recover").code == 0
            state = env.snapshot()
            assert state in (pre, post), f"{command[0]} killed at op {nth}: mixed state"
            outcomes["post" if state == post else "pre"] += 1
            assert _temps(env) == []
            audit = env.run("audit", "--json")
            assert audit.code == 0 and audit.json()["drift"] == [], audit.out
        _restore(env, saved)
        assert _child(env, script, 10**9, command).returncode == 0
    print(f"\ncrash sweep: {kills} kills, {outcomes['pre']} pre-state, {outcomes['post']} post-state")
    assert kills >= minimum
    assert outcomes["pre"] > 0 and outcomes["post"] > 0


def test_receipt_log_is_a_chain_each_source_equal_to_the_previous_final(env: Env) -> None:
    _seed(env)
    env.run("forget", "project_a")
    logs = sorted((env.project_home / "receipts").iterdir())
    receipts = [json.loads(p.read_text()) for p in logs]
    for older, newer in itertools.pairwise(receipts):
        assert newer["sourceHashes"] == older["finalHashes"]
    assert receipts[-1]["finalHashes"]["harness"] == tree_hashes(env.harness)
