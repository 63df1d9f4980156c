"""Other tools' memory files read the way those tools read them: flat ``key: value`` frontmatter taken
literally, files without frontmatter described by their first line, names made valid without losing words.

Claude Code, pi's memory extensions and seed-style harnesses write frontmatter as text, line by line, and
read it back the same way: to them ``description: Note: use pnpm`` is valid, ``name: Yes`` is the word
"Yes" and ``# quick`` in a value is part of it. A YAML reader disagrees on all three, so a flat head is
read literally, and YAML is only asked about nested heads (``metadata:`` blocks) and values of fields
memfold does not know.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import InputRejected
from ..store.memory import TYPES, VISIBILITIES, Memory, is_memory_name, sanitize_line, split_frontmatter
from ..store.yamltext import load_yaml

_FLAT = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?$")
_TEXT_KEYS = ("name", "description", "type", "visibility", "created", "modified", "expires")
_TEXT_KEY_SET = frozenset(_TEXT_KEYS)
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}\s+|[-*+]\s+|>\s*)")
MAX_DESCRIPTION = 200


class SourceFile:
    """One file of another tool: its fields, body, and what reading it had to decide (immutable use)."""

    __slots__ = ("meta", "body", "notes")

    def __init__(self, meta: dict[str, Any], body: str, notes: list[str]) -> None:
        self.meta = meta
        self.body = body
        self.notes = notes


def decode(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRejected(f"not valid UTF-8 (byte {exc.start})", code="import.encoding") from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def read_source(text: str) -> SourceFile:
    """Fields and body of a file as its own tool reads it; no frontmatter is an empty mapping."""
    if not text.startswith("---\n"):
        return SourceFile({}, text, ["no frontmatter"])
    head, body = split_frontmatter(text, "source")
    lines = [line for line in head.split("\n") if line.strip()]
    meta = _lines(lines)
    return SourceFile(meta if meta is not None else _yaml(head), body, [])


def _lines(lines: list[str]) -> dict[str, Any] | None:
    """``key: value`` lines, and under a key without a value indented ``key: value`` lines (a mapping,
    like Claude Code's ``metadata:`` block) or ``- item`` lines (a list); None for any other shape."""
    meta: dict[str, Any] = {}
    parent: str | None = None
    for line in lines:
        if line[0] not in " \t":
            match = _FLAT.match(line)
            if match is None:
                return None
            key, raw = match.group(1), (match.group(2) or "").strip()
            parent = key if not raw else None
            meta[key] = None if not raw else _literal(raw) if key in _TEXT_KEYS else _value(raw)
            continue
        if parent is None:
            return None
        item = line.strip()
        child = _FLAT.match(item)
        if item.startswith("- ") and not isinstance(meta[parent], dict):
            meta[parent] = [*(meta[parent] or []), _literal(item[2:].strip())]
        elif child is not None and not isinstance(meta[parent], list):
            key, raw = child.group(1), (child.group(2) or "").strip()
            meta[parent] = {**(meta[parent] or {}), key: _literal(raw) if key in _TEXT_KEYS else _value(raw)}
        else:
            return None
    return meta


def _literal(raw: str) -> str:
    """A value as text: quotes the writer put around it are removed, nothing else is interpreted."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        try:
            value = json.loads(raw)
        except ValueError:
            return raw[1:-1]
        return value if isinstance(value, str) else raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def _value(raw: str) -> Any:
    """A field memfold does not know keeps its YAML type where YAML reads it, else its text."""
    import yaml

    try:
        value = load_yaml(raw) if raw else None
    except (yaml.YAMLError, ValueError):
        return raw
    return raw if value is None and raw else value


def _yaml(head: str) -> dict[str, Any]:
    import yaml

    try:
        meta = load_yaml(head)
    except (yaml.YAMLError, ValueError):
        raise InputRejected("frontmatter is neither flat 'key: value' lines nor valid YAML",
                            code="import.frontmatter") from None
    if not isinstance(meta, dict):
        raise InputRejected("frontmatter is not a mapping", code="import.frontmatter")
    return {str(k): v for k, v in meta.items()}


def first_line(body: str) -> str:
    """The first line with words, without Markdown heading, bullet or quote marks."""
    for line in body.split("\n"):
        text = sanitize_line(_HEADING.sub("", line))
        if text:
            return text
    return ""


def _text(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value  # what a flat head holds: read as text already
    import datetime as dt

    from ..store.memory import stamp

    if isinstance(value, dt.datetime):
        return stamp(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_memory(source: SourceFile, stem: str, *, default_type: str = "project") -> Memory:
    """The memory a source file holds; missing name and description come from the stem and first line."""
    meta = dict(source.meta)
    metadata = meta.get("metadata")
    if "type" not in meta and isinstance(metadata, dict) and "type" in metadata:
        rest = {k: v for k, v in metadata.items() if k != "type"}
        meta["type"] = metadata["type"]
        if rest:
            meta["metadata"] = rest
        else:
            del meta["metadata"]
    # What a flat head holds is text already: only other values go through ``_text``.
    fields = {key: value if value is None or type(value) is str else _text(value)
              for key in _TEXT_KEYS for value in (meta.get(key),)}
    name = sanitize_line(fields["name"] or "") or stem
    description = sanitize_line(fields["description"] or "")
    if not description:
        description = first_line(source.body)[:MAX_DESCRIPTION]
        if description:
            source.notes.append("description taken from the first line")
    if not description:
        raise InputRejected("no description and no text to take one from", code="import.description")
    prefix = stem.split("_", 1)[0] if "_" in stem else ""
    mtype = fields["type"] or (prefix if prefix in TYPES else default_type)
    if mtype not in TYPES:
        raise InputRejected(f"type {mtype!r} is not one of {', '.join(TYPES)}", code="import.type")
    visibility = fields["visibility"] or "private"
    if visibility not in VISIBILITIES:
        raise InputRejected(f"visibility {visibility!r} is not safe or private", code="import.visibility")
    extra = {k: v for k, v in meta.items() if k not in _TEXT_KEY_SET}
    return Memory(name=name, description=description, type=mtype, visibility=visibility,
                  created=fields["created"], modified=fields["modified"], expires=fields["expires"],
                  body=source.body.lstrip("\n"), extra=extra)


def file_name(source_name: str, memory: Memory, used: set[str]) -> str:
    """The source's file name where it is a valid memory name, else its words as a slug; numbered
    ``-2``, ``-3``… past a name ``used`` holds (lower-case), which it then holds too."""
    stem = source_name.removesuffix(".md").removesuffix(".MD")
    base = f"{stem}.md"
    if not is_memory_name(base):
        from ..store.names import slugify

        slug = slugify(stem) or slugify(memory.name)
        base = f"{slug}.md" if slug and is_memory_name(f"{slug}.md") else f"{memory.type}_{slug or 'note'}.md"
    return unique_name(base, used)


def unique_name(base: str, used: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… : the first that ``used`` (lower-case) lacks, then added to it."""
    name, n = base, 2
    while name.lower() in used:
        name = f"{base.removesuffix('.md')}-{n}.md"
        n += 1
    used.add(name.lower())
    return name

