"""The typer app and its global options; what commands share lives in ``context``."""

from __future__ import annotations

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
from .spec import GLOBAL_OPT, JSON_OPT
from .typed import HELP_NAMES, install, option

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
    context_settings={"help_option_names": list(HELP_NAMES)},
)

# The same --json and --global every command of the table has.
JsonOpt = option(JSON_OPT)
GlobalOpt = option(GLOBAL_OPT)

# The global options and the commands of the one command-line table (``spec``).
install(app)


