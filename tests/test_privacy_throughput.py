"""Throughput of the default rules on realistic memory notes (printed, never asserted), and what those notes
hold: nothing, whether scanned as one text or as notes."""

from __future__ import annotations

import random
import time
from pathlib import Path

from pipeline.privacy import load_ruleset

BENIGN = Path(__file__).parent / "data" / "privacy" / "benign.txt"


def measure(megabytes: float = 5.0) -> tuple[float, float, int]:
    """MB/s scanning one large text and scanning it as ~20-line notes, and the findings of both scans."""
    lines = [
        line
        for line in BENIGN.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    rng = random.Random(7)
    picked: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        picked.append(rng.choice(lines))
        size += len(picked[-1]) + 1
    text = "\n".join(picked)
    ruleset = load_ruleset()
    ruleset.forget()
    start = time.perf_counter()
    found = len(ruleset.scan(text))
    whole = len(text) / 1e6 / (time.perf_counter() - start)
    notes = ["\n".join(picked[i : i + 20]) for i in range(0, len(picked), 20)]
    start = time.perf_counter()
    for note in notes:
        found += len(ruleset.scan(note))
    per_note = len(text) / 1e6 / (time.perf_counter() - start)
    return whole, per_note, found


def test_benign_lines_joined_into_notes_hold_nothing_and_the_throughput_is_reported() -> None:
    """Each line alone is checked in ``test_privacy_corpus``; joined, its last word and the next line's
    first are read together too (the joined-lines reading), and must not make a token."""
    whole, per_note, found = measure(1.0)
    print(f"\nthroughput on 1 MB of notes: {whole:.1f} MB/s as one text, {per_note:.1f} MB/s per note")
    assert found == 0


if __name__ == "__main__":
    w, n, _ = measure(5.0)
    print(f"throughput on 5 MB of notes: {w:.1f} MB/s as one text, {n:.1f} MB/s per note")
