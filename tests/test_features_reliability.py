"""Step definitions for features/reliability.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_torture import CONSOLIDATE, fork_cli, roots_state, seed_store

scenarios("reliability.feature")


@given("a store with duplicate memories")
def duplicates(env: Env, ctx: dict[str, Any]) -> None:
    seed_store(env, topics=4, copies=1)
    ctx["before"] = env.snapshot()


@given(parsers.parse('a FIFO named "{name}" in the private store'))
def fifo(env: Env, name: str) -> None:
    os.mkfifo(env.harness / name)


@when("a consolidation is killed at a random filesystem step")
def killed_consolidation(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    from test_torture import restore, save

    saved = tmp_path / "saved"
    save(env, saved)
    ctx["pre"] = roots_state(env)
    report = tmp_path / "ops"
    assert fork_cli(env.args(*CONSOLIDATE), report=report) == 0
    ctx["post"] = roots_state(env)
    restore(env, saved)
    nth = random.Random().randint(1, int(report.read_text()))
    assert fork_cli(env.args(*CONSOLIDATE), kill_at=nth) == "killed"


@when(parsers.parse('an update of "{name}" loses power after {landed:d} of its renames, the journal\'s rename lost'))
def power_loss(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str, landed: int) -> None:
    from test_power_loss import lose_power_after

    from pipeline.apply import journal

    ctx["mirror copy"] = (env.mirror / name).read_bytes()
    with monkeypatch.context() as patched:
        patched.setattr(journal, "roll_forward", lose_power_after(landed))
        ctx["result"] = env.run("update", name.removesuffix(".md"), "-b", "a new body")


@then(parsers.parse('the mirror\'s "{name}" is not what it was'))
def mirror_changed(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert (env.mirror / name).read_bytes() != ctx["mirror copy"]


@when("I make an attestation key and attest the last run with it")
def attest_last(env: Env, ctx: dict[str, Any], tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    assert env.run("attest", "--keygen", str(keys)).code == 0
    newest = sorted((env.project_home / "receipts").iterdir())[-1]
    run_id = json.loads(newest.read_text())["runId"]
    ctx["attestation"] = tmp_path / "run.intoto.json"
    ctx["pubkey"] = keys / "memfold-attest.pub"
    result = env.run("attest", run_id, "--key", str(keys / "memfold-attest.key"), "--out", str(ctx["attestation"]))
    assert result.code == 0, result.err


@when("I verify the attestation")
def verify_attestation(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = env.run("verify", "--attestation", str(ctx["attestation"]), "--pubkey", str(ctx["pubkey"]),
                            "--json")


@then("both roots hold either the state before or the state after the consolidation")
def pre_or_post(env: Env, ctx: dict[str, Any]) -> None:
    assert roots_state(env) in (ctx["pre"], ctx["post"])
