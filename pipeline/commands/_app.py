"""The typer app and its global options; what commands share lives in ``context``."""

from __future__ import annotations

from pathlib import Path

import typer

from .context import (
    STATE,
    Globals,
    clock,
    config,
    emit,
    home_dir,
    layout,
    lock_timeout,
    report_error,
    services,
    use_global,
    want_json,
    warn,
)

# The command modules import these names from here.
__all__ = [
    "STATE",
    "GlobalOpt",
    "Globals",
    "JsonOpt",
    "app",
    "clock",
    "config",
    "emit",
    "home_dir",
    "layout",
    "lock_timeout",
    "report_error",
    "services",
    "use_global",
    "want_json",
    "warn",
]

app = typer.Typer(
    name="memfold",
    help="Durable, receipted memory for coding agents: a private store, a safe mirror, verified consolidation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

JsonOpt = typer.Option(False, "--json", help="print one JSON object for machines")
GlobalOpt = typer.Option(False, "--global", help="the user-wide store (private, no mirror) instead of the project's")


@app.callback()
def _global_options(
    project: Path = typer.Option(None, "--project", help="project directory (default: the working directory)"),
    home: Path = typer.Option(None, "--home", help="memfold home (default: $MEMFOLD_HOME or the user data dir)"),
    json_out: bool = typer.Option(False, "--json", help="print JSON for machines"),
    global_: bool = GlobalOpt,
) -> None:
    STATE.project, STATE.home, STATE.json, STATE.global_scope = project, home, json_out, global_
    STATE.loaded = None


