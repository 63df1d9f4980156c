"""The bodies of validate, verify and audit, without typer: whole-process speed matters for checkers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..errors import MemfoldError, UsageError, VerifyFailed
from .context import emit, services, use_global, want_json

# plan.json is stored indented, so it may be larger than the worker's compact plan bound.
MAX_JSON_BYTES = 64 << 20
MAX_JSON_DEPTH = 128


def _load(path: Path, what: str) -> Any:
    from ..context.boundedjson import loads_bounded
    from ..fsutil import read_bounded

    try:
        data = read_bounded(path, MAX_JSON_BYTES)
    except FileNotFoundError:
        raise UsageError(f"{what} file {path} does not exist", code="usage.missing-file") from None
    except (OSError, MemfoldError) as exc:
        raise UsageError(f"{what} file {path} cannot be read ({getattr(exc, 'message', exc)})",
                         code="usage.unreadable") from None
    try:
        return loads_bounded(data.decode("utf-8"), MAX_JSON_DEPTH)
    except (UnicodeDecodeError, ValueError):
        raise UsageError(f"{what} file {path} is not valid JSON", code="usage.json") from None


def _paths(run: str | None, plan: Path | None, manifest: Path | None, layout: Any) -> tuple[Path, Path]:
    if (run is None) == (plan is None):
        raise UsageError("give either --run RUN_ID or --plan FILE --manifest FILE", code="usage.validate")
    if run is not None:
        if manifest is not None:
            raise UsageError("--manifest goes with --plan; a run has its own manifest.json", code="usage.validate")
        from ..paths import find_run

        run_dir = find_run(layout.runs, run)
        return run_dir / "plan.json", run_dir / "manifest.json"
    if manifest is None:
        raise UsageError("--plan needs --manifest FILE (the run manifest the plan answers)", code="usage.validate")
    assert plan is not None
    return plan, manifest


def _summary(result: Any) -> str:
    lines = [f"plan {'valid' if result.ok else 'INVALID'}"]
    lines += [f"  ok    {check}" for check in result.checks]
    lines += [f"  FAIL  [{e.code}] {e.path}: {e.message}" for e in result.errors]
    return "\n".join(lines) + "\n"


def validate(run: str | None, plan: Path | None, manifest: Path | None, repo: Path | None, json_out: bool) -> int:
    from ..state.read import read_pre
    from ..validation.plan import validate_plan

    svc = services()
    plan_path, manifest_path = _paths(run, plan, manifest, svc.layout)
    plan_obj = _load(plan_path, "plan")
    manifest_obj = _load(manifest_path, "manifest")
    if not isinstance(manifest_obj, dict):
        raise UsageError(f"manifest file {manifest_path} is not a JSON object", code="manifest.invalid")
    repo_root = repo if repo is not None else svc.layout.project_root
    if not Path(repo_root).is_dir():
        raise UsageError(f"repository {repo_root} is not a directory", code="usage.repo")
    result = validate_plan(
        plan_obj, manifest_obj, pre=read_pre(svc.layout, svc.limits), repo_root=Path(repo_root),
        ruleset=svc.ruleset, allow_publish=manifest_obj.get("allowPublish") is True, limits=svc.limits,
    )
    sys.stdout.write(json.dumps(result.as_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    if not want_json(json_out):
        from ..safetext import visible

        sys.stderr.write(visible(_summary(result)))
    return 0 if result.ok else 1


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


def verify(target: str | None, attestation: Path | None, pubkey: Path | None, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..receipts.findings import Report
    from ..receipts.log import log_entries
    from ..receipts.verify import verify_receipt

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
    from ..mirror import gitinfo

    report = verify_receipt(svc.layout, svc.limits, target, gitinfo)
    emit(report.as_dict(), _report_text(report, f"verify {target}"), as_json=want_json(json_out))
    return 0 if report.ok else VerifyFailed.exit_code


def audit(strict: bool, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..mirror import gitinfo
    from ..receipts.verify import audit as run_audit
    from ..safetext import counted
    from .progress import progress

    svc = services(privacy=False)
    with progress("auditing receipts", None, quiet=want_json(json_out)) as tick:
        report = run_audit(svc.layout, svc.limits, tick, gitinfo)
    data = {**report.as_dict(), "handEdits": len(report.drift), "incomingChanges": len(report.incoming)}
    witnessed = [c for c in report.checks if c.startswith("witness:")]
    walked = (f"{counted(report.receipts, 'receipt')}: schema, phase, chain links, plan digests, identities and "
              "source hashes")
    report.checks = [walked, *witnessed] if report.ok else []
    emit(data, _report_text(report, f"audit of {counted(report.receipts, 'receipt')}")
         + (f"\n  {len(report.drift)} hand edit(s)" if report.drift else "")
         + (f"\n  {counted(len(report.incoming), 'change')} that came into the mirror from outside (teammates "
            "through git, older checkouts): not hand edits" if report.incoming else ""), as_json=want_json(json_out))
    if not report.ok or (strict and (report.drift or report.warnings)):
        return VerifyFailed.exit_code
    return 0
