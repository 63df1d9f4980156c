"""Time-based staleness: memories past ``expires`` and dated one-shot reminders whose date passed."""

from __future__ import annotations

import re

from ..store.memory import Memory
from .lazyre import Lazy
from .text import body_facts

_DATE = r"(\d{4}-\d{2}-\d{2})"
# A reminder names a task and a date; the date alone (e.g. "created 2025-01-01") is not one.
_REMINDER = Lazy(
    r"(?:\bremind(?:er)?\b[^\n]{0,40}?\b(?:on|by|at|before)?\s*" + _DATE
    + r"|\b(?:todo|to do|follow[- ]up|due|deadline|until)\b\s*(?:by|before|on|until)?\s*:?\s*" + _DATE
    + r"|\bon\s+" + _DATE + r"\s*[:,]?\s*(?:remind|todo|follow up|check|ping|ask|do)\b)",
    re.IGNORECASE,
)
# Every reminder holds a date; looking for one first spares _REMINDER's scan of every offset.
_ANY_DATE = re.compile(_DATE)


_TASK_LINES = 3


def _reminder_date(text: str) -> str | None:
    if _ANY_DATE.search(text) is None:
        return None
    match = _REMINDER().search(text)
    if match is None:
        return None
    return next(g for g in match.groups() if g)


def expired(memory: Memory, today: str) -> bool:
    return memory.expires is not None and memory.expires[:10] < today


def one_shot(memory: Memory, today: str) -> str | None:
    """The passed date when the memory is a dated task reminder and nothing more."""
    desc_date = _reminder_date(memory.description)
    lines = body_facts(memory.body)
    # A reminder's body is its task in a line or two; a longer body holds durable facts.
    if desc_date is not None and desc_date < today and len(lines) <= _TASK_LINES:
        if all(d < today for d in (_reminder_date(raw) for raw, _ in lines) if d):
            return desc_date
    # A body-only reminder counts when every line is a passed reminder: a note that
    # also holds other facts is not disposable (the first line that is not one decides).
    dates: list[str] = []
    for raw, _ in lines:
        date = _reminder_date(raw)
        if date is None or date >= today:
            return None
        dates.append(date)
    return max(dates) if dates else None


def verdict(memory: Memory, today: str) -> tuple[str, str] | None:
    """(verdict, reason) when the memory is stale by date, else None."""
    if expired(memory, today):
        return "DORMANT", f"expired on {memory.expires}, before {today}"
    date = one_shot(memory, today)
    if date is not None:
        return "ONE-SHOT", f"a one-shot reminder dated {date}, which has passed ({today})"
    return None
