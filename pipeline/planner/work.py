"""The planner's working post-state: live memories, what happened to each name, and merging."""

from __future__ import annotations

from ..frozen import FrozenValue
from ..store.memory import Memory, render_memory
from ..store.state import Limits
from .text import fact_key, fact_lines, newness, short_list


class Fate(FrozenValue):
    """What became of a selected memory that leaves the store."""

    __slots__ = ("verdict", "status", "summary", "target")
    verdict: str
    status: str
    summary: str
    target: str | None

    def __init__(self, verdict: str, status: str, summary: str, target: str | None = None) -> None:
        self._set(verdict=verdict, status=status, summary=summary, target=target)


class Work:
    """The plan being built: the selected memories as they were, as they are now, and what happened."""

    __slots__ = ("original", "live", "fixed", "limits", "today", "created", "fates", "forwards", "verdicts",
                 "events", "notes", "touched")

    def __init__(self, original: dict[str, Memory], live: dict[str, Memory], fixed: dict[str, Memory],
                 limits: Limits, today: str) -> None:
        self.original = original
        self.live = live
        self.fixed = fixed
        self.limits = limits
        self.today = today
        self.created: set[str] = set()
        self.fates: dict[str, Fate] = {}
        # Where a memory this plan created, then merged away, went: what was merged into it follows on.
        self.forwards: dict[str, str] = {}
        self.verdicts: dict[str, tuple[str, str]] = {}
        self.events: dict[str, list[str]] = {}
        self.notes: list[str] = []
        self.touched: set[str] = set()

    def event(self, name: str, text: str) -> None:
        self.events.setdefault(name, []).append(text)

    def fits(self, memory: Memory) -> bool:
        return len(render_memory(memory)) <= self.limits.max_file_bytes

    def remove(self, name: str, fate: Fate) -> None:
        del self.live[name]
        if name in self.created:
            self.created.discard(name)  # a file this plan would create and then drop is never created
            if fate.target is not None:
                self.forwards[name] = fate.target
        else:
            self.fates[name] = fate

    def absorb(self, target: str, sources: list[str], verdict: str, why: str) -> list[str]:
        """Merge ``sources`` into ``target`` (facts kept, oldest ``created``); returns the ones merged.

        A source of the other visibility is merged only when the target already carries all it
        says (see ``dedupe.mergeable``): a merge never publishes nor hides anything.
        """
        merged = self.live[target]
        taken: list[str] = []
        for source in sources:
            candidate = merge(merged, [self.live[source]])
            if not self.fits(candidate):
                self.event(target, f"could not absorb {source}: the merged file would pass the size bound")
                continue
            merged = candidate
            taken.append(source)
        if not taken:
            return []
        self.live[target] = merged
        self.touched.add(target)
        for source in taken:
            self.remove(source, Fate(verdict, "merged", f"{why}; merged into {target}", target))
        self.event(target, f"absorbed {short_list(taken)} ({why})")
        return taken


def merge(target: Memory, others: list[Memory]) -> Memory:
    """Target's lines first, then each distinct fact line (and description) of the others; oldest created.

    The result keeps the target's visibility: callers merge within one visibility, or a private
    memory whose every line the safe target already carries.
    """
    base = [raw for raw, _ in fact_lines(target)] if not target.body.strip() else target.body.rstrip("\n").split("\n")
    lines = list(base)
    seen = {key for _, key in fact_lines(target)} | {fact_key(target.description)}
    for other in others:
        # An absorbed description stays readable (and searchable) in the merged memory.
        for raw, key in [(f"- {other.description}", fact_key(other.description)), *fact_lines(other)]:
            if key and key not in seen:
                seen.add(key)
                lines.append(raw)
    if len(lines) == len(base):
        return target  # every fact was already there: the target stays byte for byte as it was
    created = min((m.created for m in [target, *others] if m.created), default=None)
    expires: str | None = None
    if all(m.expires for m in [target, *others]):
        expires = max(m.expires for m in [target, *others] if m.expires)
    modified = max((m for m in [target, *others]), key=lambda m: newness(m, "")).modified
    from ..store.evidence import MAX_CITES, unique

    return target.with_changes(
        body=canonical_body("\n".join(lines)),
        created=created,
        expires=expires,
        modified=modified or target.modified,
        # The code each absorbed fact rests on goes with it.
        evidence=unique(c for m in [target, *others] for c in m.evidence)[:MAX_CITES],
    )


def canonical_body(body: str) -> str:
    """The body exactly as it reads back after ``render_memory`` and ``parse_memory``."""
    body = body.replace("\r\n", "\n").strip("\n")
    return body + "\n" if body else ""


def canonical(memory: Memory) -> Memory:
    """The memory with its body as it reads back; the memory itself when it already does (most do)."""
    body = canonical_body(memory.body)
    return memory if body == memory.body else memory.with_changes(body=body)
