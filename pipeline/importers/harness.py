"""A harness store and its public mirror: safe exactly when the mirror holds it and it is not harness-only."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import MemfoldError
from ..fsutil import read_bounded
from ..store.memory import parse_memory
from . import Candidate, Parsed, ordered, safe_file_name

MAX_SOURCE_BYTES = 4 << 20
_LINK = re.compile(r"\]\(([^)]+\.md)\)")


def _harness_only(index: Path) -> set[str]:
    try:
        text = read_bounded(index, MAX_SOURCE_BYTES).decode("utf-8", "replace")
    except (OSError, MemfoldError):
        return set()
    out = set()
    for line in text.splitlines():
        link = _LINK.search(line)
        if link and "(harness only)" in line:
            out.add(link.group(1).lower())
    return out


def _files(root: Path) -> dict[str, Path]:
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.glob("*.md")) if p.name.lower() != "memory.md"}


def parse_pair(private: Path, public: Path) -> Parsed:
    parsed = Parsed()
    for root in (private, public):
        if not root.is_dir():
            parsed.skip(str(root), "not a directory")
    if parsed.skipped:
        return parsed
    private_files, public_files = _files(private), _files(public)
    marked = _harness_only(private / "MEMORY.md")
    for name in sorted(set(private_files) | set(public_files)):
        in_private, in_public = private_files.get(name), public_files.get(name)
        try:
            data = read_bounded(in_private or in_public, MAX_SOURCE_BYTES)  # type: ignore[arg-type]
            if in_private and in_public and read_bounded(in_public, MAX_SOURCE_BYTES) != data:
                parsed.skip(name, "the private and public copies differ")
                continue
            memory = parse_memory(data, name)
        except (OSError, MemfoldError) as exc:
            parsed.skip(name, f"malformed: {getattr(exc, 'message', None) or exc}")
            continue
        if in_public and name.lower() in marked:
            parsed.skip(name, "marked (harness only) but present in the public mirror")
            continue
        visibility = "safe" if in_public else "private"
        parsed.candidates.append(Candidate(safe_file_name(name), memory.with_changes(visibility=visibility), name))
    parsed.candidates = ordered(parsed.candidates)
    return parsed
