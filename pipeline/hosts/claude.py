"""Claude Code: merge memfold's hooks into settings.json, the /consolidate command, the session transcript."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputRejected
from ..fsutil import atomic_write, read_bounded
from ..store.jsontext import TooDeep, loads_bounded

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
        data = loads_bounded(raw.decode("utf-8")) if raw.strip() else {}
    except TooDeep as exc:
        raise InputRejected(f"{path} is {exc}, deeper than any host settings file; fix it first, memfold will "
                            "not overwrite it", code="hooks.settings-depth") from None
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
    """``/consolidate``: Claude runs the ``!`` line before the model sees the prompt and replaces
    ``${CLAUDE_SESSION_ID}`` with the running session's id first, so memfold reads that session's own
    transcript: never a guess from file times, never another session of the same project."""
    line = command_line([*memfold, *CONSOLIDATE_TAIL])
    text = f"""---
description: Consolidate memfold memory with this session's transcript, in the background \
(/consolidate no-context leaves it out)
argument-hint: "[no-context]"
allowed-tools: Bash({line}:*)
---
## memfold consolidation

!`{line} --background --session ${{CLAUDE_SESSION_ID}} $ARGUMENTS`

Report the result above to the user in two or three lines: that the consolidation runs in the
background, the log file where its progress and result go, and that `memfold status` shows it; or,
when it says FAILED, the error code and its hint. Do not run any other command and do not edit memory
files.
"""
    return text.encode("utf-8")


def project_dir_name(path: Path) -> str:
    """Claude Code's transcript directory for a working directory: every non-alphanumeric becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


def session_id(given: str | None, env: Mapping[str, str]) -> str | None:
    """The running session: what ``/consolidate`` was handed, else ``$CLAUDE_CODE_SESSION_ID``, which
    Claude Code sets for every command it runs. Anything that is not an id is refused: it becomes a
    file name."""
    for value in (given, env.get("CLAUDE_CODE_SESSION_ID")):
        value = (value or "").strip()
        if not value:
            continue
        if not SESSION_ID.match(value):
            raise InputRejected(f"{value[:80]!r} is not a Claude Code session id", code="hooks.session-id",
                                hint="run /consolidate from Claude Code, or `memfold consolidate --context FILE`")
        return value
    return None


def find_transcript(claude: Path, session: str, cwds: Sequence[Path]) -> Path | None:
    """``<claude dir>/projects/<dir>/<session>.jsonl`` for the running session, or None while Claude
    Code has not written it yet (the first command of a new session runs before its first message
    is saved). The directories of ``cwds`` are looked at first; a session started in a subdirectory
    or under a truncated long path lives in another one, so every project directory counts."""
    base = claude / "projects"
    name = f"{session}.jsonl"
    preferred = [base / project_dir_name(cwd) / name for cwd in cwds]
    found = [p for p in preferred if p.is_file()]
    if not found and base.is_dir():
        found = sorted(p for p in base.glob(f"*/{name}") if p.is_file())
    return found[0] if found else None
