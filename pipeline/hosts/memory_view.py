"""What ``view`` shows the model: a file with line numbers, or the folder's files with their sizes.

The shapes are the ones the memory tool's model knows: a number right-aligned in six columns, a tab,
then the line; a listing line per file, the size, a tab, then the path. A listing is bounded: at most
``LIST_PAGE`` files a call, and the last line says how to see the next ones (``view_range`` pages a
listing the way it pages a file).
"""

from __future__ import annotations

from ..errors import InputRejected
from .memory_paths import ROOT, file_path

NUMBER_WIDTH = 6
LIST_PAGE = 200
SNIPPET_CONTEXT = 2


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{number:>{NUMBER_WIDTH}}\t{line}" for number, line in enumerate(lines, first))


def view_range(value: object, total: int, what: str) -> tuple[int, int] | None:
    """(first, last), 1-based and inclusive, of a ``view_range`` [first, last] (last -1: to the end)."""
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2 or not all(type(v) is int for v in value)):
        raise InputRejected("view_range must be two whole numbers [first, last]; last may be -1 for the end",
                            code="memtool.view-range")
    first, last = value
    end = total if last == -1 else last
    if first < 1 or (last != -1 and last < first):
        raise InputRejected(f"view_range [{first}, {last}] is not a range of {what}: first starts at 1 and last "
                            "is at least first, or -1 for the end", code="memtool.view-range")
    if first > max(total, 1):
        raise InputRejected(f"view_range starts at {first} but there are only {total} {what}",
                            code="memtool.view-range")
    return first, min(end, total)


def file_view(path: str, text: str, wanted: object) -> str:
    lines = text.split("\n")
    span = view_range(wanted, len(lines), "lines")
    first, last = span if span is not None else (1, len(lines))
    return f"Here's the content of {path} with line numbers:\n" + numbered(lines[first - 1:last], first)


def snippet(path: str, text: str, line: int) -> str:
    """The lines around 0-based ``line`` of the edited text, numbered."""
    lines = text.split("\n")
    first = max(0, line - SNIPPET_CONTEXT)
    last = min(len(lines), line + SNIPPET_CONTEXT + 1)
    return (f"The memory file {path} has been edited. Here is a snippet of it with line numbers:\n"
            + numbered(lines[first:last], first + 1))


def size_text(size: int) -> str:
    """1023 -> 1023B, 1536 -> 1.5K, 65536 -> 64K."""
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return f"{size}B"


def listing(sizes: dict[str, int], wanted: object) -> str:
    """The folder: its files by name with the size of their text, a page of ``LIST_PAGE`` at most."""
    names = sorted(sizes)
    span = view_range(wanted, len(names), "files")
    first, last = span if span is not None else (1, len(names))
    last = min(last, first + LIST_PAGE - 1)
    lines = [f"Here are the memory files in {ROOT} (one flat folder, no directories), with the size of each:",
             f"{size_text(sum(sizes.values()))}\t{ROOT}"]
    lines.extend(f"{size_text(sizes[name])}\t{file_path(name)}" for name in names[first - 1:last])
    if first > 1 or last < len(names):
        more = (f"; view {ROOT} with view_range [{last + 1}, {last + LIST_PAGE}] for the next ones"
                if last < len(names) else "")
        lines.append(f"(files {first}-{last} of {len(names)}{more})")
    return "\n".join(lines)
