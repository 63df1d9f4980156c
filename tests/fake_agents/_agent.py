"""Shared code of the fake agent CLIs: argument checks, the run's real plan, JSON output."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pipeline.planner.run import plan_run


def fail(message: str) -> None:
    sys.stderr.write(f"{Path(sys.argv[0]).name}: {message}\n")
    raise SystemExit(2)


def require(argv: list[str], *expected: str) -> None:
    """Each expected flag (or "flag value" pair) must appear in argv, as the real CLI would need."""
    for item in expected:
        parts = item.split(" ", 1)
        at = [i for i, a in enumerate(argv) if a == parts[0]]
        if not at or (len(parts) == 2 and not any(i + 1 < len(argv) and argv[i + 1] == parts[1] for i in at)):
            fail(f"missing {item!r} in {argv}")


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def task_path(argv: list[str]) -> Path:
    for arg in argv:
        found = re.search(r"(/\S+/task\.md)", arg)
        if found:
            return Path(found.group(1))
    fail("no task.md path in the prompt")
    raise AssertionError


def plan_text(argv: list[str]) -> str:
    """The built-in planner's plan for the run whose task.md the prompt names, as an agent would reply."""
    task = task_path(argv)
    if not task.read_text(encoding="utf-8").strip():
        fail(f"{task} is empty")
    plan = json.loads(plan_run(task.parent))
    return "```json\n" + json.dumps(plan, indent=2) + "\n```"


def emit(*records: Any) -> None:
    for record in records:
        sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()
