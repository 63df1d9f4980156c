"""Attestations: in-toto Statement v1 in a DSSE envelope, Ed25519-signed, checked by memfold and by standard tools."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from conftest import Env

from pipeline.receipts.attest import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE, pae


def _run_id(env: Env) -> str:
    newest = sorted((env.project_home / "receipts").iterdir())[-1]
    return str(json.loads(newest.read_text())["runId"])


@pytest.fixture
def attested(env: Env, tmp_path: Path) -> dict[str, Any]:
    assert env.run("add", "project_a", "-d", "alpha fact", "--visibility", "safe", "-b", "a").code == 0
    assert env.run("add", "user_b", "-d", "beta fact", "-t", "user", "-b", "b").code == 0
    keys = tmp_path / "keys"
    assert env.run("attest", "--keygen", str(keys)).code == 0
    run_id = _run_id(env)
    out = tmp_path / "att.json"
    result = env.run("attest", run_id, "--key", str(keys / "memfold-attest.key"), "--out", str(out))
    assert result.code == 0, result.err
    return {"run": run_id, "out": out, "key": keys / "memfold-attest.key", "pub": keys / "memfold-attest.pub"}


def _statement(path: Path) -> tuple[dict[str, Any], bytes]:
    payload = base64.b64decode(json.loads(path.read_text())["payload"])
    return json.loads(payload), payload


def test_the_envelope_holds_an_in_toto_statement_over_the_files_the_run_wrote(env: Env, attested: dict[str, Any]) -> None:
    envelope = json.loads(attested["out"].read_text())
    assert envelope["payloadType"] == PAYLOAD_TYPE
    assert len(envelope["signatures"]) == 1
    statement, payload = _statement(attested["out"])
    assert statement["_type"] == STATEMENT_TYPE and statement["predicateType"] == PREDICATE_TYPE
    receipt_file = next(p for p in (env.project_home / "receipts").iterdir() if attested["run"] in p.name)
    assert statement["predicate"] == json.loads(receipt_file.read_text())
    # The run added the private user_b: its file and the private index changed, the mirror did not.
    names = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert set(names) == {"harness/user_b.md", "harness/MEMORY.md"}
    for name, digest in names.items():
        assert hashlib.sha256((env.harness / name.split("/", 1)[1]).read_bytes()).hexdigest() == digest
    # The payload is RFC 8785 canonical JSON, so an auditor can recompute it byte for byte.
    assert payload == rfc8785.dumps(statement)
    print(f"\nattestation: {len(names)} subjects, run {attested['run']}")


def test_memfold_verifies_a_signed_attestation(env: Env, attested: dict[str, Any]) -> None:
    result = env.run("verify", "--attestation", str(attested["out"]), "--pubkey", str(attested["pub"]), "--json")
    assert result.code == 0, result.out
    assert any("signature" in c for c in result.json()["checks"])


def test_a_changed_subject_file_fails_verification_with_exit_7(env: Env, attested: dict[str, Any]) -> None:
    with open(env.harness / "user_b.md", "a", encoding="utf-8") as fh:
        fh.write("edited by hand\n")
    result = env.run("verify", "--attestation", str(attested["out"]), "--pubkey", str(attested["pub"]), "--json")
    assert result.code == 7
    assert [e["code"] for e in result.json()["errors"]] == ["attest.subject-mismatch"]


def test_a_tampered_payload_or_another_key_fails_with_exit_7(env: Env, attested: dict[str, Any], tmp_path: Path) -> None:
    envelope = json.loads(attested["out"].read_text())
    statement, _ = _statement(attested["out"])
    statement["subject"][0]["digest"]["sha256"] = "0" * 64
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**envelope, "payload": base64.b64encode(rfc8785.dumps(statement)).decode()}))
    result = env.run("verify", "--attestation", str(forged), "--pubkey", str(attested["pub"]), "--json")
    assert result.code == 7 and result.json()["errors"][0]["code"] == "attest.signature"
    assert env.run("attest", "--keygen", str(tmp_path / "other")).code == 0
    result = env.run("verify", "--attestation", str(attested["out"]), "--pubkey",
                     str(tmp_path / "other" / "memfold-attest.pub"), "--json")
    assert result.code == 7 and result.json()["errors"][0]["code"] == "attest.signature"


def test_an_unsigned_attestation_still_binds_the_statement_to_the_log(env: Env, tmp_path: Path) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "a").code == 0
    out = tmp_path / "plain.json"
    assert env.run("attest", _run_id(env), "--out", str(out)).code == 0
    assert json.loads(out.read_text())["signatures"] == []
    assert env.run("verify", "--attestation", str(out)).code == 0
    assert env.run("attest", "20261130T120000Z-00000000").code == 2
    assert env.run("attest", "--keygen", str(tmp_path / "k")).code == 0
    assert env.run("attest", "--keygen", str(tmp_path / "k")).code == 2  # never overwrites a key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_an_auditor_verifies_with_openssl_and_sha256sum_alone(env: Env, attested: dict[str, Any], tmp_path: Path) -> None:
    """The "Auditing without memfold" recipe of docs/receipts.md, step by step, with no memfold code."""
    envelope = json.loads(attested["out"].read_text())
    payload = base64.b64decode(envelope["payload"])
    signed = tmp_path / "pae.bin"
    signed.write_bytes(b"DSSEv1 %d %s %d %s" % (len(PAYLOAD_TYPE), PAYLOAD_TYPE.encode(), len(payload), payload))
    assert signed.read_bytes() == pae(PAYLOAD_TYPE, payload)
    sig = tmp_path / "sig.bin"
    sig.write_bytes(base64.b64decode(envelope["signatures"][0]["sig"]))
    proc = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(attested["pub"]), "-rawin",
                           "-in", str(signed), "-sigfile", str(sig)], capture_output=True, text=True)
    assert proc.returncode == 0 and "Signature Verified Successfully" in proc.stdout, proc.stderr
    statement = json.loads(payload)
    for subject in statement["subject"]:
        root, name = subject["name"].split("/", 1)
        folder = env.harness if root == "harness" else env.mirror
        line = subprocess.run(["sha256sum", str(folder / name)], capture_output=True, text=True, check=True).stdout
        assert line.split()[0] == subject["digest"]["sha256"]
    receipts = sorted((env.project_home / "receipts").iterdir())
    digests = [hashlib.sha256(rfc8785.dumps(json.loads(p.read_text()))).hexdigest() for p in receipts]
    chain = [json.loads(p.read_text())["previous"] for p in receipts]
    assert chain == [None, *digests[:-1]]
