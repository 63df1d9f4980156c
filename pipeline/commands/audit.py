"""Commands that repair: recover, undo (status lives in ``overview``; verify and audit in ``checks``)."""

from __future__ import annotations

import typer

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
