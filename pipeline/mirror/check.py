"""`memfold mirror check`: the mirror as it is on disk, hand edits, links and special files included."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Issue, MemfoldError, UsageError
from ..fsutil import read_bounded
from ..paths import Layout
from ..receipts.witness import MAX_HEAD_BYTES, is_head_name, written_here
from ..state import PreState, read_pre
from ..store.index import render_index
from ..store.memory import INDEX_NAME, is_memory_name, windows_reserved
from ..store.state import Limits
from .guard import behind, check_disk_mirror, mirror_drift

if TYPE_CHECKING:
    from ..privacy import RuleSet


def _targets(layout: Layout, mirror: Path, files: list[Path]) -> list[str]:
    if not files:
        try:
            return sorted(os.listdir(mirror))
        except FileNotFoundError:
            return []
    names = []
    for f in files:
        path = f if f.is_absolute() else layout.project_root / f
        if path.parent.resolve() == mirror.resolve() or path.parent == mirror:
            names.append(path.name)
    return sorted(set(names))


BEHIND = "mirror.behind"


def differences(pre: PreState, layout: Layout | None = None) -> list[Issue]:
    """Every way ``.memory/`` differs from what the private store says it holds: each safe memory,
    byte for byte, nothing else, and an index that lists exactly those.

    With ``layout``, a difference that is only the mirror being behind the store (a file still as this
    work tree's last transaction wrote it, a memory written since from another worktree sharing the
    store) is ``mirror.behind``: not a hand edit, and the next transaction here brings it up to date.
    """
    index = pre.public.files.get(INDEX_NAME)
    listed = set(_LINK.findall(index.decode("utf-8", "replace"))) if index is not None else set()
    issues = []
    for line in mirror_drift(pre):
        name = line.split(" ", 1)[0]
        unlisted = "" if name in listed else "; MEMORY.md does not list it"
        issues.append(Issue(_drift_code(line), f".memory/{name}", line + unlisted))
    safe = sorted(n for n, m in pre.memories.items() if m.is_safe)
    for name in safe:
        if name not in pre.public.hashes:
            issues.append(Issue("mirror.missing", f".memory/{name}",
                                f"safe memory {name} is missing from the mirror (deleted by hand?)"))
    for name in sorted(pre.public.ignored):
        if not is_head_name(name):
            issues.append(Issue("mirror.extra", f".memory/{name}",
                                f"{name} is in the mirror but is not a memory file memfold writes"))
    for name in sorted(pre.public.temps):
        issues.append(Issue("mirror.temp", f".memory/{name}", f"{name} is a leftover temporary file "
                            "(`memfold recover` removes it)"))
    if index is None:
        if safe or pre.public.memories():
            issues.append(Issue("mirror.index-missing", ".memory/MEMORY.md", "the mirror has no MEMORY.md index"))
    elif index != render_index(pre.memories, mirror=True):
        unindexed = sorted(set(pre.public.memories()) - listed)
        detail = f": not listed {', '.join(unindexed[:5])}" if unindexed else ""
        issues.append(Issue("mirror.index-stale", ".memory/MEMORY.md",
                            f"the mirror index does not list exactly the safe memories{detail}"))
    if issues and layout is not None:
        issues = _behind(issues, pre, written_here(layout.receipts, layout.mirror, pre.cache))
    return issues


def _behind(issues: list[Issue], pre: PreState, ours: dict[str, str] | None) -> list[Issue]:
    """Issues of files memfold itself left this way here, turned into ``mirror.behind`` notes."""
    if ours is None:
        return issues
    kept = behind(pre, ours)
    out = []
    for issue in issues:
        name = issue.path.removeprefix(".memory/")
        # A memory made private since stays an issue: its text is in this mirror until the next write here.
        if name in kept and issue.code in ("mirror.differs", "mirror.extra", "mirror.index-stale"):
            out.append(Issue(BEHIND, issue.path, f"{name} is as this work tree's last transaction wrote it; the "
                             "private store changed since (from another worktree?): the next transaction here "
                             "updates it"))
        elif issue.code == "mirror.missing" and name not in ours:
            out.append(Issue(BEHIND, issue.path, f"safe memory {name} was written since from another worktree; "
                             "the next transaction here mirrors it"))
        else:
            out.append(issue)
    return out


def _drift_code(line: str) -> str:
    if "not in the private store" in line:
        return "mirror.extra"
    if "private in the store" in line:
        return "mirror.not-safe"
    if "broken" in line:
        return "mirror.broken-source"
    return "mirror.differs"


_LINK = re.compile(r"\]\(([^)\s]+\.md)\)")


def case_collisions(mirror: Path, targets: list[str]) -> list[Issue]:
    """Names in the mirror that differ only in case, where one of them is checked: on a case-insensitive
    checkout (macOS, Windows) git writes both to one file, and one memory silently replaces the other."""
    try:
        names = os.listdir(mirror)
    except OSError:
        return []
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name.casefold(), []).append(name)
    checked = set(targets)
    issues = []
    for group in groups.values():
        if len(group) > 1 and not checked.isdisjoint(group):
            first, *others = sorted(group)
            for other in others:
                issues.append(Issue("mirror.case-collision", f".memory/{other}",
                                    f"{other} and {first} differ only in case: a case-insensitive checkout "
                                    "(macOS, Windows) keeps one file for both; keep one spelling (`memfold "
                                    "rename` or `memfold forget` the other, or `git rm` a teammate's copy)"))
    return issues


def check_mirror(layout: Layout, ruleset: RuleSet, limits: Limits, files: list[Path]) -> list[Issue]:
    mirror = layout.mirror
    if mirror is None:
        raise UsageError("the global store has no mirror to check", code="mirror.global",
                         hint="run `memfold mirror check` without --global, in the project")
    issues: list[Issue] = []
    contents: dict[str, bytes] = {}
    targets = _targets(layout, mirror, files)
    # A memory, the index and a chain head per receipt log: past that the mirror is over its bound,
    # and only the first names are read (100,000 stray files cost no more than the bound).
    bound = limits.max_files + 8
    if len(targets) > bound:
        issues.append(Issue("bounds.file-count", ".memory/",
                            f"the mirror holds {len(targets)} entries, over the bound of {limits.max_files} "
                            f"memories; only the first {bound} were checked"))
        targets = targets[:bound]
    issues.extend(case_collisions(mirror, targets))
    for name in targets:
        path = mirror / name
        where = f".memory/{name}"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # deleted in this commit: nothing to leak
        if stat.S_ISLNK(st.st_mode):
            issues.append(Issue("mirror.symlink", where, f"{name} is a symlink; the mirror holds regular files only"))
            continue
        if not stat.S_ISREG(st.st_mode):
            issues.append(Issue("mirror.not-regular", where, f"{name} is not a regular file"))
            continue
        if name != INDEX_NAME and windows_reserved(name):
            issues.append(Issue("mirror.name-reserved", where,
                                f"{name} is a Windows device name: teammates on Windows cannot check it out"))
            continue
        if name != INDEX_NAME and not is_memory_name(name) and not is_head_name(name):
            issues.append(Issue("mirror.name", where, f"{name} is not a memory file name"))
            continue
        limit = MAX_HEAD_BYTES if is_head_name(name) else limits.max_file_bytes if name != INDEX_NAME \
            else max(limits.index_bytes * 4, 1 << 20)
        if st.st_size > limit:
            issues.append(
                Issue("bounds.file-size", where, f"{name} is {st.st_size} bytes, over the {limit}-byte bound")
            )
            continue
        contents[name] = read_bounded(path, limit)
    pre: PreState | None
    try:
        pre = read_pre(layout, limits)
    except MemfoldError:
        pre = None  # a symlink or the count bound: reported above, file by file
    found = differences(pre, layout) if pre is not None else []
    # A file only behind the store is not a problem of the mirror (its bytes are still scanned here).
    late = {i.path.removeprefix(".memory/") for i in found if i.code == BEHIND}
    issues.extend(check_disk_mirror(contents, pre.harness.files if pre else None, ruleset, limits, behind=late))
    seen = {i.path.split(":", 1)[0] for i in issues}  # one finding per file is enough
    issues.extend(i for i in found if i.path not in seen and i.code != BEHIND)
    return issues
