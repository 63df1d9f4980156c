"""The labelled corpora of the rule benches: rows read, notes packed for throughput, the report printed."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

NOTE_BYTES = 2000  # a memory-sized text


def rows(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def pack_notes(texts: list[str], megabytes: float) -> tuple[list[str], int]:
    """Texts drawn at random (seeded) into memory-sized notes, about ``megabytes`` of them, and their size."""
    rng = random.Random(7)
    notes: list[str] = []
    size = 0
    while size < megabytes * 1_000_000 and texts:
        picked: list[str] = []
        while sum(len(n) + 1 for n in picked) < NOTE_BYTES:
            picked.append(rng.choice(texts))
        notes.append("\n".join(picked))
        size += len(notes[-1].encode("utf-8"))
    return notes, size


def print_report(what: str, chosen: Path | None, files: tuple[str, str], measure: Callable[[Path], dict[str, Any]],
                 format_report: Callable[[dict[str, Any]], str], as_json: bool) -> int:
    """Measure the corpus in ``chosen`` and print the figures; they are the result, so exit 0."""
    import sys

    from ..errors import UsageError

    if chosen is None or not all((chosen / name).is_file() for name in files):
        where = chosen or "the source tree"
        raise UsageError(f"no {what} corpus at {where}: pass --corpus DIR holding {files[0]} and {files[1]}",
                         code="usage.corpus")
    report = measure(chosen)
    sys.stdout.write(json.dumps(report, indent=2, sort_keys=True) + "\n" if as_json else format_report(report))
    return 0
