"""Screens: rules searched together first, as one RE2 program, so that one search answers for many.

A screen is the alternation of its members' patterns: it matches where any of them does, so where it
matches nowhere none of them can, and none needs its own search. Where it does, its first match starts
where the first match of any member starts, and no member's first match starts earlier: each member is
searched from there. What a scan finds never changes; only how many searches it takes. Most members of
the shipped screen are shapes (national ids, card numbers) that few notes hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import ConfigError
from .model import Rule
from .prefilter import Gate

Finder = Callable[[bytes, int, int], list[tuple[int, int]]]


def _everywhere(data: bytes, pos: int, endpos: int) -> list[tuple[int, int]]:
    """A screen that could not be built: its members are searched as if it had matched at the start."""
    return [(0, 0)]


class Screens:
    """The screens a rule set's rules name (those with two members or more), each compiled on first use."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = rules
        named: dict[str, list[int]] = {}
        for index, rule in enumerate(rules):
            if rule.screen:
                named.setdefault(rule.screen, []).append(index)
        # Each screen's members (rule indices, in file order), which screen a rule belongs to, and each
        # screen's match call.
        self.members = [tuple(indices) for indices in named.values() if len(indices) > 1]
        self.of = {index: screen for screen, indices in enumerate(self.members) for index in indices}
        self._finders: list[Finder | None] = [None] * len(self.members)

    def __bool__(self) -> bool:
        return bool(self.of)

    def starts(self, run: list[int], data: bytes, needs: Callable[[], list[Gate | None]]) -> dict[int, int]:
        """Where each screened rule of ``run`` is searched from: -1 where its screen matches nowhere. A
        screen with one member to run is not searched: that member's own search costs less."""
        counts: dict[int, int] = {}
        of = self.of
        for index in run:
            screen = of.get(index)
            if screen is not None:
                counts[screen] = counts.get(screen, 0) + 1
        out: dict[int, int] = {}
        for screen, count in counts.items():
            if count < 2:
                continue
            find = self._finders[screen] or self.finder(screen, needs())
            start = find(data, 0, len(data))[0][0]  # -1: no match
            for index in self.members[screen]:
                out[index] = start
        return out

    def finder(self, screen: int, needs: list[Gate | None]) -> Finder:
        """The screen's match call: its members' patterns (their outlines, where they have one: an outline
        matches wherever its pattern does) as one alternation that captures nothing."""
        from .patterns import compile_pattern, pattern_source, span_finder

        parts = []
        for index in self.members[screen]:
            gate = needs[index]
            source = gate.needs.outline if gate is not None and gate.needs.outline else ""
            parts.append(f"(?:{source or pattern_source(self._rules[index].pattern)})")
        find: Finder = _everywhere
        try:
            find = span_finder(compile_pattern("|".join(parts), "privacy screen", capture=False))
        except ConfigError:  # larger than RE2 takes: each member is then searched on its own
            pass
        self._finders[screen] = find
        return find
