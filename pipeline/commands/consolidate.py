"""``memfold consolidate``: the consolidation transaction from the command line (body in ``consolidation``)."""

from __future__ import annotations

import typer

from . import consolidation
from ._app import GlobalOpt, JsonOpt, app


@app.command()
def consolidate(
    context: str = typer.Option(None, "--context", help="session transcript (JSON/JSONL; '-' for stdin)"),
    no_context: bool = typer.Option(False, "--no-context", help="consolidate without a session transcript"),
    scope: str = typer.Option(None, "--scope", help="all | related (default: related with a context, else all)"),
    select_: list[str] = typer.Option(None, "--select", help="consolidate exactly these memories (repeatable)"),
    worker: str = typer.Option("builtin", "--worker", help="builtin, or a worker named in config.yaml"),
    allow_publish: bool = typer.Option(False, "--allow-publish", help="let the plan make private memories safe"),
    dry_run: bool = typer.Option(False, "--dry-run", help="validate and show what would change; write nothing"),
    unsafe_no_sandbox: bool = typer.Option(False, "--unsafe-no-sandbox",
                                           help="run a third-party worker without an OS sandbox"),
    all_projects: bool = typer.Option(False, "--all-projects",
                                      help="visit every project home whose root still exists (cron, timers)"),
    if_due: bool = typer.Option(False, "--if-due", help="run only where consolidation is due (see `status`)"),
    skip_if_locked: bool = typer.Option(False, "--skip-if-locked",
                                        help="a project locked by another run is a logged skip, exit 0"),
    global_: bool = GlobalOpt, json_out: bool = JsonOpt,
) -> int:
    """Consolidate the store: snapshot, sandboxed worker, validated plan, atomic apply, receipt."""
    return consolidation.consolidate(context, no_context, scope, select_, worker, allow_publish, dry_run,
                                     unsafe_no_sandbox, all_projects, if_due, skip_if_locked, global_, json_out)
