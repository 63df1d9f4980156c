"""The consolidation transaction, stage by stage; each stage lives in its own module."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .apply.commit import RunRecord, Services, commit_run, gate, run_recovery
from .apply.lock import project_lock
from .apply.runs import create_run_dir, new_run_id, write_artifact
from .apply.stale import refuse_if_stale
from .apply.summary import receipt_outcome, summarize
from .context.manifest import build_manifest
from .context.scope import default_scope, select
from .context.snapshot import ContextLimits, build_snapshot
from .errors import ApplyFailed, InputRejected
from .fsutil import dump_json, sha256_bytes
from .paths import ensure_layout
from .state import PreState, compute_post, read_pre
from .timing import Timings
from .validation.plan import raise_for
from .worker.extract import ExtractLimits
from .worker.spawn import requested_protections, run_plan_worker
from .worker.task import WorkerChoice, choose_worker, placeholders, render_task


@dataclass(frozen=True)
class ConsolidateRequest:
    context: bytes | None = None
    context_source: str = "none"
    scope: str | None = None
    select: tuple[str, ...] = ()
    worker: str = "builtin"
    workers: Mapping[str, Any] = field(default_factory=dict)
    allow_publish: bool = False
    dry_run: bool = False
    unsafe_no_sandbox: bool = False
    parent_env: Mapping[str, str] = field(default_factory=dict)
    lock_timeout: float = 0.0
    extract_limits: ExtractLimits = field(default_factory=ExtractLimits)
    context_limits: ContextLimits = field(default_factory=ContextLimits)
    # Refuse a plan that would leave no memory where there were some (the MCP server: a tool an agent calls).
    refuse_emptying: bool = False


def consolidate(svc: Services, req: ConsolidateRequest) -> dict[str, Any]:
    """lock → recover → run dir + snapshot → worker → plan → validate → stale check → commit."""
    try:
        return _consolidate(svc, req)
    except OSError as exc:
        raise ApplyFailed(
            f"consolidation failed before its commit point and changed nothing: {exc.strerror or exc}",
            code="apply.io", hint="check free space and permissions of the memfold home and the project",
        ) from exc


def _consolidate(svc: Services, req: ConsolidateRequest) -> dict[str, Any]:
    layout, t = svc.layout, Timings()
    ensure_layout(layout)
    run_id = new_run_id(svc.clock())
    with project_lock(layout.lock_path, layout.lock_info, run_id=run_id, operation="consolidate",
                      timeout=req.lock_timeout, now=svc.now()):
        t.run("recover", run_recovery, svc)
        pre = t.run("read", read_pre, layout, svc.limits)
        run_dir = create_run_dir(layout.runs, layout.home, run_id)
        snapshot, snapshot_digest = t.run("snapshot", _snapshot, run_dir, req)
        manifest, choice = t.run("manifest", _manifest, svc, req, run_dir, snapshot, snapshot_digest, pre)
        outcome = t.run("worker", run_plan_worker, choice, run_dir=run_dir, layout=layout,
                        parent_env=req.parent_env, unsafe_no_sandbox=req.unsafe_no_sandbox, limits=req.extract_limits)
        t.stages["extraction"] = outcome.extract_ms
        plan_bytes = outcome.extracted.plan_bytes
        write_artifact(run_dir, "plan.json", plan_bytes)
        validation = t.run("validation", _validate, svc, req, outcome.extracted.plan, manifest, pre)
        write_artifact(run_dir, "validation.json", dump_json(validation.as_dict()))
        raise_for(validation)
        t.run("stale-check", refuse_if_stale, layout, svc.limits, pre)
        post = t.run("index", compute_post, pre, validation.operations)
        summary = summarize(run_id, outcome.extracted.plan, pre, post, _redactor(svc))
        if req.refuse_emptying:
            _refuse_emptying(summary)
        if req.dry_run:
            return {**summary, "dryRun": True, "runDir": str(run_dir), "timings": t.stages}
        t.run("post-verify", gate, svc, pre, post)
        record = RunRecord(run_id, manifest["scopeDigest"], snapshot_digest, manifest["selected"], "consolidate",
                           {**choice.describe(), "durationSeconds": round(outcome.duration_s, 3),
                            "planSource": outcome.extracted.source}, outcome.protections)
        receipt, log_path = t.run("commit", commit_run, svc, run_dir, record, pre, post, plan_bytes,
                                  outcome=receipt_outcome(summary))
    return {**summary, "dryRun": False, "runDir": str(run_dir), "receipt": str(log_path),
            "planDigest": sha256_bytes(plan_bytes), "previous": receipt["previous"], "timings": t.stages}


def _redactor(svc: Services) -> Any:
    """Lines shown from memories name a privacy rule instead of a value it flags."""
    ruleset = svc.ruleset
    if ruleset is None:
        return None

    def redact(line: str) -> str:
        found = ruleset.scan(line, "<summary>")
        return f"[withheld: matches privacy rule {found[0].rule_id}]" if found else line

    return redact


def _refuse_emptying(summary: dict[str, Any]) -> None:
    counts = summary.get("memories") or {}
    if counts.get("before", 0) > 0 and counts.get("after", 1) == 0:
        raise InputRejected("the plan would remove every memory; refused (nothing was written)",
                            code="mcp.would-clear",  # a stable code: only the MCP server asks for this
                            hint="run `memfold consolidate` yourself if that is really intended")


def _snapshot(run_dir: Path, req: ConsolidateRequest) -> tuple[dict[str, Any], str]:
    snapshot, data = build_snapshot(req.context, source=req.context_source, limits=req.context_limits)
    return snapshot, write_artifact(run_dir, "snapshot.json", data)


def _manifest(svc: Services, req: ConsolidateRequest, run_dir: Path, snapshot: dict[str, Any], digest: str,
              pre: PreState) -> tuple[dict[str, Any], WorkerChoice]:
    """Scope selection, worker choice, the manifest and the rendered task, written to the run dir."""
    layout = svc.layout
    scope = req.scope or default_scope(req.context is not None, req.select)
    selected = select(scope, pre.memories, snapshot, req.select)
    places = placeholders(run_dir, layout.harness, layout.mirror or layout.harness, layout.project_root)
    choice = choose_worker(req.worker, req.workers, places)
    manifest = build_manifest(
        layout=layout, run_id=run_dir.name, run_dir=run_dir, snapshot_digest=digest,
        context_mode=snapshot["contextMode"], scope=scope, selected=selected, source=pre.hash_maps(),
        worker=choice.describe(), sandbox=requested_protections(choice, req.unsafe_no_sandbox),
        limits=svc.limits, extract_limits={"maxStdoutBytes": req.extract_limits.max_stdout_bytes,
                                           "maxPlanBytes": req.extract_limits.max_plan_bytes},
        allow_publish=req.allow_publish, created_at=svc.now(),
    )
    write_artifact(run_dir, "manifest.json", dump_json(manifest))
    write_artifact(run_dir, "task.md", render_task(_task_values(manifest, places, svc)))
    return manifest, choice


def _validate(svc: Services, req: ConsolidateRequest, plan: dict[str, Any], manifest: dict[str, Any],
              pre: PreState) -> Any:
    from .validation.plan import validate_plan

    return validate_plan(plan, manifest, pre=pre, repo_root=svc.layout.project_root, ruleset=svc.ruleset,
                         allow_publish=req.allow_publish, limits=svc.limits)


def _task_values(manifest: dict[str, Any], places: dict[str, str], svc: Services) -> dict[str, str]:
    selected = "\n".join(f"- `{name}`" for name in manifest["selected"]) or "(none: an empty scope is a no-op)"
    return {"run_id": manifest["runId"], "scope_key": manifest["scopeKey"], "scope_digest": manifest["scopeDigest"],
            "artifact_hash": manifest["artifactHash"], "created_at": manifest["createdAt"],
            "harness": places["harness"], "public": places["public"], "repo": places["repo"],
            "manifest": places["manifest"], "snapshot": places["snapshot"], "selected": selected,
            "max_file_bytes": str(svc.limits.max_file_bytes)}
