"""What every match of a rule's pattern must contain, read from the pattern itself.

A scan runs a rule's pattern only on texts that hold what any match of it needs, so a rule that
cannot match a text is neither compiled nor run on it. The needs are lower bounds, never guesses:

- ``chars``: the non-letter ASCII characters every match contains (the ``/`` and ``:`` of an Asana
  token); letters are left out, since a case-insensitive flag may fold them.
- ``digits``: how many ASCII digits every match contains at least.
- ``clusters``: for each glue set in ``GLUES``, how many digits every match holds in one cluster,
  a run of digits joined by single glue characters (``4111 1111 1111 1111`` is a cluster of 16
  digits under ``" -"``; ``2026-07-17`` one of 8).

A pattern with Unicode classes (``\\p{Lu}``) also gets an outline: the same pattern with each class
widened to its ASCII letters plus every non-ASCII character, so it matches wherever the pattern does.
RE2 compiles an outline in a fraction of a millisecond where the Unicode tables cost it up to 25 ms,
so the outline runs first and the pattern is compiled only for a text the outline matches.

The pattern is read with the standard library's parser, which knows the syntax RE2 shares with it.
A pattern it cannot read, or that uses what RE2 reads differently (POSIX classes), gets no needs:
its rule runs on every text, as before. Digits here are ASCII digits, as RE2's ``\\d`` and ``[0-9]``
are.
"""

from __future__ import annotations

import re

from ..frozen import Frozen, FrozenValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GLUES = ("", " -", " -./")
_DIGITS = frozenset("0123456789")
_DIGIT_BYTES = b"0123456789"
# RE2's Unicode classes, which the standard parser does not know: read as a word class, so they
# count as neither digit nor glue (a lower bound stays one).
_UNICODE_CLASS = re.compile(r"\\[pP](?:\{[^}]*\}|[A-Za-z])")
# Each byte mapped to what a cluster sees: a digit stays, a glue character becomes "-", anything else a space.
_VIEWS = tuple(bytes(c if 48 <= c <= 57 else 45 if chr(c) in glue else 32 for c in range(256)) for glue in GLUES)


class Needs(FrozenValue):
    """What any match of one pattern contains (immutable)."""

    __slots__ = ("chars", "digits", "clusters", "outline")
    chars: bytes
    digits: int
    clusters: tuple[int, ...]
    outline: str

    def __init__(self, chars: bytes, digits: int, clusters: tuple[int, ...], outline: str = "") -> None:
        self._set(chars=chars, digits=digits, clusters=clusters, outline=outline)

    @property
    def trivial(self) -> bool:
        return not self.chars and not self.digits and not any(self.clusters) and not self.outline


NONE = Needs(b"", 0, (0,) * len(GLUES))


def cluster_needs(clusters: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The (glue index, digits) pairs that decide whether a text has ``clusters`` (digits per glue set).

    Each glue set holds the one before it, and a join of two digits by one glue character stays a join
    under a larger set, so a text's longest cluster never shrinks along ``GLUES``: a need no larger than
    one before it is met whenever that one is, and is left out (``(4, 4, 4)`` is decided by ``(0, 4)``).
    """
    out: list[tuple[int, int]] = []
    most = 0
    for index, count in enumerate(clusters):
        if count > most:
            out.append((index, count))
            most = count
    return tuple(out)


class Gate(Frozen):
    """A rule's needs and its compiled outline (any object with ``search``), checked before it runs."""

    __slots__ = ("needs", "outline")
    _hidden = ("outline",)
    needs: Needs
    outline: Any

    def __init__(self, needs: Needs, outline: Any = None) -> None:
        self._set(needs=needs, outline=outline)


class Features:
    """The facts of one text the needs are checked against, each found on first ask."""

    __slots__ = ("_data", "_digits", "_clusters")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._digits = -1
        self._clusters: list[int] = [-1] * len(GLUES)

    def digits(self) -> int:
        if self._digits < 0:
            self._digits = len(self._data) - len(self._data.translate(None, _DIGIT_BYTES))
        return self._digits

    def cluster(self, index: int) -> int:
        if self._clusters[index] < 0:
            view = self._data.translate(_VIEWS[index])
            if GLUES[index]:
                # Two glue characters side by side end a cluster; then each cluster's digits are its length.
                view = view.replace(b"--", b" ").translate(None, b"-")
            self._clusters[index] = max(map(len, view.split()), default=0)
        return self._clusters[index]

    def opens(self, gate: Gate, compiled: bool) -> bool:
        """Whether the text holds what the gate's rule needs. The outline only stands in for a pattern
        not yet ``compiled``: once it is, the pattern's own search is as cheap as the outline's."""
        if not self.meets(gate.needs):
            return False
        return compiled or gate.outline is None or gate.outline.search(self._data) is not None

    def meets(self, needs: Needs) -> bool:
        data = self._data
        for ch in needs.chars:
            if ch not in data:
                return False
        if needs.digits and self.digits() < needs.digits:
            return False
        for index, count in enumerate(needs.clusters):
            if count and self.cluster(index) < count:
                return False
        return True


class _Node:
    """Lower bounds for one piece of a pattern under one glue set.

    ``through``: every match is made of digits and glue with no two glue characters side by side;
    ``size``: its digits then. ``head``/``tail``: its cluster touching the start / end;
    ``best``: its largest cluster. ``lead``/``trail``: a match may start / end with a glue character.
    """

    __slots__ = ("through", "size", "head", "tail", "best", "lead", "trail")

    def __init__(self, through: bool, size: int, head: int, tail: int, best: int, lead: bool,
                 trail: bool) -> None:
        self.through, self.size, self.head, self.tail, self.best = through, size, head, tail, best
        self.lead, self.trail = lead, trail


_EMPTY = _Node(True, 0, 0, 0, 0, False, False)
_BREAK = _Node(False, 0, 0, 0, 0, True, True)
_DIGIT = _Node(True, 1, 1, 1, 1, False, False)
_GLUE = _Node(True, 0, 0, 0, 0, True, True)


def _then(a: _Node, b: _Node) -> _Node:
    joined = not (a.trail and b.lead)
    # A through piece without digits may be empty or glue only: the other piece's edge shows through.
    lead = a.lead or (a.through and not a.size and b.lead)
    trail = b.trail or (b.through and not b.size and a.trail)
    if a.through and b.through and joined:
        size = a.size + b.size
        return _Node(True, size, size, size, size, lead, trail)
    best = max(a.best, b.best, a.tail + b.head if joined else 0)
    head = a.size + b.head if a.through and joined else a.head
    tail = a.tail + b.size if b.through and joined else b.tail
    return _Node(False, 0, head, tail, best, lead, trail)


def _either(nodes: list[_Node]) -> _Node:
    return _Node(all(n.through for n in nodes), min(n.size for n in nodes), min(n.head for n in nodes),
                 min(n.tail for n in nodes), min(n.best for n in nodes), any(n.lead for n in nodes),
                 any(n.trail for n in nodes))


def _repeat(node: _Node, low: int, high: int) -> _Node:
    # Two copies side by side show whether repeating keeps the run whole (``[ -]+`` does not).
    twice = _then(node, node) if high >= 2 else node
    if twice.through:
        size = node.size * low
        return _Node(True, size, size, size, size, node.lead, node.trail)
    if low == 0:
        return _BREAK
    out = node if low == 1 else twice
    return _Node(False, 0, out.head, out.tail, out.best, node.lead, node.trail)


class _Reader:
    """Walks the standard parser's tree; every unknown construct is read as a break."""

    def __init__(self, parser: Any, glue: str) -> None:
        self._c = parser  # the parser's opcode constants
        self._glue = frozenset(glue)

    def chars(self, op: Any, av: Any) -> frozenset[str] | None:
        """The characters a one-character item matches, when they are few and known."""
        c = self._c
        if op is c.LITERAL:
            return frozenset(chr(av))
        if op is c.IN:
            out: set[str] = set()
            for item_op, item_av in av:
                if item_op is c.LITERAL:
                    out.add(chr(item_av))
                elif item_op is c.RANGE and item_av[1] - item_av[0] < 128:
                    out.update(chr(x) for x in range(item_av[0], item_av[1] + 1))
                elif item_op is c.CATEGORY and item_av is c.CATEGORY_DIGIT:
                    out.update(_DIGITS)
                else:
                    return None  # NEGATE, other categories
            return frozenset(out)
        if op is c.CATEGORY and av is c.CATEGORY_DIGIT:
            return _DIGITS
        return None

    def sequence(self, items: Any) -> _Node:
        out = _EMPTY
        for op, av in items:
            out = _then(out, self.item(op, av))
        return out

    def item(self, op: Any, av: Any) -> _Node:
        c = self._c
        if op is c.AT:
            return _EMPTY
        if op is c.SUBPATTERN:
            return self.sequence(av[-1])
        if op is c.BRANCH:
            return _either([self.sequence(branch) for branch in av[1]])
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            return _repeat(self.sequence(av[2]), int(av[0]), int(av[1]))
        chars = self.chars(op, av)
        if chars is None:
            return _BREAK
        if chars <= _DIGITS:
            return _DIGIT
        if chars <= self._glue:
            return _GLUE
        return _BREAK


def _digits(c: Any, items: Any) -> int:
    total = 0
    for op, av in items:
        if op is c.SUBPATTERN:
            total += _digits(c, av[-1])
        elif op is c.BRANCH:
            total += min(_digits(c, branch) for branch in av[1])
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            total += int(av[0]) * _digits(c, av[2])
        else:
            chars = _Reader(c, "").chars(op, av)
            total += chars is not None and chars <= _DIGITS
    return total


def _required(c: Any, items: Any) -> set[str]:
    out: set[str] = set()
    for op, av in items:
        if op is c.LITERAL:
            ch = chr(av)
            if ch.isascii() and not ch.isalpha():
                out.add(ch)
        elif op is c.SUBPATTERN:
            out |= _required(c, av[-1])
        elif op is c.BRANCH:
            out |= set.intersection(*(_required(c, branch) for branch in av[1]))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and int(av[0]) >= 1:
            out |= _required(c, av[2])
    return out


def needs(pattern: str) -> Needs:
    """The needs of an RE2 pattern; ``NONE`` when the pattern cannot be read safely."""
    widened = outline(pattern)
    if "[:" in pattern or "\\Q" in pattern or "\\C" in pattern:
        # POSIX classes and quoting: RE2 reads them differently from the standard parser
        return Needs(b"", 0, NONE.clusters, widened)
    try:
        import importlib

        # The standard library's own pattern reader (``sre_parse`` before 3.11).
        constants = importlib.import_module("re._constants")
        tree = importlib.import_module("re._parser").parse(_UNICODE_CLASS.sub(r"\\w", pattern))
    except Exception:
        return Needs(b"", 0, NONE.clusters, widened)
    items = list(tree)
    chars = "".join(sorted(_required(constants, items) - _DIGITS))
    return Needs(chars.encode("ascii"), _digits(constants, items),
                 tuple(_Reader(constants, glue).sequence(items).best for glue in GLUES), widened)


NEEDS_FILE = "privacy-needs.json"
_NON_ASCII = "\\x{80}-\\x{10FFFF}"
_ANY = "\\x{0}-\\x{10FFFF}"
# What a Unicode class holds among ASCII characters; a class not named here is widened to everything.
_ASCII_PART = {"Lu": "A-Z", "Ll": "a-z", "L": "A-Za-z", "Lt": "", "Lm": "", "Lo": ""}


def _widened(name: str) -> str:
    """Members of a character class holding every character the Unicode class ``name`` holds."""
    if name.startswith("^") or name not in _ASCII_PART:
        return _ANY
    return _ASCII_PART[name] + _NON_ASCII


def outline(pattern: str) -> str:
    """``pattern`` with its Unicode classes widened (see the module text); "" when it has none or one
    sits in a negated class, where widening would narrow what the class matches."""
    out: list[str] = []
    i, n, depth, negated, widened = 0, len(pattern), 0, False, False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in "pP":
                if i + 2 < n and pattern[i + 2] == "{":
                    end = pattern.find("}", i + 3)
                    if end < 0:
                        return ""
                    name, i = pattern[i + 3:end], end + 1
                else:
                    name, i = pattern[i + 2:i + 3], i + 3
                if depth and negated:
                    return ""
                members = _widened(name) if nxt == "p" else _ANY
                out.append(members if depth else f"[{members}]")
                widened = widened or members != _ANY  # all-widened outlines would match anything
                continue
            if nxt == "Q":
                return ""  # quoted text would need its own reading
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if depth:
            if ch == "[" and pattern.startswith("[:", i):
                return ""  # POSIX classes inside a class
            if ch == "]" and out and out[-1] not in ("[", "[^"):
                depth = 0
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            depth = 1
            negated = pattern.startswith("[^", i)
            out.append("[^" if negated else "[")
            i += 2 if negated else 1
            continue
        out.append(ch)
        i += 1
    return "".join(out) if widened else ""


def as_row(value: Needs) -> list[Any]:
    return [value.chars.decode("ascii"), value.digits, list(value.clusters), value.outline]


def from_row(row: Any) -> Needs | None:
    """A stored row, or None when it is not one this version writes."""
    try:
        chars, digits, clusters, widened = row
        if len(clusters) != len(GLUES):
            return None
        return Needs(str(chars).encode("ascii"), int(digits), tuple(int(n) for n in clusters), str(widened))
    except (TypeError, ValueError, UnicodeEncodeError):
        return None


def table(patterns: list[str]) -> dict[str, list[Any]]:
    """The stored form of the needs of ``patterns``, by pattern text (what ``NEEDS_FILE`` holds)."""
    return {pattern: as_row(needs(pattern)) for pattern in sorted(set(patterns))}
