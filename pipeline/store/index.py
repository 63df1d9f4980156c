"""The deterministic ``MEMORY.md`` index of a root, and its capacity check."""

from __future__ import annotations

from ..frozen import Frozen
from .memory import Memory
from .state import Limits

HEADER = "# Memory Index\n"
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


def render_index(memories: dict[str, Memory], *, mirror: bool) -> bytes:
    """Sorted by file name. The mirror index lists only safe memories, never the marker."""
    items = list(memories.items())
    last = _LAST.get(mirror)
    # The same (immutable) Memory objects under the same names render the same bytes: a write renders
    # each index for its post-state, then checks both again, from the very same mapping.
    if last is not None and last[0] is memories and last[1] == items:
        return last[2]
    marker = not mirror
    lines = [_line(name, memories[name], marker) for name in sorted(memories) if marker or memories[name].is_safe]
    text = HEADER + ("\n" + "\n".join(lines) + "\n" if lines else "")
    data = text.encode("utf-8")
    _LAST[mirror] = (memories, items, data)
    return data


# The last rendering of each index: the mapping it came from (held, so its id is never reused), its
# items as they were (compared by identity, element by element, so a mutated mapping misses), the bytes.
_LAST: dict[bool, tuple[dict[str, Memory], list[tuple[str, Memory]], bytes]] = {}


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


def capacity(index: bytes, limits: Limits) -> Capacity:
    lines = sum(1 for line in index.decode("utf-8").splitlines() if line.startswith("- "))
    return Capacity(lines, len(index), limits.index_lines, limits.index_bytes)
