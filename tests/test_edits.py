"""Direct edits: parent-built plans through the one skeleton, with the consolidation's manifest builder."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, Env, tree_hashes

from pipeline import fsutil
from pipeline.context.manifest import scope_digest
from pipeline.edits import EDIT_PLAN_KIND

SCHEMA = json.loads((REPO / "schemas" / "manifest.schema.json").read_text(encoding="utf-8"))


def _newest_run(env: Env) -> Path:
    receipts = sorted((env.project_home / "receipts").iterdir())
    return env.project_home / "runs" / json.loads(receipts[-1].read_text())["runId"]


def _schema_errors(manifest: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(manifest)]


@pytest.mark.parametrize("command", [
    ("add", "project_a", "-d", "a fact", "--visibility", "safe"),
    ("update", "project_a", "-d", "a changed fact"),
    ("rename", "project_a", "project_b"),
    ("forget", "project_b"),
    ("undo", "<previous>"),
])
def test_every_direct_edit_writes_a_manifest_the_schema_accepts(env: Env, command: tuple[str, ...]) -> None:
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    if command[0] in ("forget", "undo"):
        assert env.run("rename", "project_a", "project_b").code == 0
    if command[0] == "undo":
        command = ("undo", _newest_run(env).name)
    result = env.run(*command)
    assert result.code == 0, result.err
    run = _newest_run(env)
    manifest = json.loads((run / "manifest.json").read_bytes())
    assert _schema_errors(manifest) == []
    assert manifest["kind"] == "memory-consolidation-manifest"
    assert (manifest["contextMode"], manifest["scope"], manifest["command"]) == ("direct", "direct", command[0])
    assert manifest["roots"]["runDir"] == str(run)
    assert manifest["scopeDigest"] == scope_digest(manifest["runId"], manifest["scopeKey"],
                                                   manifest["snapshotDigest"], "direct", manifest["selected"])
    assert fsutil.sha256_file(run / "snapshot.json") == manifest["artifactHash"] == manifest["snapshotDigest"]
    plan = json.loads((run / "plan.json").read_bytes())
    assert plan["kind"] == EDIT_PLAN_KIND
    assert {k: plan[k] for k in ("runId", "scopeKey", "scopeDigest", "artifactHash", "selected")} == \
        {k: manifest[k] for k in ("runId", "scopeKey", "scopeDigest", "artifactHash", "selected")}
    receipt = json.loads((run / "post-receipt.json").read_bytes())
    assert receipt["scopeDigest"] == manifest["scopeDigest"]
    assert receipt["worker"] == manifest["worker"] == {"name": "parent", "kind": "parent"}
    assert env.run("verify", run.name).code == 0


def test_a_consolidation_manifest_is_accepted_by_the_same_schema(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact").code == 0
    assert env.run("consolidate", "--no-context").code == 0
    manifest = json.loads((_newest_run(env) / "manifest.json").read_bytes())
    assert "command" not in manifest and manifest["contextMode"] == "disabled"
    assert _schema_errors(manifest) == []


def test_the_schema_still_refuses_a_manifest_of_another_kind(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact").code == 0
    manifest = json.loads((_newest_run(env) / "manifest.json").read_bytes())
    assert _schema_errors({**manifest, "kind": "memfold-run-manifest"}) != []
    assert _schema_errors({**manifest, "contextMode": "guess"}) != []


def test_a_full_disk_during_an_edit_is_apply_io_and_changes_nothing(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    assert env.run("add", "project_a", "-d", "a fact", "--visibility", "safe").code == 0
    before = (tree_hashes(env.harness), tree_hashes(env.mirror))
    receipts = sorted((env.project_home / "receipts").iterdir())

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil.ops, "write", full)
    result = env.run("--json", "add", "project_b", "-d", "another fact", "-b", "some body")
    assert result.code == 6
    assert json.loads(result.out)["code"] == "apply.io"
    monkeypatch.undo()
    assert (tree_hashes(env.harness), tree_hashes(env.mirror)) == before
    assert sorted((env.project_home / "receipts").iterdir()) == receipts
    assert env.run("audit").code == 0


def test_an_edit_that_changes_nothing_writes_no_run(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "a fact").code == 0
    runs = sorted((env.project_home / "runs").iterdir())
    result = env.run("--json", "rename", "project_a", "project_a")
    assert result.code == 0
    assert json.loads(result.out)["runId"] is None
    assert sorted((env.project_home / "runs").iterdir()) == runs
