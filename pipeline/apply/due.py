"""When the next consolidation is due: hours and receipted writes since the newest consolidation receipt."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..receipts.log import log_entries
from ..receipts.receipt import load_receipt
from .summary import left_for_next_run

CONSOLIDATE_COMMAND = "consolidate"


@dataclass(frozen=True)
class DuePolicy:
    hours: float = 24.0
    writes: int = 20


def _parse_stamp(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def due_state(receipts: Path, policy: DuePolicy, now: dt.datetime) -> dict[str, Any]:
    """Hours and receipted writes since the newest consolidation receipt, and whether that makes it due.

    A project that never consolidated counts from its first receipt; one with no receipt at all
    has nothing to consolidate and is never due.
    """
    entries = log_entries(receipts)
    last: str | None = None
    left = 0
    writes = 0
    for entry in reversed(entries):
        try:
            receipt = load_receipt(entry.path)
        except (OSError, ValueError):
            writes += 1  # an unreadable receipt still stands for a write; `memfold audit` reports it
            continue
        if receipt.get("command") == CONSOLIDATE_COMMAND:
            last = receipt.get("createdAt") if isinstance(receipt.get("createdAt"), str) else None
            left = left_for_next_run(receipt)
            break
        writes += 1
    baseline = _parse_stamp(last)
    if baseline is None and last is None and entries:
        try:
            baseline = _parse_stamp(load_receipt(entries[0].path).get("createdAt"))
        except (OSError, ValueError):
            baseline = None
    hours = None if baseline is None else round(max((now - baseline).total_seconds(), 0.0) / 3600, 2)
    reasons = []
    if writes >= policy.writes:
        reasons.append(f"{writes} writes since the last consolidation (due after {policy.writes})")
    if hours is not None and hours >= policy.hours:
        since = "the last consolidation" if last else "the first write"
        reasons.append(f"{hours:g} hours since {since} (due after {policy.hours:g})")
    if left:
        reasons.append(f"the last consolidation left the changes of {left} memories for the next run "
                       "(its plan was cut to fit limits.plan_bytes)")
    if not entries:
        reasons = []
    return {"due": bool(reasons), "reason": "; ".join(reasons) or ("no writes yet" if not entries else
                                                                    "not due yet"),
            "lastConsolidation": last, "hoursSince": hours, "writesSince": writes,
            "dueHours": policy.hours, "dueWrites": policy.writes}
