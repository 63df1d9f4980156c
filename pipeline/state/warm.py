"""A long-lived process's pre-state between its own transactions (the MCP server's writes).

After a commit the server knows both roots exactly: the pre-state it read plus the changes it made.
It keeps that as the next pre-state for as long as the kernel reports no change to either root by
anyone else (``watch.py``), so a write costs what it changes instead of a stat of every file. Trust is
withdrawn, and the next write reads both roots again, on any event naming a store file the server did
not write itself, on a lost or overflowed watch, on a failed or interrupted transaction, and when a
file the server wrote no longer hashes to what it wrote once the events up to then are drained.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..fsutil import read_bounded, sha256_bytes
from ..paths import Layout
from ..store.files import Files
from ..store.state import Limits, RootState
from ..store.statecache import cache_for
from ..store.watch import Watch, open_watch, store_file
from .maps import HashMaps
from .model import PostState, PreState
from .read import read_pre

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..background import Job


class WarmState:
    """The pre-state to start the next transaction from, and the watch that vouches for it."""

    __slots__ = ("layout", "limits", "watch", "pre", "events", "quiet", "landed", "one_shot", "closing")
    layout: Layout
    limits: Limits
    watch: Watch | None
    pre: PreState | None
    events: set[tuple[str, str]] | None  # store files others may have touched since ``pre`` was vouched for
    quiet: bool  # the last drain found no event at all
    # Both roots' hashes as the check after the commit read back the files it wrote, right after a drain.
    landed: HashMaps | None
    one_shot: bool  # watching for one transaction: released once the check after its commit drained it
    closing: Job | None  # the watch's descriptor being closed

    def __init__(self, layout: Layout, limits: Limits, *, one_shot: bool = False) -> None:
        self.layout = layout
        self.limits = limits
        self.watch = None
        self.pre = None
        self.events = None
        self.quiet = False
        self.landed = None
        self.one_shot = one_shot
        self.closing = None

    def _roots(self) -> list[str]:
        return [str(root) for root in (self.layout.harness, self.layout.mirror) if root is not None]

    def read(self) -> PreState:
        """The pre-state as on disk now: the kept one while nothing else touched the roots, else read."""
        self.landed = None
        if self.pre is not None and self._drain() == set():
            self.pre.cache = cache_for(self.layout.project_home)
            return self.pre
        self.pre = None
        if self.watch is None and all(os.path.isdir(root) for root in self._roots()):
            self.watch = open_watch(self._roots())  # before the read: what happens during it is seen
        self.events = set()
        if self.watch is not None and self.watch.changes() is None:
            self.watch = None
        pre = read_pre(self.layout, self.limits)
        if self.watch is not None:
            self.pre = pre
            pre.vouched = self
        return pre

    def _drain(self) -> set[tuple[str, str]] | None:
        """Every store-file event since ``pre`` was vouched for, or None when the watch lost track."""
        if self.watch is None or self.events is None:
            return None
        events = self.watch.changes()
        self.quiet = not events
        if events is None:
            self.watch = self.events = None
            return None
        self.events.update(event for event in events if store_file(event[1]))
        return self.events

    def others_since(self, pre: PreState, ours: set[tuple[str, str]]) -> bool:
        """Whether anything but ``ours`` (root, name) may have changed a store file since ``pre`` was read.

        True whenever it cannot tell: the post-commit check then scans both roots in full."""
        events = self._drain() if self.pre is pre else None
        if self.one_shot and self.watch is not None:
            # Its last use: the written files are read back after this drain, and nothing reads the
            # watch again. Released now, the kernel's teardown of it overlaps the rest of the commit.
            self.closing = self.watch.close()
            self.watch = None
        return events is None or not events <= ours

    def read_back(self, maps: HashMaps) -> None:
        """Both roots' hashes as the check after a commit found them, the files it wrote read back right
        after ``others_since`` drained the events: keeping the post-state then needs no second read."""
        self.landed = maps

    def close(self) -> None:
        """Stop watching (a process that needs the watch for one transaction only); the watch is closed
        when this returns."""
        if self.watch is not None:
            self.closing = self.watch.close()
        self.watch = self.pre = self.events = None
        if self.closing is not None:
            self.closing.join()
            self.closing = None

    def forget(self) -> None:
        """Trust nothing kept: the transaction failed or was interrupted, its outcome is for disk to say."""
        self.pre = None

    def committed(self, pre: PreState, post: PostState, final: HashMaps) -> None:
        """Keep the post-state of a transaction that started from ``pre`` and committed ``final``.

        Never fails the write that committed: whatever goes wrong here only means the next write reads
        both roots."""
        try:
            self._keep(pre, post, final)
        except OSError:
            self.pre = None

    def _keep(self, pre: PreState, post: PostState, final: HashMaps) -> None:
        roots = (("harness", pre.harness), ("public", pre.public))
        changed = {key: _changed(state, final[key]) for key, state in roots}
        ours = {(str(state.path), name) for key, state in roots for name in changed[key]}
        landed, self.landed = self.landed, None
        if self.others_since(pre, ours):
            self.pre = None
            return
        self.pre = None
        # Events up to here are drained: a write by anyone else to a file written here shows in its bytes
        # now, and any later one as an event the next call sees. The check after the commit read those
        # bytes back right after a drain; when no event at all came since, they are still what it read.
        if not (self.quiet and landed is not None and landed == final):
            for key, state in roots:
                for name in changed[key]:
                    if _digest_on_disk(state.path / name) != final[key].get(name):
                        return
        harness = _root_after(pre.harness, post.harness, final["harness"], changed["harness"])
        public = _root_after(pre.public, post.public, final["public"], changed["public"]) \
            if pre.mirrored else pre.public
        broken = {name: b for name, b in pre.broken.items() if name in final["harness"] and name not in post.memories}
        self.pre = PreState(harness=harness, public=public, memories=dict(post.memories), mirrored=pre.mirrored,
                            cache=pre.cache, broken=broken)
        self.pre.vouched = self
        self.events = set()


# A root directory this large (bytes of entries, as Linux file systems report it) holds hundreds of
# files: a stat of each costs more than setting up a kernel watch (~4 ms with ctypes).
WATCH_FROM_DIR_BYTES = 32 << 10


def one_shot(layout: Layout, limits: Limits) -> WarmState | None:
    """A watch for one transaction of a large store (None for a small one): the check after its commit
    then reads back what it wrote instead of stat-ing every file again. Close it when the transaction
    ends."""
    try:
        large = os.stat(layout.harness).st_size >= WATCH_FROM_DIR_BYTES
    except OSError:
        return None
    return WarmState(layout, limits, one_shot=True) if large else None


def _changed(state: RootState, final: dict[str, str]) -> set[str]:
    """The names whose hash differs (or that exist on one side only), found by set operations in C."""
    return {name for name, _digest in state.hashes.items() ^ final.items()}


def _digest_on_disk(path: Path) -> str | None:
    try:
        return sha256_bytes(read_bounded(path))
    except FileNotFoundError:
        return None


def _root_after(state: RootState, files: Mapping[str, bytes], hashes: dict[str, str],
                changed: set[str]) -> RootState:
    """The root as the commit left it: each file the commit did not change keeps the identity it was read
    with; the others are stat-ed now. Dict and set operations, so a commit of one file costs O(1) in
    Python whatever the store size."""
    after = RootState(state.path, files if isinstance(files, Files) else Files(dict(files)), dict(hashes),
                      list(state.ignored))
    identities = dict(state.identities)
    for name in identities.keys() - hashes.keys():
        del identities[name]
    for name in (hashes.keys() - identities.keys()) | (changed & hashes.keys()):
        st = os.stat(state.path / name, follow_symlinks=False)
        identities[name] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    after.identities = identities
    return after
