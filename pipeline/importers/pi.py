"""Pi's memory: a notes file with one bullet per note, and memory dirs of entry and topic files."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputRejected, MemfoldError
from ..fsutil import read_bounded
from ..store.memory import Memory, sanitize_line, stamp
from .candidates import MAX_SOURCE_BYTES, Candidate, Parsed, memory_files, ordered, read_candidate, slug
from .source import decode, file_name, read_source, unique_name

_BULLET = re.compile(r"^[-*+](?:\s+(.*))?$")
_SECTION = re.compile(r"^## +(.+?)\s*#*\s*$", re.M)


def parse_notes(path: Path, tick: Callable[[], None] = lambda: None) -> Parsed:
    """``- note`` lines, one note each, indented or not (pi appends one bullet per fact, and a bullet a
    person indented is still a fact of its own); other indented lines continue the note above;
    headings and blank lines are ignored."""
    parsed = Parsed()
    if not path.is_file():
        what = "does not exist" if not path.exists() else "is not a file"
        raise InputRejected(f"import source {path} {what}", code="import.source",
                            hint="give the notes file (one '- note' bullet per line)")
    try:
        text = read_bounded(path, MAX_SOURCE_BYTES).decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError, MemfoldError) as exc:
        raise InputRejected(f"import source {path} cannot be read: {getattr(exc, 'message', None) or exc}",
                            code="import.source", hint="the notes file must be UTF-8 text") from None
    notes: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.split("\n"), 1):
        bullet = _BULLET.match(line.lstrip(" \t"))
        if bullet:
            notes.append((number, [(bullet.group(1) or "").strip()]))
        elif line.startswith((" ", "\t")) and line.strip() and notes:
            notes[-1][1].append(line.strip())
        elif line.strip() and not line.lstrip().startswith("#"):
            parsed.skip(f"{path.name}:{number}", "not a bullet note")
    for number, lines in notes:
        body = "\n".join(lines).strip()
        if not body:
            parsed.skip(f"{path.name}:{number}", "empty note")
            continue
        description = sanitize_line(lines[0])[:200]
        file = unique_name(f"project_{slug(lines[0])}.md", parsed.used)
        memory = Memory(name=file.removesuffix(".md"), description=description, type="project", body=body)
        parsed.candidates.append(Candidate(file, memory, f"{path.name}:{number}"))
    return parsed


def _when(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return stamp(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value) if isinstance(value, str) and value else None


def _topic(parsed: Parsed, path: Path, meta: dict[str, Any], body: str) -> None:
    """A topic file: each ``## `` section is one memory, all modified at the file's ``updated``."""
    titles = list(_SECTION.finditer(body))
    stem = file_name(path.name, Memory(name=path.stem, description="-"), set()).removesuffix(".md")
    kind = str(meta.get("type") or "project")
    for i, match in enumerate(titles):
        title = sanitize_line(match.group(1))
        end = titles[i + 1].start() if i + 1 < len(titles) else len(body)
        text = body[match.end():end].strip()
        where = f"{path.name}#{slug(title)}"
        if not text:
            parsed.skip(where, "empty section")
            continue
        first = sanitize_line(text.split("\n", 1)[0])
        memory = Memory(name=f"{stem}: {title}", description=f"{title}: {first}"[:200], type=kind,
                        modified=_when(meta.get("updated")), body=text)
        file = unique_name(f"{stem}_{slug(title)}.md", parsed.used)
        parsed.candidates.append(Candidate(file, memory, where, ("one memory per '## ' section",)))


def parse_memory_dir(path: Path, tick: Callable[[], None] = lambda: None) -> Parsed:
    """Entry files (name/description/type/created/modified) and topic files (``updated`` + sections;
    1.x topic files carry no frontmatter at all)."""
    parsed = Parsed()
    for file in memory_files(path, parsed):
        tick()
        try:
            data = read_bounded(file, MAX_SOURCE_BYTES)
            source = read_source(decode(data))
        except (OSError, MemfoldError) as exc:
            parsed.skip(file.name, f"not imported: {getattr(exc, 'message', None) or exc}")
            continue
        topic = "updated" in source.meta or not source.meta
        if topic and _SECTION.search(source.body):
            _topic(parsed, file, source.meta, source.body)
            continue
        read_candidate(parsed, file, data=data)
    parsed.candidates = ordered(parsed.candidates)
    return parsed
