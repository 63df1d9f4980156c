"""The consolidation transaction, stage by stage; each stage lives in its own module and writes its own artifacts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol

from .apply.commit import RunRecord, Services, commit_run, gate
from .apply.runs import create_run_dir, new_run_id
from .apply.skeleton import Transaction, transaction
from .apply.stale import refuse_if_stale
from .context.artifacts import RunArtifacts
from .context.manifest import build_manifest, write_manifest
from .context.scope import default_scope, select
from .context.snapshot import ContextLimits, snapshot_run
from .edits import attributes_kept, commit_sync
from .errors import InputRejected
from .evidence.signals import NAME as SIGNALS
from .evidence.signals import run_signals, signals_bytes, task_section
from .frozen import FrozenValue
from .fsutil import sha256_bytes
from .mirror.sync import Sync, consistent, sync_record, team_sync
from .state.model import PreState
from .state.post import compute_post
from .state.read import read_pre
from .state.warm import WarmState, one_shot
from .timing import Timings
from .worker.ahead import Launcher, start_launcher
from .worker.extract import ExtractLimits
from .worker.meanwhile import meanwhile
from .worker.spawn import requested_protections, run_plan_worker
from .worker.task import BUILTIN, WorkerChoice, choose_worker, placeholders, resolve_worker, write_task

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .context.artifacts import Writer
    from .privacy import RuleSet


class ConsolidateRequest(FrozenValue):
    __slots__ = ("context", "context_source", "scope", "select", "worker", "workers", "allow_publish", "dry_run",
                 "unsafe_no_sandbox", "parent_env", "lock_timeout", "extract_limits", "context_limits",
                 "refuse_emptying", "on_stage")
    context: bytes | None
    context_source: str
    scope: str | None
    select: tuple[str, ...]
    worker: str
    workers: Mapping[str, Any]
    allow_publish: bool
    dry_run: bool
    unsafe_no_sandbox: bool
    parent_env: Mapping[str, str]
    lock_timeout: float
    extract_limits: ExtractLimits
    context_limits: ContextLimits
    # Refuse a plan that would leave no memory where there were some (the MCP server: a tool an agent calls).
    refuse_emptying: bool
    # Told each stage as it starts (``--progress-json``: a host's status line); None shows nothing.
    on_stage: Callable[[str], None] | None

    def __init__(self, context: bytes | None = None, context_source: str = "none", scope: str | None = None,
                 select: tuple[str, ...] = (), worker: str = "builtin", workers: Mapping[str, Any] | None = None,
                 allow_publish: bool = False, dry_run: bool = False, unsafe_no_sandbox: bool = False,
                 parent_env: Mapping[str, str] | None = None, lock_timeout: float = 0.0,
                 extract_limits: ExtractLimits | None = None, context_limits: ContextLimits | None = None,
                 refuse_emptying: bool = False, on_stage: Callable[[str], None] | None = None) -> None:
        self._set(context=context, context_source=context_source, scope=scope, select=select, worker=worker,
                  workers={} if workers is None else workers, allow_publish=allow_publish, dry_run=dry_run,
                  unsafe_no_sandbox=unsafe_no_sandbox, parent_env={} if parent_env is None else parent_env,
                  lock_timeout=lock_timeout,
                  extract_limits=ExtractLimits() if extract_limits is None else extract_limits,
                  context_limits=ContextLimits() if context_limits is None else context_limits,
                  refuse_emptying=refuse_emptying, on_stage=on_stage)


class _Configured(Protocol):
    """What the request builder reads from the user config (``config.Config``)."""

    @property
    def workers(self) -> dict[str, Any]: ...

    @property
    def consolidate(self) -> Any: ...

    def extract_limits(self) -> ExtractLimits: ...


def consolidate_request(config: _Configured, parent_env: Mapping[str, str], **choices: Any) -> ConsolidateRequest:
    """The one builder of a consolidate request: the CLI, cron, ``/consolidate`` from a host and the MCP
    server differ only in ``choices`` (context, scope, worker, dry run, ...); the configured workers,
    worker output bounds and the caller's environment always come from here. The worker is the one
    named, else ``consolidate.worker``, checked against the one allow-list; the lock wait is
    ``consolidate.lock_wait`` unless the caller sets its own (``--skip-if-locked`` waits for nothing)."""
    fixed = {"workers", "extract_limits", "parent_env"} & choices.keys()
    if fixed:
        raise TypeError(f"consolidate_request sets {', '.join(sorted(fixed))} itself")
    section = config.consolidate
    worker = resolve_worker(choices.pop("worker", None), section.worker, config.workers)
    choices.setdefault("lock_timeout", float(section.lock_wait))
    return ConsolidateRequest(workers=config.workers, extract_limits=config.extract_limits(),
                              parent_env=dict(parent_env), worker=worker, **choices)


def consolidate(svc: Services, req: ConsolidateRequest, launcher: Launcher | None = None, *,
                rules: Callable[[], RuleSet] | None = None) -> dict[str, Any]:
    """lock → recover → run dir + snapshot → worker → plan → validate → stale check → commit.

    ``launcher``: one the caller started (``start_launcher``) as early as it could; this run uses it
    and stops it if it never reaches the worker. Without one, it is started here.
    ``rules``: the privacy rules to use instead of ``svc.ruleset``, loaded while the worker plans
    (nothing before the worker scans): the caller hands in a loader that cannot fail on user input.
    """
    layout, t = svc.layout, Timings(req.on_stage)
    # The launcher boots while the stages before the worker run; it starts nothing until handed the policy.
    if launcher is None:
        with t.stage("launcher-start"):
            launcher = start_launcher(planner=req.worker == BUILTIN)
    with launcher, transaction(svc, "consolidate", lock_timeout=req.lock_timeout, timings=t) as tx:
        # A large store is watched for the run: the check after the commit reads back what it wrote.
        watched = one_shot(layout, svc.limits)
        if watched is not None and tx.recovered is not None:
            watched.forget()
        try:
            return _run(svc, req, tx, t, launcher, watched, rules)
        finally:
            if watched is not None:
                watched.close()


def _run(svc: Services, req: ConsolidateRequest, tx: Transaction, t: Timings, launcher: Launcher,
         watched: WarmState | None, rules: Callable[[], RuleSet] | None) -> dict[str, Any]:
    """The stages of ``consolidate`` inside its open transaction."""
    layout = svc.layout
    with t.stage("read"):
        pre = watched.read() if watched is not None else read_pre(layout, svc.limits)
    with t.stage("sync"):
        pre, sync = _synced(svc, req, pre, watched, rules)
    run_dir = create_run_dir(layout.runs, layout.home, tx.run_id)
    files = RunArtifacts()
    try:
        result = _stages(svc, req, tx, t, launcher, pre, sync, run_dir, files, rules)
    except BaseException:
        with suppress(OSError):  # the run's own error is the one to report
            files.settle()
        raise
    files.settle()  # a dry run's files are durable, as a failed run's, by the time it ends
    return result


def _synced(svc: Services, req: ConsolidateRequest, pre: PreState, watched: WarmState | None,
            rules: Callable[[], RuleSet] | None) -> tuple[PreState, Sync]:
    """The sync that opens the run. The worker reads the store from disk, so what it adopts lands first,
    as a transaction (and receipt) of its own under the same lock; a dry run adopts nothing."""
    if consistent(pre):
        return pre, team_sync(svc.layout, svc.limits, svc.ruleset, pre, pre.cache)
    ruleset = svc.ruleset if svc.ruleset is not None or rules is None else rules()
    sync = team_sync(svc.layout, svc.limits, ruleset, pre, pre.cache)
    if not sync.operations or req.dry_run:
        return pre, sync
    commit_sync(svc.with_changes(ruleset=ruleset), new_run_id(svc.clock()), pre, sync)
    if watched is not None:
        watched.forget()
    pre = read_pre(svc.layout, svc.limits)
    return pre, team_sync(svc.layout, svc.limits, ruleset, pre, pre.cache)


def _stages(svc: Services, req: ConsolidateRequest, tx: Transaction, t: Timings, launcher: Launcher,
            pre: PreState, sync: Sync, run_dir: Path, files: RunArtifacts,
            rules: Callable[[], RuleSet] | None) -> dict[str, Any]:
    layout, write = svc.layout, files.write
    with t.stage("snapshot"):
        snapshot, snapshot_digest = snapshot_run(run_dir, req.context, source=req.context_source,
                                                 limits=req.context_limits, write=write)
    with t.stage("manifest"):
        manifest, choice = _manifest(svc, req, run_dir, snapshot, snapshot_digest, pre, write)
    with t.stage("worker"), meanwhile(*_later_stages(svc, pre, rules)) as started:
        outcome = run_plan_worker(choice, run_dir=run_dir, layout=layout, parent_env=req.parent_env,
                                  unsafe_no_sandbox=req.unsafe_no_sandbox, limits=req.extract_limits,
                                  launcher=launcher, started=started, write=write, defer=files.later)
    if rules is not None:
        svc = svc.with_changes(ruleset=rules())  # loaded meanwhile: the loader keeps what it built
    t.add("extraction", outcome.extract_ms)
    plan_bytes = outcome.extracted.plan_bytes
    from .apply.summary import receipt_outcome, summarize
    from .validation.plan import raise_for, validate_run

    with t.stage("validation"):
        validation = validate_run(run_dir, outcome.extracted.plan, manifest, write, pre=pre,
                                  repo_root=layout.project_root, ruleset=svc.ruleset,
                                  allow_publish=req.allow_publish, limits=svc.limits)
    raise_for(validation)
    with t.stage("stale-check"):
        refuse_if_stale(layout, svc.limits, pre)
    with t.stage("index"):
        post = compute_post(pre, validation.operations, kept=sync.kept)
    summary = summarize(tx.run_id, outcome.extracted.plan, pre, post, _redactor(svc))
    if req.refuse_emptying:
        _refuse_emptying(summary)
    if req.dry_run:
        return {**summary, "dryRun": True, "runDir": str(run_dir), "timings": t.stages}
    with t.stage("post-verify"):
        gate(svc, pre, post)
    record = RunRecord(tx.run_id, manifest["scopeDigest"], snapshot_digest, manifest["selected"], "consolidate",
                       {**choice.describe(), "durationSeconds": round(outcome.duration_s, 3),
                        "planSource": outcome.extracted.source}, outcome.protections)
    with t.stage("commit"):
        files.settle()  # the run's own files are durable before the commit point
        receipt, log_path = commit_run(svc, run_dir, record, pre, post, plan_bytes,
                                       outcome=receipt_outcome(summary), timings=t,
                                       sync=sync_record(layout, sync) if layout.mirror is not None else None)
    attributes_kept(svc, post, receipt["sourceHashes"], receipt["finalHashes"])
    return {**summary, "dryRun": False, "runDir": str(run_dir), "receipt": str(log_path),
            "planDigest": sha256_bytes(plan_bytes), "previous": receipt["previous"], "timings": t.stages}


def _later_stages(svc: Services, pre: PreState,
                  rules: Callable[[], RuleSet] | None = None) -> tuple[Callable[[], object], ...]:
    """What the stages after the worker set up on first use, prepared while the worker plans: the
    modules of validation, the summary and the commit's index and receipt code (imported only after
    the worker stage, so the import is paid here), the commit's fsync threads, the schema pre-check,
    the privacy rules (``rules`` loads them, else they are ``svc.ruleset``) and the patterns every scan
    runs, and the fact keys of every memory read (the summary compares each rewritten memory with every
    memory after the plan: all but the plan's own are these)."""

    def imports() -> None:
        import hashlib  # noqa: F401
        import shutil  # noqa: F401  (the worker's scratch dir is removed with it)

        import rfc8785  # noqa: F401

        from . import safetext  # noqa: F401
        from .apply import summary  # noqa: F401
        from .store import indexcommit  # noqa: F401  (and sqlite3: the commit leaves the search index current)
        from .validation import plan  # noqa: F401

    def fsync_threads() -> None:
        from .apply.durable import start_fsync_threads

        start_fsync_threads()

    def schema() -> None:
        from .validation.schema import fast_check

        fast_check()

    def fact_keys() -> None:
        from .planner.text import known_keys

        for memory in pre.memories.values():
            known_keys(memory)

    if rules is not None:
        loader = rules

        def prepare() -> None:
            loader().prepare()

        return (imports, fsync_threads, schema, prepare, fact_keys)
    ruleset = svc.ruleset
    if ruleset is None:
        return (imports, fsync_threads, schema, fact_keys)
    return (imports, fsync_threads, schema, ruleset.prepare, fact_keys)


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


def _manifest(svc: Services, req: ConsolidateRequest, run_dir: Path, snapshot: dict[str, Any], digest: str,
              pre: PreState, write: Writer) -> tuple[dict[str, Any], WorkerChoice]:
    """Scope selection, worker choice, the manifest and the rendered task, each written by its stage."""
    layout = svc.layout
    scope = req.scope or default_scope(req.context is not None, req.select)
    selected = select(scope, pre.memories, snapshot, req.select)
    places = placeholders(run_dir, layout.harness, layout.mirror or layout.harness, layout.project_root)
    choice = choose_worker(req.worker, req.workers, places)
    manifest = build_manifest(
        layout=layout, run_id=run_dir.name, run_dir=run_dir, snapshot_digest=digest,
        context_mode=snapshot["contextMode"], scope=scope, selected=selected, source=pre.hash_maps(),
        worker=choice.describe(), sandbox=requested_protections(choice, req.unsafe_no_sandbox, req.parent_env),
        limits=svc.limits, extract_limits={"maxStdoutBytes": req.extract_limits.max_stdout_bytes,
                                           "maxPlanBytes": req.extract_limits.max_plan_bytes},
        allow_publish=req.allow_publish, created_at=svc.now(),
    )
    write_manifest(run_dir, manifest, write)
    signals = _signals(svc, pre, selected)
    write(run_dir, SIGNALS, signals_bytes(signals))
    write_task(run_dir, {**_task_values(manifest, places, svc), "evidence": task_section(signals)}, write)
    return manifest, choice


def _signals(svc: Services, pre: PreState, selected: list[str]) -> dict[str, Any]:
    """Whether the selected memories' cited code still holds, and which nobody used: ``signals.json``
    (the built-in planner reads it) and the task's evidence section."""
    from .config import load_config

    usage = load_config(svc.layout.config).usage
    return run_signals(svc.layout, pre.memories, selected, int(usage.dormant_days), bool(usage.forget_dormant),
                       svc.clock().timestamp())


def _task_values(manifest: dict[str, Any], places: dict[str, str], svc: Services) -> dict[str, str]:
    selected = "\n".join(f"- `{name}`" for name in manifest["selected"]) or "(none: an empty scope is a no-op)"
    return {"run_id": manifest["runId"], "scope_key": manifest["scopeKey"], "scope_digest": manifest["scopeDigest"],
            "artifact_hash": manifest["artifactHash"], "created_at": manifest["createdAt"],
            "harness": places["harness"], "public": places["public"], "repo": places["repo"],
            "manifest": places["manifest"], "snapshot": places["snapshot"], "selected": selected,
            "max_file_bytes": str(svc.limits.max_file_bytes)}
