"""``memfold attest``: a run's receipt as a signed in-toto attestation (DSSE), and key generation."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..errors import UsageError
from ._app import JsonOpt, app, emit, services, want_json


@app.command()
def attest(
    run_id: str = typer.Argument(None, help="the run to attest (its receipt must be in the log)"),
    key: Path = typer.Option(None, "--key", help="Ed25519 private key (PEM) to sign with"),
    out: Path = typer.Option(None, "--out", help="write the envelope here instead of stdout"),
    keygen: Path = typer.Option(None, "--keygen", help="write a new Ed25519 key pair into this directory"),
    json_out: bool = JsonOpt,
) -> int:
    """Emit RUN_ID's post receipt as an in-toto Statement v1 in a DSSE envelope (signed with --key)."""
    from ..receipts import attest as core

    if keygen is not None:
        if run_id is not None or key is not None:
            raise UsageError("--keygen takes no run id and no --key", code="usage.attest")
        private, public = core.keygen(keygen)
        emit({"ok": True, "privateKey": str(private), "publicKey": str(public)},
             f"private key: {private} (keep it secret)\npublic key:  {public}", as_json=want_json(json_out))
        return 0
    if run_id is None:
        raise UsageError("give the run id to attest (see `memfold status` or `memfold audit`)", code="usage.attest")
    svc = services(privacy=False)
    envelope = core.envelope(core.logged_receipt(svc.layout, run_id), key)
    data = core.write_out(out, envelope)
    if out is None:
        sys.stdout.write(data.decode("utf-8"))
    else:
        emit({"ok": True, "attestation": str(out), "signed": bool(envelope["signatures"]), "runId": run_id},
             f"attestation for run {run_id} written to {out}" + ("" if envelope["signatures"] else " (unsigned)"),
             as_json=want_json(json_out))
    return 0
