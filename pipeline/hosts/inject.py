"""``memfold inject``: the per-prompt path, kept free of typer, pydantic, jsonschema and portalocker."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..store.inject import Injection, build_injection, read_memories

DEFAULT_MAX_BYTES = 16_000
DEFAULT_MAX_FILES = 8
FORMATS = ("text", "json", "claude-hook")


def _inject_config(home: Path) -> dict[str, Any]:
    """Only the ``inject`` section, read without the full (pydantic) config model."""
    path = home / "config.yaml"
    if not path.exists():
        return {}
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    section = data.get("inject") if isinstance(data, dict) else None
    return section if isinstance(section, dict) else {}


def gather(home: Path, project_dir: Path, *, query: str | None, max_bytes: int | None, max_files: int | None,
           include_global: bool = True) -> Injection:
    from ..paths import make_layout
    from ..trust import is_trusted

    layout = make_layout(home, project_dir)
    settings = _inject_config(home)
    limit_bytes = int(max_bytes or settings.get("max_bytes") or DEFAULT_MAX_BYTES)
    limit_files = int(max_files or settings.get("max_files") or DEFAULT_MAX_FILES)
    stores = [("private", read_memories(layout.harness, 64 * 1024, 4096))]
    if is_trusted(home, layout.project_root):
        stores.append(("mirror", read_memories(layout.mirror, 64 * 1024, 4096)))
    if include_global:
        stores.append(("global", read_memories(home / "global" / "memory", 64 * 1024, 4096)))
    return build_injection(stores, query=query, max_bytes=limit_bytes, max_files=limit_files,
                           guidance=bool(settings.get("guidance", True)))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memfold inject", description="print the bounded memory context block")
    parser.add_argument("--home")
    parser.add_argument("--project")
    parser.add_argument("--json", action="store_true", dest="json_out")
    parser.add_argument("--query")
    parser.add_argument("--max-bytes", type=int)
    parser.add_argument("--max-files", type=int)
    parser.add_argument("--format", choices=FORMATS, default="text")
    return parser


def _home(value: str | None) -> Path:
    if value:
        return Path(value)
    from ..paths import default_home

    return default_home(os.environ)


def _log(home: Path, message: str) -> None:
    """The hook fails open; the reason goes to a log the user can read, never to the host."""
    try:
        logs = home / "logs"
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(logs / "hook.log", "a", encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} inject: {message}\n")
    except OSError:
        pass


def claude_hook(args: argparse.Namespace) -> int:
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
        result = gather(home, Path(cwd), query=query, max_bytes=args.max_bytes, max_files=args.max_files)
        out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": result.text}}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    except Exception as exc:  # noqa: BLE001 - a broken store must never block the host
        _log(home, f"{exc.__class__.__name__}: {exc}")
    return 0


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv))
    if args.format == "claude-hook":
        return claude_hook(args)
    home = _home(args.home)
    try:
        result = gather(home, Path(args.project or os.getcwd()), query=args.query, max_bytes=args.max_bytes,
                        max_files=args.max_files)
    except Exception as exc:  # noqa: BLE001 - the per-prompt path reports and exits without a traceback
        code = getattr(exc, "exit_code", 1)
        sys.stderr.write(f"memfold: error [{getattr(exc, 'code', 'inject.failed')}]: {exc}\n")
        return int(code)
    if args.format == "json" or args.json_out:
        sys.stdout.write(json.dumps({"ok": True, "text": result.text, "indexed": result.indexed,
                                     "included": result.included, "truncated": result.truncated},
                                    ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(result.text)
    return 0
