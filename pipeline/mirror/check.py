"""`memfold mirror check`: the mirror as git would publish it, links and special files included.

It judges what the mirror holds, not whether this user's store agrees with it: a teammate's memory
that a pull brought is no problem of the mirror (``memfold sync`` adopts it), so a fresh clone of a
clean team mirror passes. What fails is what must not be committed: a privacy finding, invisible
characters, git's conflict markers, a file that does not parse or is marked private, a copy of a
memory this user keeps private, names that are not memory files or that clash on a case-insensitive
checkout, links, special files and files over the bounds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Issue, MemfoldError, UsageError
from ..fsutil import TEMP_PREFIX, read_bounded
from ..paths import Layout
from ..receipts.witness import HEADS_PATH, MAX_HEAD_BYTES, heads_in, is_head_name, is_legacy_head_name, parse_head
from ..state.read import read_private
from ..store.memory import INDEX_NAME, is_memory_name, windows_reserved
from ..store.state import Limits
from .guard import check_disk_mirror, withhold_names

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
    # A memory and the index: past that the mirror is over its bound, and only the first names are read
    # (100,000 stray files cost no more than the bound).
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
        if is_legacy_head_name(name) and st.st_size <= MAX_HEAD_BYTES:
            if parse_head(read_bounded(path, MAX_HEAD_BYTES)) is None:
                issues.append(Issue("mirror.head-invalid", where, f"{name} is not a chain head as memfold wrote it"))
            continue  # an older memfold's head: the next transaction moves it to .memfold/heads/
        if name != INDEX_NAME and windows_reserved(name):
            issues.append(Issue("mirror.name-reserved", where,
                                f"{name} is a Windows device name: teammates on Windows cannot check it out"))
            continue
        if name != INDEX_NAME and not is_memory_name(name):
            issues.append(Issue("mirror.name", where, f"{name} is not a memory file name"))
            continue
        limit = limits.max_file_bytes if name != INDEX_NAME else max(limits.index_bytes * 4, 1 << 20)
        if st.st_size > limit:
            issues.append(Issue("bounds.file-size", where,
                                f"{name} is {st.st_size} bytes, over the {limit}-byte bound"))
            continue
        contents[name] = read_bounded(path, limit)
    issues.extend(check_disk_mirror(contents, _private_copies(layout, limits), ruleset, limits))
    if not files and layout.heads is not None:
        issues.extend(check_heads(layout.heads))
    # A file name that holds a credential is withheld from every line printed.
    return withhold_names(issues, [*contents, *targets], ruleset)


def check_heads(heads: Path) -> list[Issue]:
    """The chain heads committed beside the mirror: each a regular file, small, holding a head as memfold
    writes it (or the whole heads a merge left); anything else would be committed as a witness that is none."""
    try:
        names = sorted(os.listdir(heads))
    except (FileNotFoundError, NotADirectoryError):
        return []
    issues = []
    for name in names[:MAX_HEADS]:
        if name.startswith(TEMP_PREFIX):
            continue  # a transaction's temp: `memfold recover` removes it
        where = f"{HEADS_PATH}/{name}"
        st = os.lstat(heads / name)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HEAD_BYTES or not is_head_name(name) \
                or not heads_in(read_bounded(heads / name, MAX_HEAD_BYTES)):
            issues.append(Issue("mirror.head-invalid", where, f"{name} is not a chain head as memfold writes it "
                                "(the next transaction of its chain writes it again; `memfold audit` checks it)"))
    return issues


MAX_HEADS = 4096


def _private_copies(layout: Layout, limits: Limits) -> dict[str, str]:
    """The sha256 of each memory this user keeps private, by name (none when the store cannot be read)."""
    try:
        harness, memories, _broken = read_private(layout, limits)
    except MemfoldError:
        return {}
    return {name: harness.hashes[name] for name, memory in memories.items() if not memory.is_safe
            and name in harness.hashes}
