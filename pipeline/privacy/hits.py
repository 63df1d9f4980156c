"""A rule's hits in a text, and what a scan reports of them: one rule per span, lines and columns.

A hit is one unallowed match of one rule by byte span; ``dedupe`` keeps one rule per span (a specific
rule before a by-shape one) and ``findings`` turns what is kept into findings at 1-based lines and
columns, counted in characters without rescanning the text per hit.
"""

from __future__ import annotations

from bisect import bisect_right

from ..frozen import Frozen
from .model import Finding, Rule


class Hit(Frozen):
    """One unallowed match of one rule, by byte span (immutable)."""

    __slots__ = ("rule", "start", "end", "preview", "how")
    rule: Rule
    start: int
    end: int
    preview: str
    how: str  # the reading of the text the hit was found in (``views``); "" for the text as written

    def __init__(self, rule: Rule, start: int, end: int, preview: str, how: str = "") -> None:
        self._set(rule=rule, start=start, end=end, preview=preview, how=how)


class Positions:
    """Maps UTF-8 byte offsets to (line, column), both 1-based, without rescanning per hit."""

    def __init__(self, text: str, data: bytes) -> None:
        self._text = text
        self._data = data
        self._ascii = len(text) == len(data)
        self._newlines: list[int] | None = None

    def char_offsets(self, byte_offsets: list[int]) -> dict[int, int]:
        """Convert many offsets in one forward pass, so non-ASCII text stays linear."""
        if self._ascii:
            return {b: b for b in byte_offsets}
        out: dict[int, int] = {}
        last_b = last_c = 0
        for b in sorted(set(byte_offsets)):
            last_c += len(self._data[last_b:b].decode("utf-8", "replace"))
            last_b = b
            out[b] = last_c
        return out

    def line_col(self, char_offset: int) -> tuple[int, int]:
        if self._newlines is None:
            table: list[int] = []
            find = self._text.find
            pos = find("\n")
            while pos != -1:
                table.append(pos)
                pos = find("\n", pos + 1)
            self._newlines = table
        line_index = bisect_right(self._newlines, char_offset - 1)
        line_start = self._newlines[line_index - 1] + 1 if line_index else 0
        return line_index + 1, char_offset - line_start + 1


def specific_credential(rule: Rule) -> bool:
    return rule.category == "credential" and not rule.fallback


def inside(hit: Hit, spans: list[tuple[int, int]]) -> bool:
    return any(start <= hit.start and hit.end <= end for start, end in spans)


def dedupe(hits: list[Hit], order: dict[str, int]) -> list[Hit]:
    """Keep one rule per span (a specific rule before a fallback, then file ``order``, so a user's own
    rule names what it knows); drop fallback hits overlapping a specific one."""
    by_span: dict[tuple[int, int], Hit] = {}
    for hit in sorted(hits, key=lambda h: (h.rule.fallback, order[h.rule.id])):
        by_span.setdefault((hit.start, hit.end), hit)
    kept = sorted(by_span.values(), key=lambda h: (h.start, h.end))
    specific = [h for h in kept if not h.rule.fallback]
    if len(specific) == len(kept):
        return kept
    starts = [h.start for h in specific]
    # Running maximum of ends: a hit overlaps some specific hit that starts before its end
    # exactly when the furthest such end lies past its start.
    reach: list[int] = []
    for h in specific:
        reach.append(max(h.end, reach[-1]) if reach else h.end)
    out = []
    for hit in kept:
        if hit.rule.fallback:
            index = bisect_right(starts, hit.end - 1)
            if index and reach[index - 1] > hit.start:
                continue
        out.append(hit)
    return out


def findings(hits: list[Hit], text: str, data: bytes, file: str) -> list[Finding]:
    """The hits as findings: rule, line and column (1-based, in characters), sorted by place."""
    positions = Positions(text, data)
    offsets = positions.char_offsets([h.start for h in hits])
    findings = []
    for hit in hits:
        line, column = positions.line_col(offsets[hit.start])
        findings.append(
            Finding(
                rule_id=hit.rule.id,
                category=hit.rule.category,
                description=f"{hit.rule.description} ({hit.how})" if hit.how else hit.rule.description,
                file=file,
                line=line,
                column=column,
                preview=hit.preview,
            )
        )
    findings.sort(key=lambda f: (f.line, f.column, f.rule_id))
    return findings
