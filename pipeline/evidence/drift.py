"""Which memories' cited code changed, is gone or moved, and the lines that changed, for people.

The changed lines come from git's own copies: the newest committed version of the cited file in which
the cited text is found (by its hash) is compared with the file as it is now, and only the hunks that
touch the cited lines are shown. Versions are read through ``mirror.gitinfo`` (blobs only), and the
comparison is Python's own, so no diff program a repository configures ever runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..mirror import gitinfo
from ..store.citecheck import Found, check, locate, read_cited
from ..store.evidence import CHANGED, RENAMED
from ..store.memory import Memory
from .cite import Follower

MAX_DIFF_LINES = 24
MAX_VERSIONS = 200


def findings(root: Path, memory: Memory, follow: Callable[[str], str | None] | None) -> list[Found]:
    return check(str(root), memory.evidence, follow) if memory.evidence else []


class Drift:
    """The drifted memories of a store, each with its findings, read once."""

    def __init__(self, root: Path, memories: Mapping[str, Memory], *, git: bool = True) -> None:
        self.root = root
        self.follow = Follower(root, git)
        self.found: dict[str, list[Found]] = {}
        for name in sorted(memories):
            memory = memories[name]
            if not memory.evidence:
                continue
            found = findings(root, memory, self.follow)
            if any(f.drifted for f in found):
                self.found[name] = found
        self._versions: dict[str, list[bytes] | None] = {}

    def report(self, memories: Mapping[str, Memory], diff: bool = True) -> list[dict[str, Any]]:
        out = []
        for name, found in self.found.items():
            entries = []
            for f in found:
                entry = f.as_dict()
                if f.drifted and diff:
                    entry["diff"] = self.changed_lines(f)
                    if not entry["diff"] and f.status == CHANGED:
                        entry["diff"] = [f"(no commit holds the cited text of {f.cite.path}: nothing to compare)"]
                entries.append(entry)
            out.append({"file": name, "name": memories[name].name, "description": memories[name].description,
                        "marks": [m for f in found if (m := f.mark()) is not None], "evidence": entries})
        return out

    def _history(self, path: str) -> list[bytes] | None:
        if path not in self._versions:
            versions = gitinfo.committed_versions(self.root, path)
            self._versions[path] = None if versions is None else [
                data for _, data in versions[:MAX_VERSIONS] if data]
        return self._versions[path]

    def changed_lines(self, found: Found) -> list[str]:
        """A unified diff of the cited lines, from the newest committed version holding the cited text
        to the file now; empty when git has no such version (the text was never committed)."""
        cite = found.cite
        if found.status not in (CHANGED, RENAMED) or cite.sha256 is None:
            return []
        if found.status == RENAMED and found.start is not None:
            return []  # the text is there, under the new name
        old = self._old_text(cite)
        if old is None:
            return []
        data, start, end = old
        now = read_cited(str(self.root), found.path) or b""
        return unified(data, now, start, end, cite.path, found.path)

    def _old_text(self, cite: Any) -> tuple[bytes, int | None, int | None] | None:
        for data in self._history(cite.path) or []:
            located = locate(cite, data)
            if located.status in ("holds", "moved"):
                return data, located.start, located.end
        return None


def unified(old: bytes, new: bytes, start: int | None, end: int | None, old_name: str, new_name: str) -> list[str]:
    """The hunks of old -> new that touch old lines ``start``-``end`` (all hunks for a whole file)."""
    before = old.decode("utf-8", "replace").splitlines()
    after = new.decode("utf-8", "replace").splitlines()
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if start is not None and end is not None:
            # Lines i1+1..i2 replaced, or (i1 == i2) lines inserted after line i1.
            touches = (i1 + 1 <= end and i2 >= start) if i1 < i2 else start <= i1 < end
            if not touches:
                continue
        out.append(f"@@ {old_name}:{i1 + 1}-{max(i2, i1 + 1)} -> {new_name}:{j1 + 1}-{max(j2, j1 + 1)} @@")
        out += [f"-{line}" for line in before[i1:i2]]
        out += [f"+{line}" for line in after[j1:j2]]
        if len(out) >= MAX_DIFF_LINES:
            return [*out[:MAX_DIFF_LINES], "… (more changes; see the file)"]
    return out


def evidence_report(layout: Any, memories: Mapping[str, Memory], *, diff: bool = True) -> list[dict[str, Any]]:
    """The memories of a project's store whose cited code drifted, with the changed lines (``[]`` for the
    global store, which cites no repository)."""
    if layout.is_global or not any(m.evidence for m in memories.values()):
        return []
    return Drift(layout.project_root, memories).report(memories, diff=diff)


def unused_report(layout: Any, memories: Mapping[str, Memory], days: int, now: float) -> list[dict[str, str]]:
    """The memories not used in ``days`` days, from the private home's usage log."""
    from ..store import usage

    known = usage.load(str(layout.project_home))
    found = usage.dormant(known, {n: m.created for n, m in memories.items()}, days, now)
    return [{"file": name, "why": why} for name, why in sorted(found.items())]


def drift_lines(entries: list[dict[str, Any]], indent: str) -> list[str]:
    """The report of drifted memories as lines for a terminal: each mark, then the changed lines."""
    lines = []
    for entry in entries:
        lines.append(f"{entry['file']}: {' '.join(entry['marks'])}")
        for cited in entry["evidence"]:
            lines += [f"{indent}{line}" for line in cited.get("diff", [])]
    return lines
