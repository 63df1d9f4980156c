"""Step definitions for features/skeleton.feature: the manifest of every run, I/O failures as apply.io."""

from __future__ import annotations

import errno
import json
from typing import Any

import jsonschema
import pytest
from conftest import REPO, Env
from pytest_bdd import given, parsers, scenarios, then

from pipeline import fsutil

scenarios("skeleton.feature")


def _newest_manifest(env: Env) -> dict[str, Any]:
    runs = sorted((env.project_home / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    return json.loads((runs[-1] / "manifest.json").read_bytes())  # type: ignore[no-any-return]


@given(parsers.parse('every write fails with "{message}"'))
def disk_full(monkeypatch: pytest.MonkeyPatch, message: str) -> None:
    def fail(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, message)

    monkeypatch.setattr(fsutil.ops, "write", fail)


@given("twelve memories about release steps")
def twelve(env: Env) -> None:
    for i in range(12):
        assert env.run("add", f"project_step-{i}", "-d", f"release step {i} and its checklist",
                       "-b", f"Step {i}: run checklist item {i} before tagging.").code == 0


@given(parsers.parse("the config bounds a plan to {size:d} bytes"))
def plan_bound(env: Env, size: int) -> None:
    (env.home / "config.yaml").write_text(f"limits:\n  plan_bytes: {size}\n", encoding="utf-8")


@then("the newest run's manifest is valid against schemas/manifest.schema.json")
def manifest_valid(env: Env) -> None:
    schema = json.loads((REPO / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(_newest_manifest(env))]
    assert errors == []


@then(parsers.parse('the newest run\'s manifest has context mode "{mode}"'))
def manifest_mode(env: Env, mode: str) -> None:
    assert _newest_manifest(env)["contextMode"] == mode


@then(parsers.parse('the JSON error code is "{code}"'))
def json_error_code(ctx: dict[str, Any], code: str) -> None:
    answer = json.loads(ctx["result"].out)
    assert answer["ok"] is False and answer["code"] == code
