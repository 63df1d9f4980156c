"""The compact plan text: keys sorted, no padding, artifact items packed into lines of bounded length.

The built-in planner prints a plan this way so that a 20,000-memory plan stays within the default
output bounds (lines, bytes a line, bytes); ``plan.json`` holds the same text with one item a line,
so it stays readable and diffs item by item.
"""

from __future__ import annotations

import json

# What one stdout line of the built-in planner may reach before the next item starts a new line:
# far below the per-line bound, far above one item, so a plan of any size takes few lines.
PRINT_LINE_BUDGET = 256 * 1024


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def plan_json(plan: dict[str, object], line_budget: int = 0) -> bytes:
    """The plan as compact JSON; a new line starts before an array item once a line passes ``line_budget``."""
    lines: list[str] = []
    current: list[str] = ["{"]
    size = 1

    def put(text: str) -> None:
        nonlocal size
        current.append(text)
        size += len(text)

    def wrap() -> None:
        nonlocal size
        lines.append("".join(current))
        current.clear()
        size = 0

    for position, key in enumerate(sorted(plan)):
        if position:
            put(",")
        if size > line_budget:
            wrap()
        value = plan[key]
        put(_compact(key) + ":")
        if not isinstance(value, list) or not value:
            put(_compact(value))
            continue
        put("[")
        for index, item in enumerate(value):
            if index:
                put(",")
            if size > line_budget:
                wrap()
            put(_compact(item))
        put("]")
    put("}")
    wrap()
    return ("\n".join(lines) + "\n").encode("utf-8")
