"""Session files: what was sent, and the pruning of old sessions at most once a day."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.store import sessions

_SCANNED: list[str] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "os.scandir" and args and isinstance(args[0], str) and args[0].endswith(sessions.SESSIONS_DIR):
        _SCANNED.append(args[0])


sys.addaudithook(_hook)


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_a_save_scans_the_sessions_directory_at_most_once_a_day(tmp_path: Path) -> None:
    home = str(tmp_path)
    _SCANNED.clear()
    for i in range(5):
        sessions.save(home, f"s-{i}", {"a.md": "1" * 64})
    assert len(_SCANNED) == 1
    marker = tmp_path / sessions.SESSIONS_DIR / sessions.PRUNED_MARKER
    _age(marker, sessions.PRUNE_EVERY_S + 60)
    sessions.save(home, "s-9", {})
    assert len(_SCANNED) == 2 and time.time() - marker.stat().st_mtime < 60


def test_a_prune_removes_sessions_untouched_for_a_week_and_keeps_the_rest(tmp_path: Path) -> None:
    home = str(tmp_path)
    sessions.save(home, "old", {"a.md": "1" * 64})
    sessions.save(home, "recent", {"b.md": "2" * 64})
    _age(Path(sessions.path(home, "old")), sessions.MAX_AGE_S + 60)
    _age(tmp_path / sessions.SESSIONS_DIR / sessions.PRUNED_MARKER, sessions.PRUNE_EVERY_S + 60)
    sessions.save(home, "new", {})
    names = sorted(os.listdir(tmp_path / sessions.SESSIONS_DIR))
    assert names == [sessions.PRUNED_MARKER, "session-new.json", "session-recent.json"]
    assert sessions.load(home, "recent") == {"b.md": "2" * 64} and sessions.load(home, "old") == {}
