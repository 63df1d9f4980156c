"""Codex: the ``hooks.json`` SessionStart hook that injects memfold context (same shape as Claude's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

EVENTS = ("SessionStart",)


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    """``$CODEX_HOME`` or ``<home>/.codex``."""
    configured = env.get("CODEX_HOME")
    return Path(configured) if configured else home / ".codex"


def hooks_path(project_root: Path, home: Path, env: Mapping[str, str], *, user: bool) -> Path:
    """Codex reads ``hooks.json`` next to each config layer: ``<repo>/.codex/`` and ``~/.codex/``.

    The handler shape (``{"hooks": {"SessionStart": [{"hooks": [{"type": "command", ...}]}]}}``) and the
    SessionStart output (``hookSpecificOutput.additionalContext``) are the ones Claude Code uses, so the
    merge and removal rules of :mod:`pipeline.hosts.claude` apply unchanged.
    """
    return (codex_home(home, env) if user else project_root / ".codex") / "hooks.json"
