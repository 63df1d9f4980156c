"""The typer side of ``spec``: commands and global options generated from the table, and the one runner.

Nothing here declares an option by hand: each ``spec.Command`` becomes a typer command whose signature
is built from its parameters, so the fast path in ``quick`` and typer cannot drift apart. ``run``
renders flags without a type, groups ``--help`` by ``spec.PANELS`` and turns every usage error into
memfold's ``UsageError``, reported like any other error (JSON under ``--json``).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer
from typer import _click as click  # typer's own copy of click: its commands and errors are these classes
from typer.core import TyperGroup, TyperOption

from .. import __version__
from ..errors import UsageError
from .context import STATE
from .spec import COMMANDS, GLOBAL, PANEL_ORDER, PANELS, VERSION, Command, Param

HELP_NAMES = ("-h", "--help")
_TYPES: dict[str, Any] = {"text": str, "path": Path, "int": int, "flag": bool, "repeat": list[str],
                          "paths": list[Path]}


def version_text() -> str:
    return f"memfold {__version__}\n"


def option(param: Param) -> Any:
    """The typer declaration of one table entry (an option or a positional argument)."""
    if param.positional:
        return typer.Argument(... if param.required else None, help=param.help, show_default=False,
                              metavar=param.metavar)
    default = ... if param.required else param.default
    return typer.Option(default, *param.flags, help=param.help,
                        show_default=param.kind not in ("flag", "repeat") and param.default is not None)


def _signature(params: Sequence[Param], extra: Sequence[inspect.Parameter] = ()) -> inspect.Signature:
    fields = [inspect.Parameter(p.dest, inspect.Parameter.KEYWORD_ONLY, default=option(p),
                                annotation=_TYPES[p.kind]) for p in params]
    return inspect.Signature([*extra, *fields], return_annotation=int)


def _command(spec: Command) -> Callable[..., int]:
    def command(**kwargs: Any) -> int:
        from . import quick

        return quick.body_of(spec)(**kwargs)

    command.__signature__ = _signature(spec.params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.dest: _TYPES[p.kind] for p in spec.params}
    command.__name__ = spec.name
    command.__doc__ = spec.help
    return command


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(version_text())
        raise typer.Exit(0)


def _global_options() -> Callable[..., None]:
    def options(**kwargs: Any) -> None:
        STATE.project, STATE.home = kwargs["project"], kwargs["home"]
        STATE.json, STATE.global_scope = kwargs["json"], kwargs["global_scope"]
        STATE.loaded = None

    version = inspect.Parameter(
        VERSION.dest, inspect.Parameter.KEYWORD_ONLY, annotation=bool,
        default=typer.Option(False, *VERSION.flags, help=VERSION.help, is_eager=True, callback=_show_version))
    options.__signature__ = _signature(GLOBAL, [version])  # type: ignore[attr-defined]
    options.__annotations__ = {p.dest: _TYPES[p.kind] for p in (*GLOBAL, VERSION)}
    return options


def install(app: typer.Typer) -> None:
    """The global options and every command of the table, on ``app``."""
    app.callback()(_global_options())
    for spec in COMMANDS.values():
        app.command(spec.name, help=spec.help, rich_help_panel=spec.panel)(_command(spec))


def _grouped(app: typer.Typer) -> None:
    """Each command in its ``--help`` group, the groups in ``PANEL_ORDER`` (typer shows them as first met)."""
    for info in app.registered_commands:
        info.rich_help_panel = PANELS[info.name or (info.callback.__name__ if info.callback else "")]
    for group in app.registered_groups:
        group.rich_help_panel = PANELS[group.name or ""]
    app.registered_commands.sort(key=lambda info: PANEL_ORDER.index(info.rich_help_panel or ""))
    app.registered_groups.sort(key=lambda group: PANEL_ORDER.index(group.rich_help_panel or ""))


def _plain_flags(command: click.core.Command) -> None:
    """A flag takes no value, so its row in ``--help`` shows none (typer would print ``<bool>``)."""
    # The help option is made on first use and then kept: make it now, with the app's names.
    help_option = command.get_help_option(click.core.Context(command, help_option_names=list(HELP_NAMES)))
    for param in [*command.params, help_option]:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _plain_flags(sub)


def click_command(app: typer.Typer) -> click.core.Command:
    """The click command tree of ``app`` with help groups and plain flags."""
    _grouped(app)
    command = typer.main.get_command(app)
    _plain_flags(command)
    return command


def _usage_code(exc: click.exceptions.UsageError) -> str:
    if isinstance(exc, click.exceptions.NoSuchOption | click.exceptions.BadOptionUsage):
        return "usage.option"
    if isinstance(exc, click.exceptions.MissingParameter):
        return "usage.missing"
    if isinstance(exc, click.exceptions.BadParameter):
        return "usage.value"
    return "usage.command"


def run(app: typer.Typer, args: list[str], entry: Callable[[list[str]], int]) -> int:
    """Parse ``args`` with the typer app and run the command; usage errors raise ``UsageError``."""
    command = click_command(app)
    try:
        result = command.main(args=args, prog_name="memfold", standalone_mode=False, obj=entry)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()
        return 2
    except click.exceptions.UsageError as exc:
        names = getattr(command, "commands", {})
        where = " ".join(["memfold", *[a for a in args if a in names][:1]])
        raise UsageError(exc.format_message(), code=_usage_code(exc),
                         hint=f"`{where} --help` lists the options") from None
    return result if isinstance(result, int) else 0
