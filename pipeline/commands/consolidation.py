"""The body of ``memfold consolidate`` without typer: ``consolidate`` registers it as a typer command,
``quick`` runs its plain invocations directly (typer and the pydantic it imports cost ~0.35 s).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .context import clock, config, emit, home_dir, later_rules, services, use_global, want_json


def read_context(context: str | None, no_context: bool, limit: int) -> tuple[bytes | None, str]:
    if context is not None and no_context:
        raise UsageError("give --context or --no-context, not both", code="usage.context")
    if context is None:
        return None, "none"
    if context == "-":
        return sys.stdin.buffer.read(limit + 1), "stdin"
    try:
        with open(context, "rb") as fh:
            return fh.read(limit + 1), Path(context).name
    except OSError as exc:
        raise UsageError(f"cannot read the context file {context}: {exc.strerror}", code="usage.context") from None


def consolidate(context: str | None = None, no_context: bool = False, scope: str | None = None,
                select_: list[str] | None = None, worker: str | None = None, allow_publish: bool = False,
                dry_run: bool = False, unsafe_no_sandbox: bool = False, all_projects: bool = False,
                if_due: bool = False, skip_if_locked: bool = False, global_: bool = False,
                json_out: bool = False, progress_json: bool = False) -> int:
    """Consolidate the store: snapshot, sandboxed worker, validated plan, atomic apply, receipt."""
    from ..worker.task import BUILTIN, resolve_worker

    # The worker named (or configured) is checked against the allow-list before anything starts.
    use_global(global_)
    cfg = config()
    worker = resolve_worker(worker, cfg.consolidate.worker, cfg.workers)
    if all_projects or if_due or skip_if_locked:
        return _consolidate(None, context, no_context, scope, select_, worker, allow_publish, dry_run,
                            unsafe_no_sandbox, all_projects, if_due, skip_if_locked, global_, json_out,
                            progress_json)
    from ..worker.ahead import start_launcher

    # Then the sandbox launcher boots on the other core while this process imports and reads.
    with start_launcher(planner=worker == BUILTIN) as launcher:
        return _consolidate(launcher, context, no_context, scope, select_, worker, allow_publish, dry_run,
                            unsafe_no_sandbox, all_projects, if_due, skip_if_locked, global_, json_out,
                            progress_json)


def _consolidate(launcher: Any, context: str | None, no_context: bool, scope: str | None,
                 select_: list[str] | None, worker: str, allow_publish: bool, dry_run: bool,
                 unsafe_no_sandbox: bool, all_projects: bool, if_due: bool, skip_if_locked: bool, global_: bool,
                 json_out: bool, progress_json: bool = False) -> int:
    use_global(global_)
    from ..context.snapshot import ContextLimits
    from ..transaction import consolidate as run
    from ..transaction import consolidate_request

    limits = ContextLimits()
    if all_projects and (context is not None or select_ or global_):
        raise UsageError("--all-projects takes no --context, --select or --global: each project is consolidated "
                         "whole", code="usage.all-projects")
    data, source = read_context(context, no_context, limits.max_input_bytes)
    cfg = config()
    # A consolidation waits for a short write to finish (consolidate.lock_wait); --skip-if-locked waits
    # for nothing: a locked project is a logged skip.
    waits: dict[str, Any] = {"lock_timeout": 0.0} if skip_if_locked else {}
    if progress_json:
        waits["on_stage"] = progress_line
        progress_line("started")
    request = consolidate_request(
        cfg, os.environ, context=data, context_source=source, scope=scope, select=tuple(select_ or ()),
        worker=worker, allow_publish=allow_publish, dry_run=dry_run, unsafe_no_sandbox=unsafe_no_sandbox,
        context_limits=limits, **waits)
    if all_projects or if_due or skip_if_locked:
        return _unattended(request, all_projects, if_due, skip_if_locked, want_json(json_out))
    from .progress import progress

    rules = later_rules()
    with progress("consolidating", None, quiet=want_json(json_out)):
        summary = run(services(privacy=rules is None), request, launcher, rules=rules)
    # Imported here, not before the run: the worker stage imports it while the worker plans.
    from ..apply.summary import summary_text

    emit(summary, summary_text(summary), as_json=want_json(json_out))
    return 0


def progress_line(stage: str) -> None:
    """``--progress-json``: one JSON line on stderr as each stage starts, for a host's status line."""
    sys.stderr.write(json.dumps({"progress": "consolidate", "stage": stage}) + "\n")
    sys.stderr.flush()


def _cron_log(message: str) -> None:
    """Skips and failures of unattended runs are kept in ``<home>/logs/cron.log`` for the user."""
    import time

    from .context import user_files

    logs = user_files()[2]
    try:
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(logs / "cron.log", "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} consolidate: {message}\n")
    except OSError:
        pass


def _unattended(request: Any, all_projects: bool, if_due: bool, skip_if_locked: bool, as_json: bool) -> int:
    """Cron and timer runs: one JSON line per project when not on a terminal, progress when on one."""
    from ..apply.commit import Services
    from ..apply.due import DuePolicy
    from ..hosts.cron import consolidate_one, visit_all
    from ..transaction import consolidate as run

    section = config().consolidate
    policy = DuePolicy(section.due_hours, section.due_writes) if if_due else None
    base = services()

    def one(svc: Services) -> dict[str, Any]:
        return run(svc, request)

    if all_projects:
        lines = visit_all(home_dir(), lambda lay: base.with_changes(layout=lay), one, policy=policy,
                          skip_if_locked=skip_if_locked, now=clock(), log=_cron_log)
    else:
        lines = iter([consolidate_one(base, one, policy=policy, skip_if_locked=skip_if_locked, now=clock(),
                                      log=_cron_log)])
    machine = as_json or not sys.stdout.isatty()
    exit_code = 0
    for n, line in enumerate(lines, 1):
        if line["exitCode"] and not exit_code:
            exit_code = int(line["exitCode"])
        if machine:
            sys.stdout.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            detail = line.get("reason") or line.get("message") or line.get("runId") or ""
            from ..safetext import visible

            sys.stderr.write(visible(f"[{n}] {line['project']}: {line['status']} {detail}\n"))
    return exit_code
