"""Step definitions for features/realclis.feature: the real agent CLIs from npm against a fake model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from fake_model_server import FakeModelServer, drops_facts_reply, prose_reply, run_dir_of
from pytest_bdd import given, parsers, scenarios, then
from realclis import (
    RealClis,
    assert_plan_applied,
    configure,
    last_run,
    receipt_files,
    small_store,
)

scenarios("realclis.feature")
pytestmark = pytest.mark.integration


@given("a store of safe, private, expired and hand-copied memories")
def store(env: Env, ctx: dict[str, Any]) -> None:
    small_store(env)
    ctx["receipts"] = receipt_files(env)


@given(parsers.parse('the real "{cli}" CLI from npm, configured from its preset to call the fake model'))
def real_cli(env: Env, real_clis: RealClis, fake_model: FakeModelServer, monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path, cli: str) -> None:
    configure(env, real_clis, fake_model, monkeypatch, tmp_path, cli)


@given("the fake model answers in prose only")
def prose(fake_model: FakeModelServer) -> None:
    fake_model.reply = prose_reply


@given("the fake model answers a plan that deletes a memory without naming a successor")
def drops_facts(fake_model: FakeModelServer) -> None:
    fake_model.reply = drops_facts_reply


def _post_receipt(env: Env) -> dict[str, Any]:
    return json.loads((last_run(env) / "post-receipt.json").read_text())  # type: ignore[no-any-return]


@then(parsers.parse('the receipt says the plan came from the "{source}" stream'))
def plan_source(env: Env, source: str) -> None:
    assert _post_receipt(env)["worker"]["planSource"] == source


@then("the fake model was asked about this very run")
def asked(env: Env, fake_model: FakeModelServer) -> None:
    calls = fake_model.model_calls()
    assert calls and {run_dir_of(c.text) for c in calls} == {last_run(env)}


@then("both roots hold what the plan said")
def applied(env: Env) -> None:
    assert_plan_applied(env, json.loads((last_run(env) / "plan.json").read_bytes()))


@then("the receipt lists the sandbox in force with nothing missing")
def sandboxed(env: Env) -> None:
    sandbox = _post_receipt(env)["sandbox"]
    assert sandbox["enforced"] is True and sandbox["filesystem"] == "landlock" and sandbox["missing"] == []
    assert sandbox["seccomp"]["metadata"] == "denied" and sandbox["network"]["unix"] == "denied"


@then("no receipt was added")
def no_receipt(env: Env, ctx: dict[str, Any]) -> None:
    assert receipt_files(env) == ctx["receipts"]
    assert not (last_run(env) / "post-receipt.json").exists()
