"""What the memory tool's model sees of a memory file, and the file that holds what it wrote.

The model works on plain text. A memory file is memfold's frontmatter followed by that text, byte
for byte: ``text_of`` returns everything after the frontmatter (CRLF read as LF, as every reader
does), and ``compose`` writes the frontmatter and then the text exactly as given, so the next
``view`` shows what the model wrote, blank lines at either end included. The frontmatter of a file
the model created is derived (``derived``): the name from the path, the description from the first
line that says something, the type ``reference`` unless the text opens with a frontmatter block of
its own naming another type, and visibility private. Later edits keep every field a person set and
re-derive only the ones still equal to what the old text derived.
"""

from __future__ import annotations

import re

from ..errors import InputRejected
from ..store.memory import TYPES, Memory, render_memory, sanitize_line, split_frontmatter

DEFAULT_TYPE = "reference"
MAX_DESCRIPTION = 160
# Control characters a text may not carry: everything below U+0020 but tab and newline, DEL, and
# lone surrogates (a JSON string can hold one; no file can).
_REFUSED = re.compile("[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")
_MARKUP = re.compile(r"^(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)+")
_TAG_ONLY = re.compile(r"^</?[A-Za-z][\w.:-]*\s*/?>$")


def text_of(data: bytes) -> str:
    """The text of a memory file: everything after its frontmatter (the file parsed before, so it has one)."""
    text = data.decode("utf-8").replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    return split_frontmatter(text, "<memory>")[1]


def compose(memory: Memory, text: str) -> bytes:
    """The memory file: ``memory``'s frontmatter, then ``text`` exactly (``memory.body`` is not used)."""
    return render_memory(memory.with_changes(body="")) + text.encode("utf-8")


def check_text(text: str, field: str) -> None:
    """Refuse what no memory file can hold as written: a carriage return, another control character,
    a lone surrogate. The message names the line, never the text."""
    found = _REFUSED.search(text)
    if found is None:
        return
    line = text.count("\n", 0, found.start()) + 1
    ch = found.group()
    if ch == "\r":
        raise InputRejected(f"{field} holds a carriage return (line {line}); memory files break lines with "
                            "\\n alone: send the text with \\n line breaks", code="memtool.text")
    what = "a lone surrogate" if "\ud800" <= ch <= "\udfff" else f"the control character U+{ord(ch):04X}"
    raise InputRejected(f"{field} holds {what} (line {line}); a memory is text: tab and \\n are the only "
                        "control characters it may hold", code="memtool.text")


def derived(name: str, text: str) -> tuple[str, str]:
    """(description, type) of a memory file whose frontmatter memfold writes for the model."""
    mtype, description, rest = DEFAULT_TYPE, "", text
    head = _own_frontmatter(text)
    if head is not None:
        fields, rest = head
        if fields.get("type") in TYPES:
            mtype = str(fields["type"])
        given = fields.get("description")
        if isinstance(given, str):
            description = _cut(sanitize_line(given))
    if not description:
        description = _first_line(rest) or f"{name.removesuffix('.md')} (no text yet)"
    return description, mtype


def _own_frontmatter(text: str) -> tuple[dict[str, object], str] | None:
    """The fields of a frontmatter block the text opens with, and the text after it; None without one."""
    if not text.startswith("---\n"):
        return None
    try:
        head, rest = split_frontmatter(text, "<text>")
    except InputRejected:
        return None
    import yaml

    try:
        fields = yaml.load(head, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (yaml.YAMLError, ValueError):
        return None
    return (fields, rest) if isinstance(fields, dict) else None


def _first_line(text: str) -> str:
    """The first line that says something, without its Markdown list or heading marks."""
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("```") or _TAG_ONLY.match(line) or not any(c.isalnum() for c in line):
            continue
        cleaned = sanitize_line(_MARKUP.sub("", line))
        if cleaned:
            return _cut(cleaned)
    return ""


def _cut(line: str) -> str:
    if len(line) <= MAX_DESCRIPTION:
        return line
    cut = line[:MAX_DESCRIPTION - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > MAX_DESCRIPTION // 2 else cut).rstrip() + "…"


def follow(name: str, memory: Memory, old_text: str, new_text: str) -> tuple[str, str]:
    """(description, type) of the memory file ``name`` after an edit: a field still equal to what the
    old text derived follows the new text; a field someone set otherwise (``memfold update``, a
    consolidation) is kept."""
    old_description, old_type = derived(name, old_text)
    new_description, new_type = derived(name, new_text)
    return (new_description if memory.description == old_description else memory.description,
            new_type if memory.type == old_type else memory.type)


def replace_once(text: str, old: str, new: str, path: str) -> tuple[str, int]:
    """``text`` with the one occurrence of ``old`` replaced, and the index of the line it starts on.

    Zero or several occurrences change nothing; the message says which lines matched, not the text.
    """
    if not old:
        raise InputRejected(f"old_str is empty; nothing in {path} was replaced: give the exact text to replace",
                            code="memtool.no-match")
    first = text.find(old)
    if first == -1:
        raise InputRejected(f"No replacement was performed: old_str did not appear verbatim in {path}. View the "
                            "file and copy the text exactly, whitespace and line breaks included",
                            code="memtool.no-match")
    starts = [first]
    while len(starts) <= 20 and (found := text.find(old, starts[-1] + 1)) != -1:
        starts.append(found)
    if len(starts) > 1:
        lines = sorted({text.count("\n", 0, at) + 1 for at in starts[:20]})
        many = f"{len(starts)}" if len(starts) <= 20 else "more than 20"
        raise InputRejected(f"No replacement was performed: old_str appears {many} times in {path} (lines "
                            f"{', '.join(map(str, lines))}); include more of the surrounding text so that it "
                            "matches exactly once", code="memtool.several-matches")
    return text[:first] + new + text[first + len(old):], text.count("\n", 0, first)


def lines_of(text: str) -> list[str]:
    """The lines ``insert`` counts: split at \\n, without the empty tail a final newline leaves."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def insert_at(text: str, line: int, insert: str, path: str) -> str:
    """``insert`` (its trailing newlines dropped) as a line of its own after line ``line`` (0: before the
    first); the result ends with a newline."""
    lines = lines_of(text)
    if not 0 <= line <= len(lines):
        raise InputRejected(f"insert_line {line} is outside {path}, which has {len(lines)} lines: use 0 to insert "
                            f"before the first line up to {len(lines)} to insert after the last",
                            code="memtool.insert-line")
    lines.insert(line, insert.rstrip("\n"))
    return "\n".join(lines) + "\n"
