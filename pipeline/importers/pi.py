"""Pi's memory: a notes file with one bullet per note, and memory dirs of entry and topic files."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from ..errors import MemfoldError
from ..fsutil import read_bounded
from ..store.memory import Memory, parse_memory, sanitize_line, split_frontmatter, stamp
from . import Candidate, Parsed, memory_files, ordered, safe_file_name, slug

MAX_SOURCE_BYTES = 4 << 20
_BULLET = re.compile(r"^[-*+](?:\s+(.*))?$")
_SECTION = re.compile(r"^## +(.+?)\s*#*\s*$", re.M)


def _unique(base: str, used: set[str]) -> str:
    name, n = base, 2
    while name.lower() in used:
        name = f"{base.removesuffix('.md')}-{n}.md"
        n += 1
    used.add(name.lower())
    return name


def parse_notes(path: Path) -> Parsed:
    """``- note`` lines (indented lines continue the note above); headings and blank lines are ignored."""
    parsed = Parsed()
    try:
        text = read_bounded(path, MAX_SOURCE_BYTES).decode("utf-8").replace("\r\n", "\n")
    except (OSError, UnicodeDecodeError, MemfoldError) as exc:
        parsed.skip(str(path), f"unreadable: {exc}")
        return parsed
    notes: list[tuple[int, list[str]]] = []
    for number, line in enumerate(text.split("\n"), 1):
        bullet = _BULLET.match(line)
        if bullet:
            notes.append((number, [(bullet.group(1) or "").strip()]))
        elif line.startswith((" ", "\t")) and line.strip() and notes:
            notes[-1][1].append(line.strip())
        elif line.strip() and not line.lstrip().startswith("#"):
            parsed.skip(f"{path.name}:{number}", "not a bullet note")
    used: set[str] = set()
    for number, lines in notes:
        body = "\n".join(lines).strip()
        if not body:
            parsed.skip(f"{path.name}:{number}", "empty note")
            continue
        description = sanitize_line(lines[0])[:200]
        file = _unique(f"project_{slug(lines[0])}.md", used)
        memory = Memory(name=file.removesuffix(".md"), description=description, type="project", body=body)
        parsed.candidates.append(Candidate(file, memory, f"{path.name}:{number}"))
    return parsed


def _meta(data: bytes, file: str) -> tuple[dict[str, Any], str]:
    import yaml

    text = data.decode("utf-8").replace("\r\n", "\n")
    head, body = split_frontmatter(text, file)
    try:
        meta = yaml.safe_load(head) if head.strip() else {}
    except yaml.YAMLError:
        raise ValueError("frontmatter is not valid YAML") from None
    if not isinstance(meta, dict):
        raise ValueError("frontmatter is not a mapping")
    return meta, body


def _when(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return stamp(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value) if isinstance(value, str) and value else None


def _topic(parsed: Parsed, path: Path, meta: dict[str, Any], body: str) -> None:
    """An older topic file: each ``## `` section is one memory, all modified at the file's ``updated``."""
    titles = list(_SECTION.finditer(body))
    stem = safe_file_name(path.name).removesuffix(".md")
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
        parsed.candidates.append(Candidate(f"{stem}_{slug(title)}.md", memory, where))


def parse_memory_dir(path: Path) -> Parsed:
    """Entry files (name/description/type/created/modified) and topic files (``updated`` + sections)."""
    parsed = Parsed()
    for file in memory_files(path, parsed):
        try:
            data = read_bounded(file, MAX_SOURCE_BYTES)
            meta, body = _meta(data, file.name)
            if "updated" in meta and _SECTION.search(body):
                _topic(parsed, file, meta, body)
                continue
            memory = parse_memory(data, file.name)
        except (OSError, ValueError, MemfoldError) as exc:
            parsed.skip(file.name, f"malformed: {getattr(exc, 'message', None) or exc}")
            continue
        parsed.candidates.append(Candidate(safe_file_name(file.name), memory, file.name))
    parsed.candidates = ordered(parsed.candidates)
    return parsed
