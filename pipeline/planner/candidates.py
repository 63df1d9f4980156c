"""Session candidates: new memories, or updates of the memory they duplicate."""

from __future__ import annotations

import re
from collections import defaultdict

from ..store.memory import TYPES, Memory, is_memory_name, sanitize_line
from . import dedupe, staleness
from .text import fact_lines, known_keys, name_stem
from .work import Work, canonical_body, merge

# The planner starts once per consolidation: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_SLUG = 48
MAX_DESCRIPTION = 200


def to_memory(cand: dict[str, Any], today: str, now: str) -> Memory | None:
    body = canonical_body(str(cand.get("body", "")))
    if not body.strip():
        return None
    mtype = cand.get("type") if cand.get("type") in TYPES else "project"
    first = next((raw for raw, _ in (fact_lines(Memory(name="", description="x", body=body)))), "")
    description = sanitize_line(str(cand.get("description") or "")) or sanitize_line(re.sub(r"^[-*>#\s]+", "", first))
    if not description:
        return None
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    # The name the session gave is kept as given; without one, ``apply`` names it after its file
    # (a cut of the description would be prose that no command accepts as a name).
    title = sanitize_line(str(cand.get("name") or "")).removesuffix(".md")
    return Memory(name=title, description=description, type=str(mtype),
                  visibility="safe" if cand.get("visibility") == "safe" else "private",
                  created=today, modified=now, body=body)


def file_name(cand: dict[str, Any], memory: Memory, taken: set[str]) -> str:
    """``<type>_<slug>.md``, unique case-insensitively against every name in either root."""
    raw = str(cand.get("name") or "")
    source = name_stem(raw.removesuffix(".md")) if raw else memory.description
    slug = re.sub(r"[^a-z0-9]+", "-", source.lower()).strip("-")[:MAX_SLUG].strip("-") or "note"
    base = f"{memory.type}_{slug}"
    name, n = f"{base}.md", 2
    while name.lower() in taken or not is_memory_name(name):
        name, n = f"{base}-{n}.md", n + 1
    return name


def _known(memory: Memory, postings: dict[str, set[str]]) -> str | None:
    """A memory that already states every fact of ``memory``, if any."""
    keys = sorted({key for _, key in fact_lines(memory)})
    holders: set[str] | None = None
    for key in keys:
        holders = set(postings.get(key, ())) if holders is None else holders & postings.get(key, set())
        if not holders:
            return None
    return min(holders) if holders else None


def _named(cand: dict[str, Any], lower: dict[str, str]) -> str | None:
    """The existing memory a candidate names by its file name, if it does."""
    raw = str(cand.get("name") or "")
    return lower.get((raw if raw.endswith(".md") else raw + ".md").lower()) if raw else None


def apply(work: Work, candidates: list[dict[str, Any]], taken: set[str], now: str) -> None:
    """Add each candidate to the working state as a create, or merge it into its duplicate."""
    if not candidates:
        return
    memories = {**work.fixed, **work.live}
    postings: dict[str, set[str]] = defaultdict(set)
    for name, existing in memories.items():
        for key in known_keys(existing):
            postings[key].add(name)
    index = dedupe.build_index(sorted(memories), memories)
    lower = {n.lower(): n for n in memories}
    for number, cand in enumerate(candidates, 1):
        memory = to_memory(cand, work.today, now) if isinstance(cand, dict) else None
        label = f"candidate {number}"
        if memory is None:
            work.notes.append(f"{label}: skipped, it has no body or description")
            continue
        stale = staleness.verdict(memory, work.today)
        if stale is not None:
            work.notes.append(f"{label}: skipped, {stale[1]}")
            continue
        holder = _known(memory, postings)
        if holder is not None:
            work.notes.append(f"{label}: already recorded in {holder}")
            continue
        match = _named(cand, lower) or index.nearest(file_name(cand, memory, set()), memory, memories)
        if match is not None and match not in work.live:
            work.notes.append(f"{label}: would update {match}, which is outside the selected scope; skipped")
            continue
        if match is not None and not dedupe.mergeable(memory, work.live[match]):
            # The other visibility: merging would publish the candidate or hide the memory's safe facts.
            work.notes.append(f"{label}: close to {match}, which has the other visibility; kept apart")
            match = None
        if match is not None:
            target = merge(work.live[match], [memory]).with_changes(modified=now)
            if not work.fits(target):
                work.notes.append(f"{label}: merging it into {match} would pass the size bound; skipped")
                continue
            work.live[match] = memories[match] = target
            work.event(match, f"updated with {label} from the session")
            name = match
        else:
            if not work.fits(memory):
                work.notes.append(f"{label}: over the size bound; skipped")
                continue
            name = file_name(cand, memory, taken)
            memory = memory if memory.name else memory.with_changes(name=name.removesuffix(".md"))
            taken.add(name.lower())
            work.live[name] = memories[name] = memory
            work.created.add(name)
            lower[name.lower()] = name
            work.event(name, f"created from {label} ({cand.get('origin', 'session')})")
        work.touched.add(name)
        for key in known_keys(work.live[name]):
            postings[key].add(name)
        index.add(name, work.live[name])
