"""A harness store and its public mirror: safe exactly when the mirror holds it and it is not harness-only."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..errors import MemfoldError
from ..fsutil import read_bounded
from .candidates import MAX_SOURCE_BYTES, Parsed, ordered, read_candidate, require_dir

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


def parse_pair(private: Path, public: Path, tick: Callable[[], None] = lambda: None) -> Parsed:
    parsed = Parsed()
    require_dir(private)
    require_dir(public)
    private_files, public_files = _files(private), _files(public)
    marked = _harness_only(private / "MEMORY.md")
    for name in sorted(set(private_files) | set(public_files)):
        tick()
        in_private, in_public = private_files.get(name), public_files.get(name)
        path = in_private or in_public
        assert path is not None
        try:
            data = read_bounded(path, MAX_SOURCE_BYTES)
            if in_private and in_public and read_bounded(in_public, MAX_SOURCE_BYTES) != data:
                parsed.skip(name, "the private and public copies differ")
                continue
        except (OSError, MemfoldError) as exc:
            parsed.skip(name, f"not imported: {getattr(exc, 'message', None) or exc}")
            continue
        if in_public and name.lower() in marked:
            parsed.skip(name, "marked (harness only) but present in the public mirror")
            continue
        read_candidate(parsed, path, data=data, visibility="safe" if in_public else "private")
    parsed.candidates = ordered(parsed.candidates)
    return parsed
