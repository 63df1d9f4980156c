"""verify and audit against tampering: source hashes bound to the manifest, the chain head in the mirror."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from conftest import REPO, Env


def _receipts(env: Env) -> list[Path]:
    return sorted((env.project_home / "receipts").iterdir())


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_bytes())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def _rewrite_everywhere(env: Env, log_path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """What an attacker edits so the copies agree: the log copy, the run's post and pre receipts."""
    run_dir = env.project_home / "runs" / json.loads(log_path.read_bytes())["runId"]
    for path in (log_path, run_dir / "post-receipt.json", run_dir / "pre-receipt.json"):
        _rewrite(path, change)


def _digest(path: Path) -> str:
    """The RFC 8785 digest, computed without memfold's own helper."""
    return hashlib.sha256(rfc8785.dumps(json.loads(path.read_bytes()))).hexdigest()


def _heads(env: Env) -> list[Path]:
    return sorted(env.heads.glob("*.json"))


def _git(env: Env, *args: str) -> None:
    subprocess.run(["git", "-C", str(env.project), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def _commit(env: Env) -> None:
    _git(env, "add", "-A", ".memory", ".memfold")
    _git(env, "commit", "-q", "--allow-empty", "-m", "memory")


def _codes(result: Any) -> list[str]:
    return [e["code"] for e in result.json()["errors"]]


def _two_memories(env: Env) -> None:
    assert env.run("init").code == 0
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    assert env.run("add", "user_b", "-d", "beta fact", "-b", "b").code == 0


# --- 16: source hashes ---------------------------------------------------------------------------


def _forge_source(receipt: dict[str, Any]) -> None:
    receipt["sourceHashes"]["harness"]["project_a.md"] = "3" * 64


@pytest.mark.parametrize("command", ["verify", "audit"])
def test_source_hashes_changed_in_pre_post_and_log_copy_fail_verify_and_audit(env: Env, command: str) -> None:
    _two_memories(env)
    _rewrite_everywhere(env, _receipts(env)[-1], _forge_source)
    result = env.run(command, "--json")
    assert result.code == 7
    assert "receipt.source-manifest" in _codes(result)


def test_forging_the_manifest_too_still_fails_on_the_snapshot_and_the_chain_head(env: Env) -> None:
    _two_memories(env)
    newest = _receipts(env)[-1]
    _rewrite_everywhere(env, newest, _forge_source)
    _rewrite(env.project_home / "runs" / json.loads(newest.read_bytes())["runId"] / "manifest.json", _forge_source)
    result = env.run("verify", "--json")
    assert result.code == 7
    assert set(_codes(result)) == {"receipt.source-manifest", "witness.head-mismatch"}
    assert [e["message"] for e in result.json()["errors"] if e["code"] == "receipt.source-manifest"] == [
        "sourceHashes differ from the source state in the run's snapshot (artifactHash)"]


def test_verify_of_an_older_receipt_sees_its_successor_no_longer_links_to_it(env: Env) -> None:
    _two_memories(env)
    first = _receipts(env)[0]
    run_id = json.loads(first.read_bytes())["runId"]
    _rewrite_everywhere(env, first, lambda r: r["sourceHashes"]["public"].update({"MEMORY.md": "4" * 64}))
    result = env.run("verify", run_id, "--json")
    assert result.code == 7
    assert {"receipt.source-manifest", "receipt.next-link"} <= set(_codes(result))


def test_a_hand_edit_between_two_transactions_is_named_by_both_receipts(env: Env) -> None:
    _two_memories(env)
    with (env.harness / "user_b.md").open("a") as fh:
        fh.write("edited by hand\n")
    assert env.run("add", "project_c", "-d", "gamma fact", "-b", "c").code == 0
    second, third = (p.name for p in _receipts(env)[1:])
    audit = env.run("audit", "--json")
    assert audit.code == 0
    assert audit.json()["drift"] == [{"between": [second, third], "file": "harness/user_b.md changed"}]
    assert env.run("audit", "--strict").code == 7
    verify = env.run("verify", "--json")
    assert verify.code == 0
    assert verify.json()["drift"] == [{"between": [second, third], "file": "harness/user_b.md changed"}]


# --- 17: the chain head beside the mirror ---------------------------------------------------------


def test_every_transaction_writes_the_chain_head_naming_the_newest_receipt(env: Env) -> None:
    _two_memories(env)
    first, newest = _receipts(env)[0], _receipts(env)[-1]
    (head,) = _heads(env)
    chain = _digest(first)
    assert head.name == f"{chain[:16]}.json"
    assert head.read_bytes().count(b"\n") == 1  # one line: a merge of two versions keeps whole heads
    data = json.loads(head.read_bytes())
    assert data == {"kind": "memfold-chain-head", "schemaVersion": 1, "chain": chain, "seq": 2,
                    "runId": json.loads(newest.read_bytes())["runId"], "receipt": _digest(newest)}
    assert head.stat().st_mode & 0o777 == 0o644
    # The head names the receipt, so the receipt cannot hash the head: it is in neither hash map.
    assert head.name not in json.loads(newest.read_bytes())["finalHashes"]["public"]


def test_tampering_a_memory_and_rewriting_the_newest_final_hashes_fails_audit(env: Env) -> None:
    _two_memories(env)
    target = env.harness / "user_b.md"
    target.write_bytes(target.read_bytes() + b"planted\n")
    planted = hashlib.sha256(target.read_bytes()).hexdigest()
    _rewrite_everywhere(env, _receipts(env)[-1], lambda r: r["finalHashes"]["harness"].update({"user_b.md": planted}))
    result = env.run("audit", "--strict", "--json")
    assert result.code == 7
    assert "witness.head-mismatch" in _codes(result)
    assert env.run("verify").code == 7


def test_rewriting_the_mirror_head_too_is_caught_by_the_head_committed_in_git(env: Env) -> None:
    _two_memories(env)
    _commit(env)
    target = env.harness / "user_b.md"
    target.write_bytes(target.read_bytes() + b"planted\n")
    planted = hashlib.sha256(target.read_bytes()).hexdigest()
    newest = _receipts(env)[-1]
    _rewrite_everywhere(env, newest, lambda r: r["finalHashes"]["harness"].update({"user_b.md": planted}))
    (head,) = _heads(env)
    _rewrite(head, lambda h: h.update(receipt=_digest(newest)))
    result = env.run("audit", "--strict", "--json")
    assert result.code == 7
    assert _codes(result) == ["witness.committed-mismatch"]


def _state(env: Env) -> dict[str, dict[str, bytes]]:
    return {str(root): {p.name: p.read_bytes() for p in root.iterdir()}
            for root in (env.harness, env.mirror, env.heads)}


def _restore(state: dict[str, dict[str, bytes]]) -> None:
    for root, files in state.items():
        folder = Path(root)
        for path in folder.iterdir():
            if path.name not in files and path.is_file():
                path.unlink()
        for name, data in files.items():
            (folder / name).write_bytes(data)


def _drop_newest(env: Env) -> None:
    newest = _receipts(env)[-1]
    shutil.rmtree(env.project_home / "runs" / json.loads(newest.read_bytes())["runId"])
    newest.unlink()


def test_dropping_the_newest_receipt_and_reverting_its_files_fails_against_the_committed_head(env: Env) -> None:
    _two_memories(env)
    before = _state(env)
    assert env.run("add", "project_c", "-d", "gamma fact", "--visibility", "safe", "-b", "c").code == 0
    _commit(env)
    _drop_newest(env)
    _restore(before)
    result = env.run("audit", "--strict", "--json")
    assert result.code == 7
    assert _codes(result) == ["witness.committed-ahead"]


def test_dropping_the_newest_receipt_is_caught_by_the_head_in_the_working_tree(env: Env) -> None:
    _two_memories(env)
    before = _state(env)
    assert env.run("add", "project_c", "-d", "gamma fact", "-b", "c").code == 0
    (head,) = _heads(env)
    written = head.read_bytes()
    _drop_newest(env)
    _restore(before)
    head.write_bytes(written)  # the memories reverted, the head left as the dropped transaction wrote it
    result = env.run("audit", "--strict", "--json")
    assert result.code == 7
    assert "witness.head-ahead" in _codes(result)


def test_the_honest_path_audits_strict_and_every_committed_head_is_a_receipt_of_the_chain(env: Env) -> None:
    _two_memories(env)
    _commit(env)
    assert env.run("add", "project_deploy", "-d", "deploys go through ops/deploy.sh", "--visibility", "safe",
                   "-b", "Run ops/deploy.sh from main.").code == 0
    assert env.run("add", "project_deploy-steps", "-d", "deploys go through the ops/deploy.sh script",
                   "--visibility", "safe", "-b", "Run ops/deploy.sh from main; tag first.").code == 0
    assert env.run("consolidate").code == 0
    _commit(env)
    consolidation = json.loads(_receipts(env)[-1].read_bytes())
    assert consolidation["command"] == "consolidate"
    assert env.run("undo", consolidation["runId"]).code == 0
    assert json.loads(_receipts(env)[-1].read_bytes())["command"] == "undo"
    assert env.run("recover").code == 0
    _commit(env)
    result = env.run("audit", "--strict", "--json")
    assert result.code == 0, result.out
    witness = result.json()["witness"]
    newest = _receipts(env)[-1]
    assert witness["head"] == {"chain": _digest(_receipts(env)[0]), "seq": len(_receipts(env)),
                               "runId": json.loads(newest.read_bytes())["runId"], "receipt": _digest(newest)}
    assert witness["committed"] == 3
    assert env.run("verify").code == 0


def test_the_global_store_has_no_witness_and_audit_says_so(env: Env) -> None:
    assert env.run("add", "user_tabs", "-d", "prefers tabs", "--global").code == 0
    result = env.run("audit", "--global", "--strict", "--json")
    assert result.code == 0
    assert result.json()["witness"] == {
        "available": False, "reason": "the global store has no mirror; `memfold attest` signatures are its witness"}
    assert "no chain witness" in env.run("audit", "--global").out


@pytest.mark.parametrize("module", ["pipeline.receipts.verify", "pipeline.validation.plan", "pipeline.state.model",
                                    "pipeline.apply.commit"])
def test_the_audit_and_write_cores_import_no_cli_or_schema_library(module: str) -> None:
    """In a fresh interpreter: what verify, audit, validate and every write run before any work starts."""
    heavy = ("typer", "click", "pydantic", "yaml", "jsonschema", "rfc8785", "portalocker", "rich")
    code = f"import sys, {module}; print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [], proc.stdout
