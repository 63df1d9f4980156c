"""Commands that repair and report: recover, undo, status (verify and audit live in ``checks``)."""

from __future__ import annotations

import typer

from ..safetext import counted
from ._app import GlobalOpt, JsonOpt, app, emit, lock_timeout, services, use_global, want_json


@app.command()
def recover(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Finish or discard an interrupted transaction."""
    use_global(global_)
    from ..apply.init import recover_project

    outcome = recover_project(services(), lock_timeout())
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
    for line in data.get("behind") or []:
        lines.append(f"behind       {line}")
    for item in data.get("broken") or []:
        lines.append(f"broken       {item['path']}: {item['problem']}\n             fix: {item['fix']}")
    for warning in data["warnings"]:
        lines.append(f"warning      {warning}")
    emit({"ok": True, **data}, "\n".join(lines), as_json=want_json(json_out))
    return 0
