"""Both roots' hashes as on disk: now, or right after a commit, reading back only what is needed."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..store.memory import INDEX_NAME, is_memory_name
from ..store.state import Limits, RootState, landed_file, read_root
from ..store.statecache import cache_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..paths import Layout
    from .maps import HashMaps
    from .model import PreState


def current_hashes(layout: Layout, limits: Limits) -> HashMaps:
    """Both roots' hashes as on disk now (the stale check, post-commit check and verify use it): a file
    whose identity matches the state cache is not read again."""
    cache = cache_for(layout.project_home)
    maps: HashMaps = {"harness": read_root(layout.harness, limits, with_bytes=False, cache=cache).hashes,
                      "public": read_root(layout.mirror, limits, with_bytes=False, cache=cache, hold=True).hashes
                      if layout.mirror else {}}
    return maps


def landed_hashes(layout: Layout, limits: Limits, pre: PreState, final: HashMaps) -> HashMaps:
    """Both roots' hashes as on disk right after a commit from ``pre`` to ``final``.

    A file the commit left alone is vouched for by its identity as ``pre`` stat-ed it under the same
    lock (one lstat, no cache lookup); every file the commit wrote is read and hashed again. Anything
    else (a name that appeared or vanished, a changed identity, a symlink) gets the full scan, so the
    answer is exactly what ``current_hashes`` would give.
    """
    maps: HashMaps = {}
    roots = (("harness", layout.harness, pre.harness), ("public", layout.mirror, pre.public))
    # The names whose hash the commit changed, by a set operation in C on each root's maps.
    ours = {(str(root), name) for key, root, state in roots if root is not None
            for name, _ in state.hashes.items() ^ final.get(key, {}).items()}
    # Drained before the written files are read back: a write by anyone else after this shows there.
    vouched = pre.vouched is not None and not pre.vouched.others_since(pre, ours)
    for key, root, state in roots:
        if root is None:
            maps[key] = {}
            continue
        hashes = _landed(root, state, final.get(key, {}), limits, vouched)
        if hashes is None:
            return current_hashes(layout, limits)
        maps[key] = hashes
    cache = cache_for(layout.project_home)
    for state in (pre.harness, pre.public):
        for name in state.hashes.keys() - maps["harness" if state is pre.harness else "public"].keys():
            cache.drop(str(state.path), name)  # forgotten: its entry goes, as a full scan would drop it
    if vouched and pre.vouched is not None:
        pre.vouched.read_back(maps)  # the files written, read back right after a drain
    return maps


def _landed(root: Path, state: RootState, final: Mapping[str, str], limits: Limits,
            vouched: bool) -> dict[str, str] | None:
    before, identities = state.hashes, state.identities
    folder = os.fspath(root)
    if vouched:
        # No store file changed but those written here since the state was read: the others hold their
        # hashes without a stat; the written ones are read back.
        hashes = dict(final)
        for name in {name for name, _ in final.items() - before.items()}:
            digest = landed_file(os.path.join(folder, name), limits, name == INDEX_NAME)
            if digest is None:
                return None
            hashes[name] = digest
        if any(os.path.lexists(os.path.join(folder, name)) for name in before.keys() - final.keys()):
            return None
        return hashes
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return None
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _landed_in(fd, folder, names, before, identities, final, limits)
    finally:
        os.close(fd)


def _landed_in(fd: int, folder: str, names: list[str], before: Mapping[str, str],
               identities: Mapping[str, tuple[int, int, int, int, int]], final: Mapping[str, str],
               limits: Limits) -> dict[str, str] | None:
    hashes: dict[str, str] = {}
    for name in names:
        if name not in final and name not in before:
            if not is_memory_name(name) and name != INDEX_NAME:
                continue  # not a store file (a temp of another run, a stray): as read_root
            try:
                if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    continue  # a link or special file the mirror holds back: no write touches it
            except FileNotFoundError:
                continue
        old, ident = before.get(name), identities.get(name)
        if old is not None and ident is not None and final.get(name) == old:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_dev) != \
                    (ident[1], ident[3], ident[4], ident[2], ident[0]):
                return None
            hashes[name] = old
            continue
        digest = landed_file(os.path.join(folder, name), limits, name == INDEX_NAME)
        if digest is None:
            return None
        hashes[name] = digest
    return hashes
