"""The deterministic ``MEMORY.md`` index of a root, and its capacity check."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Set as AbstractSet

from ..frozen import Frozen
from ..fsutil import sha256_bytes
from .memory import Memory
from .state import Limits

HEADER = "# Memory Index\n"
_HEADER = HEADER.encode("ascii")
PRIVATE_MARK = "(harness only)"
MAX_DESCRIPTION = 150


def _escape_title(title: str) -> str:
    return title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def index_line(file: str, memory: Memory, *, private_marker: bool) -> str:
    description = memory.description
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    line = f"- [{_escape_title(memory.name)}]({file}) — {description}"
    if private_marker and not memory.is_safe:
        line += f" {PRIVATE_MARK}"
    return line


# Each memory's line, by file and index, while the (immutable) Memory it was made from is the one asked
# about: the post-state check renders both indexes again, and a long-lived process renders them per
# write, from mostly the same Memory objects. Each entry holds its object, so the id is never reused.
_LINES: dict[tuple[str, bool], tuple[Memory, str]] = {}
_LINES_MAX = 50_000


def _line(file: str, memory: Memory, private_marker: bool) -> str:
    hit = _LINES.get((file, private_marker))
    if hit is not None and hit[0] is memory:
        return hit[1]
    line = index_line(file, memory, private_marker=private_marker)
    if len(_LINES) >= _LINES_MAX:
        _LINES.clear()
    _LINES[(file, private_marker)] = (memory, line)
    return line


def _text(names: list[str], lines: dict[str, str]) -> bytes:
    # One join in C: a line per listed memory, in the order of ``names``.
    return (HEADER + ("\n" + "\n".join(map(lines.__getitem__, names)) + "\n" if names else "")).encode("utf-8")


class IndexText:
    """One index as rendered: its memories' file names in order, each one's line, and the bytes.

    ``after`` renders the index of a state that differs from this one's in some named memories
    only, touching those lines (a sorted insert or delete for a name that comes or goes) and joining
    the rest as they were: a write costs its own memories plus one join, not a line per memory.
    Equal to ``render_index`` of the same memories (a test holds them together).
    """

    __slots__ = ("mirror", "names", "lines", "data", "_digest", "_encoded", "_count")
    mirror: bool
    names: list[str]  # sorted
    lines: dict[str, str]
    data: bytes

    def __init__(self, mirror: bool, names: list[str], lines: dict[str, str],
                 encoded: dict[str, bytes] | None = None, count: int | None = None) -> None:
        self.mirror, self.names, self.lines = mirror, names, lines
        self._count = count
        # Each line's UTF-8 bytes, once an update needed them: the next index is then a join of bytes
        # (encoding a whole index with its non-ASCII dashes costs more than the join itself).
        self._encoded = encoded
        if encoded is None:
            self.data = _text(names, lines)
        else:
            self.data = _HEADER + (b"\n" + b"\n".join(map(encoded.__getitem__, names)) + b"\n" if names else b"")
        self._digest: str | None = None
        _RECENT[:] = [self, *_RECENT[:3]]

    def count(self) -> int:
        """How many lines of ``data`` start with "- " once split as ``str.splitlines`` splits (what
        ``capacity`` counts), counted once per index and carried along by ``after``."""
        if self._count is None:
            self._count = _listed_lines(self.data.decode("utf-8"))
        return self._count

    def digest(self) -> str:
        """The sha256 of ``data``, hashed once (an index a write leaves as it was keeps it)."""
        if self._digest is None:
            self._digest = sha256_bytes(self.data)
        return self._digest

    def __repr__(self) -> str:
        return f"IndexText(mirror={self.mirror!r}, names={len(self.names)})"

    @classmethod
    def of(cls, memories: dict[str, Memory], *, mirror: bool) -> IndexText:
        marker = not mirror
        names = [name for name in sorted(memories) if marker or memories[name].is_safe]
        return cls(mirror, names, {name: _line(name, memories[name], marker) for name in names})

    def after(self, memories: dict[str, Memory], touched: list[str]) -> IndexText:
        """The index of ``memories``, which hold this index's memories except under ``touched``."""
        marker = not self.mirror
        names: list[str] | None = None
        lines = dict(self.lines)
        if self._encoded is None:
            self._encoded = {name: line.encode("utf-8") for name, line in lines.items()}
        encoded = dict(self._encoded)
        # The header holds no listed line and the lines are joined by "\n", so the count is a sum over
        # lines: the touched ones are taken out and put back.
        count = self._count
        for name in touched:
            memory = memories.get(name)
            listed = memory is not None and (marker or memory.is_safe)
            if listed == (name in lines) and not listed:
                continue
            if names is None:
                names = list(self.names)
            at = bisect_left(names, name)
            present = at < len(names) and names[at] == name
            if count is not None and present:
                count -= _listed_lines(lines[name])
            if listed:
                assert memory is not None
                line = lines[name] = _line(name, memory, marker)
                encoded[name] = line.encode("utf-8")
                if count is not None:
                    count += _listed_lines(line)
                if not present:
                    names.insert(at, name)
            else:
                del lines[name], encoded[name]
                del names[at]
        if names is None:
            _RECENT[:] = [self, *[made for made in _RECENT if made is not self][:3]]  # still in use
            return self
        return IndexText(self.mirror, names, lines, encoded, count)


# The indexes made last: ``capacity`` of their very bytes is their count.
_RECENT: list[IndexText] = []


def mirror_index(memories: dict[str, Memory], kept_lines: dict[str, str], kept: AbstractSet[str] = frozenset()
                 ) -> IndexText:
    """The mirror's index: the safe memories of the store, except names the mirror keeps as they are
    (``kept``: held back, in conflict), and each kept file's own line."""
    if not kept:
        return index_text(memories, mirror=True)
    names = sorted({name for name, memory in memories.items() if memory.is_safe and name not in kept} | set(kept_lines))
    return IndexText(True, names, {name: kept_lines[name] if name in kept_lines else _line(name, memories[name], False)
                                   for name in names})


def mirror_index_bytes(index: IndexText) -> bytes | None:
    """What the mirror holds as its index: nothing while it holds no memory file, so a mirror that was never
    written stays absent and never stands in the way of a teammate's first commit of one."""
    return index.data if index.names else None


def render_index(memories: dict[str, Memory], *, mirror: bool) -> bytes:
    """Sorted by file name. The mirror index lists only safe memories, never the marker."""
    return index_text(memories, mirror=mirror).data


def index_text(memories: dict[str, Memory], *, mirror: bool) -> IndexText:
    """``render_index`` with its lines, to update for the next state (``IndexText.after``)."""
    items = list(memories.items())
    last = _LAST.get(mirror)
    # The same (immutable) Memory objects under the same names render the same bytes: a write renders
    # each index for its post-state, then checks both again, from the very same mapping.
    if last is not None and last[0] is memories and last[1] == items:
        return last[2]
    index = IndexText.of(memories, mirror=mirror)
    _LAST[mirror] = (memories, items, index)
    return index


# The last rendering of each index: the mapping it came from (held, so its id is never reused), its
# items as they were (compared by identity, element by element, so a mutated mapping misses), the index.
_LAST: dict[bool, tuple[dict[str, Memory], list[tuple[str, Memory]], IndexText]] = {}


class Capacity(Frozen):
    """How full an index is, against its limits (immutable)."""

    __slots__ = ("lines", "bytes", "max_lines", "max_bytes")
    lines: int
    bytes: int
    max_lines: int
    max_bytes: int

    def __init__(self, lines: int, bytes: int, max_lines: int, max_bytes: int) -> None:
        self._set(lines=lines, bytes=bytes, max_lines=max_lines, max_bytes=max_bytes)

    @property
    def over(self) -> bool:
        return self.lines > self.max_lines or self.bytes > self.max_bytes

    def warning(self, root: str) -> str | None:
        if not self.over:
            return None
        return (
            f"the {root} index holds {self.lines} lines / {self.bytes} bytes, past its capacity of "
            f"{self.max_lines} lines / {self.max_bytes} bytes: run `memfold consolidate`"
        )


# What ``str.splitlines`` ends a line at besides "\n": an index holding none of them has its lines
# counted by a search in C.
_OTHER_LINE_ENDS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _listed_lines(text: str) -> int:
    if any(end in text for end in _OTHER_LINE_ENDS):
        return sum(1 for line in text.splitlines() if line.startswith("- "))
    return text.startswith("- ") + text.count("\n- ")


def capacity(index: bytes, limits: Limits) -> Capacity:
    rendered = next((made for made in _RECENT if made.data is index), None)
    lines = rendered.count() if rendered is not None else _listed_lines(index.decode("utf-8"))
    return Capacity(lines, len(index), limits.index_lines, limits.index_bytes)
