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


CONFIG_CACHE = "cache/inject-config.json"
# A config changed this recently may change again within one timestamp tick unseen (git's "racy" case).
_SETTLED_NS = 2_000_000_000


def _inject_config(home: Path) -> dict[str, Any]:
    """Only the ``inject`` section, read without the full (pydantic) config model.

    Importing YAML costs more than the rest of this path together, so the section is cached under
    the config file's identity (device, inode, size, mtime, ctime); any change to the file re-parses it.
    """
    path = home / "config.yaml"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    key = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    cache = home / CONFIG_CACHE
    try:
        cached = json.loads(cache.read_bytes())
        if isinstance(cached, dict) and cached.get("key") == key and isinstance(cached.get("inject"), dict):
            return cached["inject"]  # type: ignore[no-any-return]
    except (OSError, ValueError):
        pass
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    section = data.get("inject") if isinstance(data, dict) else None
    section = section if isinstance(section, dict) else {}
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS:
        _save_cache(cache, key, section)
    return section


def _save_cache(cache: Path, key: list[int], section: dict[str, Any]) -> None:
    from ..fsutil import atomic_write

    try:
        payload = json.dumps({"key": key, "inject": section}, sort_keys=True, default=str)
        if json.loads(payload)["inject"] != section:
            return  # YAML values JSON cannot carry (dates, ...): parse again next time
        cache.parent.mkdir(mode=0o700, exist_ok=True)
        atomic_write(cache, payload.encode("utf-8"), durable=False)
    except (OSError, ValueError, TypeError):
        pass


def gather(home: Path, project_dir: Path, *, query: str | None, max_bytes: int | None, max_files: int | None,
           include_global: bool = True) -> Injection:
    from ..paths import make_layout
    from ..trust import is_trusted

    layout = make_layout(home, project_dir)
    settings = _inject_config(home)
    limit_bytes = int(max_bytes or settings.get("max_bytes") or DEFAULT_MAX_BYTES)
    limit_files = int(max_files or settings.get("max_files") or DEFAULT_MAX_FILES)
    private = read_memories(layout.harness, 64 * 1024, 4096)
    stores = [("private", private)]
    if is_trusted(home, layout.project_root):
        # Mirror copies of private memories are shadowed anyway: not parsed twice.
        stores.append(("mirror", read_memories(layout.mirror, 64 * 1024, 4096, shadowed=private.keys())))
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
