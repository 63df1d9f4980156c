"""A run's post receipt as an in-toto Statement in a DSSE envelope, optionally Ed25519-signed, and its check."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from ..errors import Issue, UsageError
from ..fsutil import atomic_write, read_bounded, sha256_bytes, write_new
from ..paths import Layout
from ..store.jsontext import canonical_json, loads_bounded, read_json
from .log import log_entries
from .receipt import load_receipt, normalize_maps, receipt_digest

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://memfold.dev/attestation/receipt/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
KEY_FILE = "memfold-attest.key"
PUB_FILE = "memfold-attest.pub"
MAX_ENVELOPE = 64 << 20


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what is signed, so type and body cannot be swapped."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def subjects(receipt: dict[str, Any]) -> list[dict[str, Any]]:
    """Every file the run wrote (created or changed), named ``<root>/<file>``, with its sha256."""
    source, final = normalize_maps(receipt.get("sourceHashes")), normalize_maps(receipt.get("finalHashes"))
    out = []
    for root in ("harness", "public"):
        for name, digest in sorted(final[root].items()):
            if source[root].get(name) != digest:
                out.append({"name": f"{root}/{name}", "digest": {"sha256": digest}})
    return out


def logged_receipt(layout: Layout, run_id: str) -> dict[str, Any]:
    """The receipt of ``run_id`` from the append-only log (the run dir may have been pruned)."""
    entry = next((e for e in log_entries(layout.receipts) if e.run_id == run_id), None)
    if entry is None:
        raise UsageError(f"run {run_id} has no receipt in the log (it never committed, or is not this project's)",
                         code="usage.no-receipt", hint="`memfold audit` lists the receipts")
    return load_receipt(entry.path)


def statement(receipt: dict[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": subjects(receipt), "predicateType": PREDICATE_TYPE,
            "predicate": receipt}


def _private_key(path: Path) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(read_bounded(path, 1 << 16), password=None)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path} is not an unencrypted PEM private key ({exc.__class__.__name__})",
                         code="attest.key", hint="make one with `memfold attest --keygen DIR`") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{path} is not an Ed25519 key", code="attest.key",
                         hint="`openssl genpkey -algorithm ed25519 -out key.pem` makes one")
    return key


def _public_key(path: Path) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(read_bounded(path, 1 << 16))
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{path} is not a PEM public key ({exc.__class__.__name__})", code="attest.pubkey") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{path} is not an Ed25519 public key", code="attest.pubkey")
    return key


def key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return sha256_bytes(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw))


def envelope(receipt: dict[str, Any], key_path: Path | None) -> dict[str, Any]:
    """The DSSE envelope; the payload is the RFC 8785 canonical statement, so anyone can recompute it."""
    payload = canonical_json(statement(receipt))
    signatures = []
    if key_path is not None:
        key = _private_key(key_path)
        signature = key.sign(pae(PAYLOAD_TYPE, payload))
        signatures.append({"keyid": key_id(key.public_key()), "sig": base64.b64encode(signature).decode("ascii")})
    return {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode("ascii"),
            "signatures": signatures}


def keygen(directory: Path) -> tuple[Path, Path]:
    """A fresh Ed25519 key pair as PEM files (private 0600); existing files are never overwritten."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = Ed25519PrivateKey.generate()
    private, public = directory / KEY_FILE, directory / PUB_FILE
    for path in (private, public):
        if os.path.lexists(path):
            raise UsageError(f"{path} already exists; not overwritten", code="attest.key-exists")
    write_new(private, key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()), 0o600)
    write_new(public, key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo), 0o644)
    return private, public


def _decode(value: Any, what: str, issues: list[Issue]) -> bytes | None:
    if not isinstance(value, str):
        issues.append(Issue("attest.envelope", what, f"{what} is not a base64 string"))
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        issues.append(Issue("attest.envelope", what, f"{what} is not valid base64"))
        return None


def check(layout: Layout, envelope_path: Path, pubkey_path: Path | None) -> tuple[list[str], list[Issue]]:
    """Signature, statement, predicate (against the receipt log) and subjects (against the files now)."""
    checks: list[str] = []
    issues: list[Issue] = []
    try:
        env = read_json(envelope_path, MAX_ENVELOPE)
    except FileNotFoundError:
        raise UsageError(f"no attestation at {envelope_path}", code="usage.no-attestation") from None
    except ValueError:
        return checks, [Issue("attest.envelope", "$", "the attestation is not JSON")]
    if not isinstance(env, dict) or env.get("payloadType") != PAYLOAD_TYPE:
        return checks, [Issue("attest.envelope", "$.payloadType", f"payloadType is not {PAYLOAD_TYPE}")]
    payload = _decode(env.get("payload"), "$.payload", issues)
    if payload is None:
        return checks, issues
    if pubkey_path is not None:
        from cryptography.exceptions import InvalidSignature

        key = _public_key(pubkey_path)
        signed = False
        raw_sigs = env.get("signatures")
        sigs: list[Any] = raw_sigs if isinstance(raw_sigs, list) else []
        for i, sig in enumerate(sigs):
            raw = _decode(sig.get("sig") if isinstance(sig, dict) else None, f"$.signatures[{i}].sig", issues)
            try:
                if raw is not None:
                    key.verify(raw, pae(PAYLOAD_TYPE, payload))
                    signed = True
            except InvalidSignature:
                continue
        if signed:
            checks.append(f"signature by key {key_id(key)[:16]}")
        else:
            issues.append(Issue("attest.signature", "$.signatures",
                                "no signature verifies with the given public key over the DSSE PAE of the payload"))
            return checks, issues
    try:
        stmt = loads_bounded(payload)
    except ValueError:
        return checks, [*issues, Issue("attest.statement", "$.payload", "the payload is not JSON")]
    if not isinstance(stmt, dict) or stmt.get("_type") != STATEMENT_TYPE or stmt.get("predicateType") != PREDICATE_TYPE:
        return checks, [
            *issues,
            Issue(
                "attest.statement", "$.payload", f"not an in-toto {STATEMENT_TYPE} with predicateType {PREDICATE_TYPE}"
            ),
        ]
    receipt = stmt.get("predicate")
    run_id = receipt.get("runId") if isinstance(receipt, dict) else None
    if not isinstance(receipt, dict) or not isinstance(run_id, str):
        return checks, [*issues, Issue("attest.statement", "$.predicate.runId", "the predicate names no run")]
    logged = logged_receipt(layout, run_id)
    if receipt_digest(logged) != receipt_digest(receipt):
        issues.append(
            Issue("attest.predicate", "$.predicate", f"the predicate differs from the logged receipt of {run_id}")
        )
    else:
        checks.append(f"predicate equals the logged receipt of {run_id}")
    if stmt.get("subject") != subjects(logged):
        issues.append(
            Issue("attest.subjects", "$.subject", "the subjects are not the files the receipt says were written")
        )
    for subject in stmt.get("subject") or []:
        name = str(subject.get("name", "")) if isinstance(subject, dict) else ""
        root, _, file = name.partition("/")
        want = subject.get("digest", {}).get("sha256") if isinstance(subject, dict) else None
        folder = layout.mirror if root == "public" else layout.harness if root == "harness" else None
        if folder is None or not file or "/" in file or file in (".", ".."):
            issues.append(Issue("attest.subjects", "$.subject", f"{name!r} is not a file of a memfold root"))
            continue
        try:
            have = sha256_bytes(read_bounded(folder / file))
        except FileNotFoundError:
            have = None
        if have != want:
            state = "missing" if have is None else "changed"
            issues.append(Issue("attest.subject-mismatch", f"$.subject[{name}]", f"{name} is {state} on disk"))
    if not any(i.code == "attest.subject-mismatch" for i in issues):
        checks.append(f"{len(stmt.get('subject') or [])} subjects match the files on disk")
    return checks, issues


def write_out(path: Path | None, env: dict[str, Any]) -> bytes:
    data = (json.dumps(env, indent=2, sort_keys=True) + "\n").encode("utf-8")
    if path is not None:
        atomic_write(Path(path), data, 0o644)
    return data
