"""Plain invocations of the everyday commands and of consolidate, parsed and run without typer.

Only unambiguous forms are handled: known options, each given once, with values that do not look like
options. Anything else (help, an unknown or repeated option, ``--``) returns None and goes to the
typer app, which owns every usage message; both run the same command bodies in ``memories``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

_GLOBAL_VALUES = {"--home": "home", "--project": "project"}
_GLOBAL_FLAGS = {"--json": "json", "--global": "global_scope"}
_FLAGS = {"--global": "global_", "--json": "json_out"}
_MEMORY = {"--description": "description", "-d": "description", "--type": "type_", "-t": "type_",
           "--visibility": "visibility", "--body": "body", "-b": "body", "--body-file": "body_file",
           "--expires": "expires"}
_EDIT_FLAGS = {**_FLAGS, "--allow-publish": "allow_publish"}
_CONSOLIDATE = {"--context": "context", "--scope": "scope", "--worker": "worker"}
_CONSOLIDATE_FLAGS = {**_FLAGS, "--no-context": "no_context", "--allow-publish": "allow_publish",
                      "--dry-run": "dry_run", "--unsafe-no-sandbox": "unsafe_no_sandbox",
                      "--all-projects": "all_projects", "--if-due": "if_due", "--skip-if-locked": "skip_if_locked"}
# command: (positional parameters, value options, flags, defaults)
_SPECS: dict[str, tuple[tuple[str, ...], dict[str, str], dict[str, str], dict[str, Any]]] = {
    "add": (("name",), _MEMORY, _EDIT_FLAGS, {}),
    "update": (("name",), _MEMORY, _EDIT_FLAGS, {}),
    "forget": (("name",), {}, _FLAGS, {}),
    "list": ((), {}, _FLAGS, {}),
    "search": (("query",), {"--limit": "limit"}, _FLAGS, {"limit": 20}),
    # --select repeats, so it is left to typer.
    "consolidate": ((), _CONSOLIDATE, _CONSOLIDATE_FLAGS, {"worker": "builtin"}),
    "mcp": ((), {}, {}, {}),
}
COMMANDS = frozenset(_SPECS)


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


def _parse(items: list[str]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    state: dict[str, Any] = {}
    i = 0
    while i < len(items) and items[i].startswith("-"):
        option, inline = _split(items[i])
        i += 1
        if option in _GLOBAL_VALUES and _GLOBAL_VALUES[option] not in state:
            state[_GLOBAL_VALUES[option]], i = _take(items, i, inline)
        elif option in _GLOBAL_FLAGS and inline is None and _GLOBAL_FLAGS[option] not in state:
            state[_GLOBAL_FLAGS[option]] = True
        else:
            raise _Unplain
    if i >= len(items) or items[i] not in _SPECS:
        raise _Unplain
    command = items[i]
    positional, valued, flags, defaults = _SPECS[command]
    params: dict[str, Any] = {**{v: None for v in valued.values()}, **defaults, **{f: False for f in flags.values()}}
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
        key = valued.get(option) or (flags.get(option) if inline is None else None)
        if key is None or key in seen:
            raise _Unplain
        seen.add(key)
        if option in flags:
            params[key] = True
        else:
            params[key], i = _take(items, i, inline)
    if len(found) != len(positional):
        raise _Unplain
    params.update(zip(positional, found, strict=False))
    return command, state, params


def parse(args: list[str]) -> Callable[[], int] | None:
    """The command to run for ``args``, or None when the typer app should handle them."""
    try:
        command, state, params = _parse(args)
    except _Unplain:
        return None
    if "limit" in params:
        if not str(params["limit"]).isdigit():
            return None
        params["limit"] = int(params["limit"])
    if params.get("body_file") is not None:
        params["body_file"] = Path(params["body_file"])
    from .context import STATE

    STATE.project = Path(state["project"]) if "project" in state else None
    STATE.home = Path(state["home"]) if "home" in state else None
    STATE.json = bool(state.get("json"))
    STATE.global_scope = bool(state.get("global_scope"))
    STATE.loaded = None
    return lambda: _command(command)(**params)


def _command(command: str) -> Callable[..., int]:
    if command == "consolidate":
        from .consolidation import consolidate

        return consolidate
    if command == "mcp":
        from .mcp_run import serve

        return serve
    from . import memories

    commands: dict[str, Callable[..., int]] = {
        "add": memories.add, "update": memories.update, "forget": memories.forget,
        "list": memories.list_memories, "search": memories.search}
    return commands[command]
