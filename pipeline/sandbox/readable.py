"""The world-readable part of a system directory, as few Landlock read rules as possible.

A root worker without capabilities still owns every root-owned file, so owner bits let
it read ``/etc/shadow`` or SSH host keys under a blanket ``/etc`` rule. Granting only
what any user may read keeps interpreters working (ld.so.cache, ssl certs, passwd,
alternatives) and closes that gap. A walk that cannot finish raises: the caller refuses
the run rather than grant the whole directory.
"""

from __future__ import annotations

import os
import stat

MAX_ENTRIES = 20_000  # a bound on the walk (this machine's /etc has ~1,200 entries)


class NarrowingFailed(Exception):
    """The walk could not finish: granting the whole directory instead would fail open."""


def _public(mode: int) -> bool:
    if stat.S_ISDIR(mode):
        return mode & 0o005 == 0o005
    return bool(mode & 0o004)


def world_readable(root: str, limit: int | None = None) -> list[str]:
    """Paths below ``root`` to grant read access to: whole subtrees when all of them is public.

    Raises NarrowingFailed past ``limit`` entries (default MAX_ENTRIES) or nesting deeper
    than the interpreter's recursion limit.
    """
    budget = [MAX_ENTRIES if limit is None else limit]

    def walk(path: str) -> tuple[bool, list[str]]:
        """(everything below is public, the rules to grant if not)."""
        try:
            entries = list(os.scandir(path))
        except OSError:
            return False, []
        budget[0] -= len(entries)
        if budget[0] < 0:
            raise NarrowingFailed(f"more than {MAX_ENTRIES if limit is None else limit} entries")
        whole, rules = True, []
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                whole = False
                continue
            if stat.S_ISLNK(mode):
                continue  # the target is judged where it lives; Landlock checks the final object
            if not _public(mode):
                whole = False
                continue
            if stat.S_ISDIR(mode):
                sub_whole, sub_rules = walk(entry.path)
                if sub_whole:
                    rules.append(entry.path)
                else:
                    whole = False
                    rules.extend(sub_rules)
            else:
                rules.append(entry.path)
        return whole, rules

    try:
        whole, rules = walk(root)
    except RecursionError:
        raise NarrowingFailed("nested too deeply") from None
    return [root] if whole else rules
