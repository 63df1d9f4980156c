"""Claude Code: merge memfold's hooks into settings.json, the /consolidate command, the session transcript."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputRejected
from ..fsutil import atomic_write, read_bounded

HOOK_TAIL = ("inject", "--format", "claude-hook")
HOOK_TIMEOUT = 30
CONSOLIDATE_TAIL = ("hooks", "consolidate", "claude")


def claude_dir(home: Path, env: dict[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``<home>/.claude``: where user settings and transcripts live."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else home / ".claude"


def command_line(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def is_ours(handler: Any) -> bool:
    """A hook handler that runs memfold's Claude hook, whatever path memfold was installed at."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    try:
        tokens = shlex.split(str(handler.get("command", "")))
    except ValueError:
        return False
    if len(tokens) < len(HOOK_TAIL) + 1 or tuple(tokens[-len(HOOK_TAIL):]) != HOOK_TAIL:
        return False
    return Path(tokens[0]).name == "memfold" or ("-m" in tokens and "pipeline" in tokens)


def read_settings(path: Path) -> dict[str, Any] | None:
    """The settings object, or None when the file does not exist. Invalid JSON is refused, never rewritten."""
    try:
        raw = read_bounded(path, 4 << 20)
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputRejected(f"{path} is not valid JSON ({exc}); fix it first, memfold will not overwrite it",
                            code="hooks.settings-json") from None
    if not isinstance(data, dict):
        raise InputRejected(f"{path} does not hold a JSON object", code="hooks.settings-json")
    return data


def _event_groups(data: dict[str, Any], event: str, path: Path) -> list[Any]:
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InputRejected(f"{path}: 'hooks' is not an object", code="hooks.settings-shape")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InputRejected(f"{path}: hooks.{event} is not a list", code="hooks.settings-shape")
    return groups


def merge_hooks(data: dict[str, Any], command: str, events: Sequence[str], path: Path) -> list[str]:
    """Add (or refresh) memfold's handler for each event; other hooks stay as they are. Returns what changed."""
    changed = []
    for event in events:
        groups = _event_groups(data, event, path)
        handlers = [h for g in groups if isinstance(g, dict) for h in (g.get("hooks") or []) if is_ours(h)]
        if handlers:
            for handler in handlers:
                if handler.get("command") != command:
                    handler["command"] = command
                    changed.append(f"{event} (updated)")
            continue
        groups.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]})
        changed.append(event)
    return changed


def remove_hooks(data: dict[str, Any]) -> list[str]:
    """Drop memfold's handlers, then any group, event or ``hooks`` key that only they filled."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
                kept_groups.append(group)
                continue
            removed.append(event)
            rest = [h for h in inner if not is_ours(h)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    return removed


def write_settings(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"), mode=0o644)


def consolidate_command_file(memfold: Sequence[str]) -> bytes:
    """``/consolidate``: Claude runs the ``!`` line before the model sees the prompt, so the transcript is
    found by memfold itself (the newest transcript of this project), not guessed by the model."""
    line = command_line([*memfold, *CONSOLIDATE_TAIL])
    text = f"""---
description: Consolidate memfold memory with this session's transcript (/consolidate no-context leaves it out)
argument-hint: "[no-context]"
allowed-tools: Bash({line}:*)
---
## memfold consolidation result

!`{line} $ARGUMENTS`

Report the result above to the user in two or three lines: what was created, rewritten or deleted, the
receipt path, or the error code and its hint. Do not run any other command and do not edit memory files.
"""
    return text.encode("utf-8")


def project_dir_name(path: Path) -> str:
    """Claude Code's transcript directory for a working directory: every non-alphanumeric becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def find_transcript(claude: Path, cwds: Sequence[Path]) -> Path | None:
    """The most recently written session transcript of the first of ``cwds`` that has any.

    Claude Code appends to the active session's file on every message, so while ``/consolidate`` runs
    the newest ``.jsonl`` in the project's directory is the current session. Long paths are truncated
    with a hash suffix, so a directory that starts with the (first 100 characters of the) name also counts.
    """
    base = claude / "projects"
    for cwd in cwds:
        name = project_dir_name(cwd)
        candidates = [base / name]
        if base.is_dir() and len(name) > 100:
            candidates += sorted(p for p in base.iterdir() if p.name.startswith(name[:100]))
        files = [f for d in candidates if d.is_dir() for f in d.glob("*.jsonl") if f.is_file()]
        if files:
            return max(files, key=lambda f: (f.stat().st_mtime_ns, f.name))
    return None
