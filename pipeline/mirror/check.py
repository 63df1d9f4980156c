"""`memfold mirror check`: the mirror as it is on disk, hand edits, links and special files included."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Issue, UsageError
from ..fsutil import read_bounded
from ..paths import Layout
from ..receipts.witness import MAX_HEAD_BYTES, is_head_name
from ..store.memory import INDEX_NAME, is_memory_name, windows_reserved
from ..store.state import Limits, read_root
from .guard import check_disk_mirror

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


def check_mirror(layout: Layout, ruleset: RuleSet, limits: Limits, files: list[Path]) -> list[Issue]:
    mirror = layout.mirror
    if mirror is None:
        raise UsageError("the global store has no mirror to check", code="mirror.global",
                         hint="run `memfold mirror check` without --global, in the project")
    issues: list[Issue] = []
    contents: dict[str, bytes] = {}
    for name in _targets(layout, mirror, files):
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
    try:
        harness = read_root(layout.harness, limits).files
    except Exception:
        harness = None
    issues.extend(check_disk_mirror(contents, harness, ruleset, limits))
    return issues
