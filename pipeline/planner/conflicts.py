"""Conflicts: memories on one subject that state different values; the newest one stands."""

from __future__ import annotations

from collections import defaultdict

from .dedupe import conflicting
from .text import fact_key, fact_lines, masked, newness, subject_stem
from .work import Fate, Work, canonical_body

MAX_SUBJECT_GROUP = 32


def note_line(older: str) -> str:
    return f"Verify: this disagrees with the older [[{older.removesuffix('.md')}]]; check which value is current."


def _subjects(work: Work) -> list[list[str]]:
    """Groups of live memories sharing type and subject (description apart from values, or name stem)."""
    buckets: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for name in sorted(work.live):
        memory = work.live[name]
        key, values = masked(memory.description)
        if values and key:
            buckets[("description", memory.type, key)].append(name)
        stem = subject_stem(name)
        if stem:
            buckets[("stem", memory.type, stem)].append(name)
    return [buckets[k][:MAX_SUBJECT_GROUP] for k in sorted(buckets) if len(buckets[k]) > 1]


def restated(older: str, newer: str, work: Work) -> bool:
    """Every fact of ``older`` appears in ``newer``, verbatim or as the same line with a new value."""
    new_mem = work.live[newer]
    new_keys = {key for _, key in fact_lines(new_mem)} | {fact_key(new_mem.description)}
    new_masks = {masked(raw)[0] for raw, _ in fact_lines(new_mem)} | {masked(new_mem.description)[0]}
    return all(key in new_keys or masked(raw)[0] in new_masks for raw, key in fact_lines(work.live[older]))


def resolve(work: Work) -> bool:
    """Supersede or flag every conflicting older memory; True when the post-state changed."""
    changed = False
    for group in _subjects(work):
        alive = [n for n in group if n in work.live]
        if len(alive) < 2:
            continue
        alive.sort(key=lambda n: newness(work.live[n], n), reverse=True)
        newest = alive[0]
        for older in alive[1:]:
            if older not in work.live or not conflicting(work.live[older], work.live[newest]):
                continue
            if restated(older, newest, work):
                work.remove(older, Fate("SUPERSEDED", "deleted",
                                        f"superseded by the newer {newest}, which restates every fact of it "
                                        "(with the newer value)", newest))
                work.event(newest, f"supersedes {older}")
                changed = True
                continue
            reason = f"disagrees with {newest} on a value and holds facts {newest} does not restate"
            work.verdicts[older] = ("CONTRADICTED", reason + "; kept until someone verifies")
            work.verdicts[newest] = ("CONTRADICTED", f"newer than the conflicting {older}; kept, marked to verify")
            changed |= _add_note(work, newest, older)
    return changed


def _add_note(work: Work, newest: str, older: str) -> bool:
    memory = work.live[newest]
    line = note_line(older)
    if fact_key(line) in {key for _, key in fact_lines(memory)}:
        return False
    candidate = memory.with_changes(body=canonical_body(memory.body.rstrip("\n") + "\n\n" + line))
    if not work.fits(candidate):
        work.event(newest, f"conflicts with {older}; no room for a verification note")
        return False
    work.live[newest] = candidate
    work.touched.add(newest)
    work.event(newest, f"gained a verification note about the conflicting {older}")
    return True
