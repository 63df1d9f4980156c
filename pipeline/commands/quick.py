"""Plain invocations of the commands in ``spec``, parsed and run without typer.

Only unambiguous forms are handled: known options, each given once (a repeatable one as often as
wanted), with values that do not look like options, every required parameter present. Anything else
(help, an unknown or repeated option, ``--``) returns None and goes to the typer app, built from the
same table, which owns every usage message; both run the same command bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .spec import COMMANDS, GLOBAL, Command, Param

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_GLOBAL = {flag: p for p in GLOBAL for flag in p.flags}


class _Unplain(Exception):
    """This invocation is for the typer app."""


def _split(item: str) -> tuple[str, str | None]:
    option, eq, value = item.partition("=")
    return (option, value) if eq and option.startswith("--") else (item, None)


def _take(items: list[str], i: int, inline: str | None) -> tuple[str, int]:
    if inline is not None:
        return inline, i
    if i >= len(items) or items[i].startswith("-"):
        raise _Unplain
    return items[i], i + 1


def _value(param: Param, text: str) -> Any:
    if param.kind == "int":
        if not text.isdigit():
            raise _Unplain
        return int(text)
    return Path(text) if param.kind == "path" else text


def _option(param: Param, items: list[str], i: int, inline: str | None) -> tuple[Any, int]:
    if param.kind == "flag":
        if inline is not None:
            raise _Unplain
        return True, i
    text, i = _take(items, i, inline)
    return _value(param, text), i


def _parse(items: list[str]) -> tuple[Command, dict[str, Any], dict[str, Any]]:
    state: dict[str, Any] = {}
    i = 0
    while i < len(items) and items[i].startswith("-"):
        option, inline = _split(items[i])
        param = _GLOBAL.get(option)
        if param is None or param.dest in state:
            raise _Unplain
        state[param.dest], i = _option(param, items, i + 1, inline)
    if i >= len(items) or items[i] not in COMMANDS:
        raise _Unplain
    command = COMMANDS[items[i]]
    options = {flag: p for p in command.params for flag in p.flags}
    positional = [p for p in command.params if p.positional]
    params: dict[str, Any] = {p.dest: p.default for p in command.params}
    seen: set[str] = set()
    found: list[str] = []
    i += 1
    while i < len(items):
        item = items[i]
        i += 1
        if not item.startswith("-"):
            found.append(item)
            continue
        option, inline = _split(item)
        param = options.get(option)
        if param is None or (param.dest in seen and param.kind != "repeat"):
            raise _Unplain
        seen.add(param.dest)
        value, i = _option(param, items, i, inline)
        params[param.dest] = [*(params[param.dest] or ()), value] if param.kind == "repeat" else value
    if any(p.required and p.dest not in seen for p in command.params if not p.positional):
        raise _Unplain
    if positional and positional[-1].kind == "paths":  # the last one takes every remaining word
        *fixed, rest = positional
        if len(found) < len(fixed) + rest.required:
            raise _Unplain
        params[rest.dest] = [Path(word) for word in found[len(fixed):]]
        positional, found = fixed, found[:len(fixed)]
    required = [p for p in positional if p.required]
    if not len(required) <= len(found) <= len(positional):
        raise _Unplain
    params.update((p.dest, _value(p, value)) for p, value in zip(positional, found, strict=False))
    return command, state, params


def parse(args: list[str]) -> Callable[[], int] | None:
    """The command to run for ``args``, or None when the typer app should handle them."""
    try:
        command, state, params = _parse(args)
    except _Unplain:
        return None
    from .context import STATE

    STATE.project = state.get("project")
    STATE.home = state.get("home")
    STATE.json = bool(state.get("json"))
    STATE.global_scope = bool(state.get("global_scope"))
    STATE.loaded = None
    body = body_of(command)
    return lambda: body(**params)


def body_of(command: Command) -> Callable[..., int]:
    """The typer-free function that runs ``command`` (``module:function`` in this package)."""
    from importlib import import_module

    module, _, name = command.body.partition(":")
    function: Callable[..., int] = getattr(import_module(f"{__package__}.{module}"), name)
    return function
