"""``memfold inject``: the per-prompt path.

It runs before every prompt, so it imports only ``os``, ``sys``, ``json``, ``re`` and memfold's light
modules: no typer, pydantic, jsonschema or portalocker, and no argparse, pathlib, dataclasses or typing.
"""

from __future__ import annotations

import json
import os
import sys
import time

from .. import locate
from ..safetext import visible
from ..store.inject import Injection, build_injection, read_memories

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ..store.memory import Memory

FORMATS = ("text", "json", "claude-hook")


def _config(home: str) -> Any:
    """The validated config; its sections are cached by ``load_config``, so no YAML or pydantic per prompt."""
    from ..config import load_config

    return load_config(locate.user_files(home, os.environ)[0])


def _readable_root(root: str, below: str, label: str, warnings: list[str]) -> bool:
    """The same symlink refusal every other command applies to its layout, as a skip instead of an error.

    A symlinked ``.memory`` in a trusted project would show whatever it points at (another project's
    private store) as this project's mirror; the host's prompt must still be built, so the store is
    left out and the block says why.
    """
    from ..errors import UnsafePath
    from ..fsutil import refuse_symlinks

    try:
        refuse_symlinks(root, below)
    except UnsafePath as exc:
        # No path in the text: it lands in the model's prompt; ``memfold status`` names it.
        warnings.append(f"the {label} store was skipped [{exc.code}]: it is, or lies below, a symlink; "
                        "`memfold status` names it")
        return False
    return True


def gather(home: str, project_dir: str, *, query: str | None, max_bytes: int | None, max_files: int | None,
           include_global: bool = True) -> Injection:
    from ..mirror.trust import is_trusted

    home = os.path.abspath(home)
    root = locate.project_root(os.fspath(project_dir))
    harness = os.path.join(locate.project_home(home, locate.scope_key(root)), locate.MEMORY_DIR)
    config = _config(home)
    settings = config.inject
    limit_bytes = int(max_bytes or settings.max_bytes)
    limit_files = int(max_files or settings.max_files)
    warnings: list[str] = []
    unreadable: list[str] = []
    private = (read_memories(harness, 64 * 1024, 4096, unreadable=unreadable)
               if _readable_root(harness, home, "private", warnings) else {})
    if unreadable:
        warnings.append(f"skipped {len(unreadable)} private memory file(s) that do not parse: "
                        f"{', '.join(unreadable[:5])}{' ...' if len(unreadable) > 5 else ''} "
                        "(`memfold doctor` shows the problem and the fix)")
    shared_root = os.path.join(locate.global_home(home), locate.MEMORY_DIR)
    shared = (read_memories(shared_root, 64 * 1024, 4096)
              if include_global and _readable_root(shared_root, home, "global", warnings) else {})
    if settings.mask_credentials:
        from ..store.mask import mask_credentials

        cache_home = locate.user_files(home, os.environ)[1]
        private, shared = mask_credentials(cache_home, [private, shared], config.privacy)
    stores: list[tuple[str, Mapping[str, Memory]]] = [("private", private)]
    if is_trusted(home, root):
        mirror = os.path.join(root, locate.MIRROR_DIR)
        if _readable_root(mirror, root, "mirror", warnings):
            # Mirror copies of private memories are shadowed anyway: not parsed twice.
            stores.append(("mirror", read_memories(mirror, 64 * 1024, 4096, shadowed=private.keys())))
    if include_global:
        stores.append(("global", shared))
    return build_injection(stores, query=query, max_bytes=limit_bytes, max_files=limit_files,
                           guidance=bool(settings.guidance), warnings=warnings)


USAGE = ("usage: memfold inject [--home DIR] [--project DIR] [--query TEXT] [--max-bytes N] [--max-files N]\n"
         "                      [--format text|json|claude-hook] [--json]\n")
HELP = USAGE + """
Print the bounded memory context block a host puts before the model.

  --home DIR          the memfold home (default $MEMFOLD_HOME, else the user data dir)
  --project DIR       the project (default: the working directory)
  --query TEXT        also include the bodies of the memories that best match TEXT
  --max-bytes N       the block's byte budget (default: inject.max_bytes, else 16000)
  --max-files N       at most N memory bodies (default: inject.max_files, else 8)
  --format FORMAT     text (default), json, or claude-hook (reads the hook JSON on stdin)
  --json              the same as --format json
"""


class Args:
    """The parsed command line (argparse would cost more than the rest of this path)."""

    def __init__(self) -> None:
        self.home: str | None = None
        self.project: str | None = None
        self.query: str | None = None
        self.max_bytes: int | None = None
        self.max_files: int | None = None
        self.format = "text"
        self.json_out = False


class _Usage(Exception):
    pass


_VALUED = {"--home": "home", "--project": "project", "--query": "query", "--max-bytes": "max_bytes",
           "--max-files": "max_files", "--format": "format"}


def parse_args(argv: Sequence[str]) -> Args:
    args = Args()
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if item in ("-h", "--help"):
            sys.stdout.write(HELP)
            raise SystemExit(0)
        if item == "--json":
            args.json_out = True
            continue
        option, eq, value = item.partition("=")
        if option not in _VALUED or (not eq and item != option):
            raise _Usage(f"unrecognized argument: {item}")
        if not eq:
            if i >= len(items):
                raise _Usage(f"{option} expects a value")
            value = items[i]
            i += 1
        setattr(args, _VALUED[option], _value(option, value))
    return args


def _value(option: str, value: str) -> str | int:
    if option in ("--max-bytes", "--max-files"):
        if not value.isdigit() or int(value) < 1:
            raise _Usage(f"{option} expects a positive integer, not {value!r}")
        return int(value)
    if option == "--format" and value not in FORMATS:
        raise _Usage(f"--format is one of {', '.join(FORMATS)}, not {value!r}")
    return value


def _home(value: str | None) -> str:
    return value or locate.default_home(os.environ)


def _log(home: str, message: str) -> None:
    """The hook fails open; the reason goes to a log the user can read, never to the host."""
    try:
        logs = locate.user_files(home, os.environ)[2]
        os.makedirs(logs, exist_ok=True, mode=0o700)
        with open(os.path.join(logs, "hook.log"), "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} inject: {message}\n")
    except OSError:
        pass


def claude_hook(args: Args) -> int:
    """SessionStart/UserPromptSubmit hook: reads the hook JSON on stdin; any failure exits 0 silently."""
    home = _home(args.home)
    try:
        raw = sys.stdin.read(1 << 20) if not sys.stdin.isatty() else ""
        hook = json.loads(raw) if raw.strip() else {}
        if not isinstance(hook, dict):
            raise ValueError("hook input is not a JSON object")
        cwd = args.project or hook.get("cwd") or os.getcwd()
        event = hook.get("hook_event_name") or "SessionStart"
        query = args.query or (hook.get("prompt") if event == "UserPromptSubmit" else None)
        result = gather(home, cwd, query=query, max_bytes=args.max_bytes, max_files=args.max_files)
        for warning in result.warnings:
            _log(home, warning)
        out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": result.text}}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    except Exception as exc:
        _log(home, f"{exc.__class__.__name__}: {exc}")
    return 0


def main(argv: Sequence[str]) -> int:
    try:
        args = parse_args(argv)
    except _Usage as exc:
        sys.stderr.write(f"{USAGE}memfold inject: error: {exc}\n")
        return 2
    if args.format == "claude-hook":
        return claude_hook(args)
    home = _home(args.home)
    try:
        result = gather(home, args.project or os.getcwd(), query=args.query, max_bytes=args.max_bytes,
                        max_files=args.max_files)
    except Exception as exc:
        code = getattr(exc, "exit_code", 1)
        sys.stderr.write(visible(f"memfold: error [{getattr(exc, 'code', 'inject.failed')}]: {exc}\n"))
        return int(code)
    if args.format == "json" or args.json_out:
        sys.stdout.write(json.dumps({"ok": True, "text": result.text, "indexed": result.indexed,
                                     "included": result.included, "truncated": result.truncated,
                                     "warnings": result.warnings}, ensure_ascii=False) + "\n")
    else:
        for warning in result.warnings:
            sys.stderr.write(f"memfold: warning: {visible(warning)}\n")
        sys.stdout.write(result.text)
    return 0
