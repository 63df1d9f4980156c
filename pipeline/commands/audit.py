"""Commands that check and repair: verify, audit, recover, undo, status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..errors import UsageError, VerifyFailed
from ..safetext import counted
from ._app import GlobalOpt, JsonOpt, app, emit, lock_timeout, services, use_global, want_json


def _report_text(report: Any, title: str) -> str:
    lines = [f"{title}: {'OK' if report.ok else 'FAILED'}"]
    lines += [f"  ok    {c}" for c in report.checks]
    lines += [f"  FAIL  [{e.code}] {e.path}: {e.message}" for e in report.errors]
    lines += [f"  WARN  [{w.code}] {w.path}: {w.message}" for w in report.warnings]
    for d in report.drift:
        lines.append(f"  drift {d['file']} (between {d['between'][0]} and {d['between'][1]})")
    if report.witness is not None and not report.witness.get("available"):
        lines.append(f"  note  no chain witness: {report.witness.get('reason')}")
    return "\n".join(lines)


@app.command()
def verify(
    target: str = typer.Argument(None, help="run id or receipt file (default: the newest run)"),
    attestation: Path = typer.Option(
        None, "--attestation", help="check a DSSE attestation from `memfold attest` instead"
    ),
    pubkey: Path = typer.Option(None, "--pubkey", help="Ed25519 public key (PEM) the attestation must verify with"),
    global_: bool = GlobalOpt,
    json_out: bool = JsonOpt,
) -> int:
    """Check a receipt against its plan bytes, manifest, chain link and (if newest) the files on disk."""
    use_global(global_)
    from ..receipts.receipt import log_entries
    from ..receipts.verify import Report, verify_receipt

    svc = services(privacy=False)
    if attestation is not None or pubkey is not None:
        from ..receipts.attest import check

        if attestation is None or target is not None:
            raise UsageError("--pubkey goes with --attestation F, which takes no run id", code="usage.attest")
        checks, issues = check(svc.layout, attestation, pubkey)
        report = Report(ok=not issues, checks=checks, errors=issues, receipts=1)
        if pubkey is None:
            from ..errors import Issue

            # Without a key the statement is checked against the log, but anyone could have signed it.
            report.warnings.append(Issue("attest.unsigned-check", "$.signatures",
                                         "the signature was NOT checked: pass --pubkey KEY.pem to check it"))
        emit(report.as_dict(), _report_text(report, f"verify attestation {attestation}"),
             as_json=want_json(json_out))
        return 0 if report.ok else VerifyFailed.exit_code
    if target is None:
        entries = log_entries(svc.layout.receipts)
        if not entries:
            emit({"ok": True, "checks": [], "errors": [], "receipts": 0}, "no receipts yet",
                 as_json=want_json(json_out))
            return 0
        target = str(entries[-1].path)
    report = verify_receipt(svc.layout, svc.limits, target)
    emit(report.as_dict(), _report_text(report, f"verify {target}"), as_json=want_json(json_out))
    return 0 if report.ok else VerifyFailed.exit_code


@app.command()
def audit(strict: bool = typer.Option(False, "--strict",
                                     help="hand edits (drift) and a missing or older chain head also fail"),
          global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Walk the receipt chain and check it against the chain head in the mirror and in git; breaks exit 7."""
    use_global(global_)
    from ..receipts.verify import audit as run_audit
    from .progress import progress

    svc = services(privacy=False)
    with progress("auditing receipts", None, quiet=want_json(json_out)) as tick:
        report = run_audit(svc.layout, svc.limits, tick)
    data = {**report.as_dict(), "handEdits": len(report.drift)}
    witnessed = [c for c in report.checks if c.startswith("witness:")]
    walked = (f"{counted(report.receipts, 'receipt')}: schema, phase, chain links, plan digests, identities and "
              "source hashes")
    report.checks = [walked, *witnessed] if report.ok else []
    emit(data, _report_text(report, f"audit of {counted(report.receipts, 'receipt')}")
         + (f"\n  {len(report.drift)} hand edit(s)" if report.drift else ""), as_json=want_json(json_out))
    if not report.ok or (strict and (report.drift or report.warnings)):
        return VerifyFailed.exit_code
    return 0


@app.command()
def recover(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Finish or discard an interrupted transaction."""
    use_global(global_)
    from ..apply.commit import run_recovery
    from ..apply.lock import project_lock
    from ..apply.runs import new_run_id
    from ..paths import ensure_layout

    svc = services()
    ensure_layout(svc.layout)
    with project_lock(svc.layout.lock_path, svc.layout.lock_info, run_id=new_run_id(svc.clock()),
                      operation="recover", timeout=lock_timeout(), now=svc.now()):
        outcome = run_recovery(svc)
    emit({"ok": True, "recovered": outcome}, outcome or "nothing to recover", as_json=want_json(json_out))
    return 0


@app.command()
def undo(run_id: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Restore a run's pre-state as a new transaction (refused, exit 5, if its files changed since)."""
    use_global(global_)
    from ..apply.undo import undo_ops
    from ..edits import direct_transaction
    from .memories import print_tx

    svc = services()
    build = undo_ops(svc.layout.runs, run_id)
    result = direct_transaction(svc, "undo", build, lock_timeout=lock_timeout(), extra={"undoes": run_id})
    return print_tx(result, want_json(json_out))


@app.command()
def status(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Roots, counts, capacity, lock holder, last run and pending recovery."""
    use_global(global_)
    from ..hosts.cron import DuePolicy
    from ..status import project_status
    from .context import config

    section = config().consolidate
    data = project_status(services(privacy=False), DuePolicy(hours=section.due_hours, writes=section.due_writes))
    lines = [
        f"project      {data['projectRoot']}",
        f"private      {data['harness']} ({counted(data['memories'], 'memory')}: {data['safe']} safe, "
        f"{data['private']} private)",
        f"mirror       {data['mirror'] or 'none (the global store is private only)'} "
        f"({counted(data['mirrorFiles'], 'file')})",
        f"capacity     {data['capacity']['lines']}/{data['capacity']['maxLines']} lines, "
        f"{data['capacity']['bytes']}/{data['capacity']['maxBytes']} bytes",
        "trusted      "
        + ("yes: the mirror is injected" if data["trusted"] else "no: only the private store is injected"),
        f"lock         {data['lock'] or 'free'}",
        f"last run     {data['lastRun'] or 'none'}",
        f"consolidate  {'due' if data.get('due') else 'not due'}"
        + (f" ({data['dueReason']})" if data.get("due") and data.get("dueReason") else ""),
        f"receipts     {data['receipts']}",
    ]
    if data["pendingRecovery"]:
        lines.append(f"RECOVERY     run {data['pendingRecovery']} was interrupted: run `memfold recover`")
    if data["git"] is not None:
        lines.append(f"git          {len(data['git']['tracked'])} mirror files tracked, "
                     f"{len(data['git']['untracked'])} untracked")
    for line in data["drift"]:
        lines.append(f"drift        {line}")
    for item in data.get("broken") or []:
        lines.append(f"broken       {item['path']}: {item['problem']}\n             fix: {item['fix']}")
    for warning in data["warnings"]:
        lines.append(f"warning      {warning}")
    emit({"ok": True, **data}, "\n".join(lines), as_json=want_json(json_out))
    return 0
