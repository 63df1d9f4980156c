"""What reads show in a project: the store as the next sync will leave it, teammates' memories labelled.

After a pull, teammates' new and changed memories sit in the mirror until the next write (or
``memfold sync``) adopts them. ``list``, ``show``, ``search`` and the MCP tools read through here so
they show what the sync will adopt, each labelled ``team`` with its real path in the mirror; held
files and conflicts are not shown as team memories (the private copy stands), and a deletion that
came through git hides the private copy. In a project the user has not trusted, nothing of the
mirror is shown. Where the mirror holds exactly the store's safe memories (the usual case), this
costs one comparison of two hash maps and reads nothing more.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ..frozen import Frozen
from ..paths import MIRROR_DIR, Layout
from ..state.read import read_pre, read_private
from ..store.memory import INDEX_NAME, Memory
from ..store.state import Limits, RootState
from ..store.watch import Watch, open_watch, store_file
from .sync import consistent, synced_view, team_sync

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..privacy import RuleSet
    from ..store.searchcache import Row
    from ..store.stored import Broken

TEAM = "team"


class ReadView(Frozen):
    """Memories as reads show them: each one's bytes, and for those still only in the mirror, its path."""

    __slots__ = ("memories", "files", "broken", "team", "gone", "settled", "identities", "mirror_identities")
    memories: dict[str, Memory]
    files: Mapping[str, bytes]  # read when asked for (a list reads none of them)
    broken: dict[str, Broken]
    team: dict[str, str]  # name -> its path in the mirror, for memories the sync has yet to adopt
    gone: set[str]  # names a teammate deleted, which the sync will delete from the store
    # The private store as it is, with nothing of git's to adopt: the view stays true while neither root's
    # files change and the project stays as trusted as it was (``LiveView``).
    settled: bool
    # The private store's memory files on disk as stat-ed for this view, name -> (st_dev, st_ino, st_size,
    # st_mtime_ns, st_ctime_ns): a search checks its index against them (a file rewritten in place leaves
    # the directory's stat as it was). ``mirror_identities``: the mirror's, when teammates' memories are
    # shown from its index. None where the read did not stat every file.
    identities: Mapping[str, tuple[int, int, int, int, int]] | None
    mirror_identities: Mapping[str, tuple[int, int, int, int, int]] | None

    def __init__(self, memories: dict[str, Memory], files: Mapping[str, bytes], broken: dict[str, Broken],
                 team: dict[str, str], gone: set[str], settled: bool = False,
                 identities: Mapping[str, tuple[int, int, int, int, int]] | None = None,
                 mirror_identities: Mapping[str, tuple[int, int, int, int, int]] | None = None) -> None:
        self._set(memories=memories, files=files, broken=broken, team=team, gone=gone, settled=settled,
                  identities=identities, mirror_identities=mirror_identities)

    def origin(self, name: str) -> dict[str, str]:
        """Where a memory shown comes from: the private store, or the team's mirror (with its path)."""
        return {"origin": TEAM, "path": self.team[name]} if name in self.team else {"origin": "private"}


def read_view(layout: Layout, limits: Limits, rules: Callable[[], RuleSet | None]) -> ReadView:
    """The store as the next sync leaves it (``rules`` loads the privacy rules that judge teammates'
    files, asked only when the mirror holds something the store does not)."""
    from .trust import is_trusted

    if layout.mirror is None or not is_trusted(layout.home, layout.project_root):
        harness, memories, broken = read_private(layout, limits)  # nothing of the mirror is shown
        return ReadView(memories, harness.files, broken, {}, set(), True, _stated(harness))
    pre = read_pre(layout, limits)
    if consistent(pre):
        return ReadView(pre.memories, pre.harness.files, pre.broken, {}, set(), True, _stated(pre.harness))
    sync = team_sync(layout, limits, rules(), pre, pre.cache)
    if not sync.operations:
        return ReadView(pre.memories, pre.harness.files, pre.broken, {}, set(), False, _stated(pre.harness))
    view = synced_view(pre, sync.operations)
    team = {a.name: f"{MIRROR_DIR}/{a.name}" for a in sync.adopted if a.change != "deleted"}
    gone = {a.name for a in sync.adopted if a.change == "deleted"}
    # The index searched is of the files on disk, not of the view the sync would leave: both roots as read.
    return ReadView(view.memories, view.harness.files, view.broken, team, gone, False, _stated(pre.harness),
                    _stated(pre.public))


def _stated(root: RootState) -> dict[str, tuple[int, int, int, int, int]] | None:
    """Each memory file of ``root`` as stat-ed by its read, or None when the read did not stat them all."""
    identities = root.identities
    stated = {name: identities[name] for name in root.files if name != INDEX_NAME and name in identities}
    return stated if len(stated) == len(root.files) - (INDEX_NAME in root.files) else None


class LiveView:
    """The read view of a long-lived process (the MCP server): read once, then kept while the kernel
    reports no change to a store file in either root and the project's trust is what it was.

    A read of 2,000 memories stats every file of both roots (~50 ms here); a kept view costs one
    non-blocking read of the watch and a look at the trust list. Only a settled view is kept: with
    teammates' memories to adopt, the view also depends on git, and it is read again every time. Where
    the kernel cannot watch (another OS, no free watch, a root missing), every call reads as before.
    """

    __slots__ = ("layout", "limits", "watch", "kept", "trusted")

    def __init__(self, layout: Layout, limits: Limits) -> None:
        self.layout = layout
        self.limits = limits
        self.watch: Watch | None = None
        self.kept: ReadView | None = None
        self.trusted = False  # the trust the kept view was read under

    def read(self, rules: Callable[[], RuleSet | None]) -> ReadView:
        from .trust import is_trusted

        layout = self.layout
        trusted = layout.mirror is not None and is_trusted(layout.home, layout.project_root)
        roots = [str(root) for root in (layout.harness, layout.mirror) if root is not None]
        if self.watch is None and all(os.path.isdir(root) for root in roots):
            self.watch = open_watch(roots)  # before the read: a change made during it is seen next time
        events = self.watch.changes() if self.watch is not None else None
        if events is None:
            self.watch = None  # the kernel lost track (the watch is closed): read, and watch again next time
        elif (self.kept is not None and trusted == self.trusted
              and not any(store_file(name) for _root, name in events)):
            return self.kept
        view = read_view(layout, self.limits, rules)
        keep = self.watch is not None and view.settled
        self.kept, self.trusted = (view, trusted) if keep else (None, False)
        return view

    def close(self) -> None:
        if self.watch is not None:
            job = self.watch.close()
            if job is not None:
                job.join()
        self.watch = self.kept = None


def team_hits(layout: Layout, limits: Limits, view: ReadView, query: str, limit: int,
              checked: bool = False) -> list[tuple[Row, float]]:
    """The best ``limit`` hits of the private store and, for memories the sync has yet to adopt, of the
    mirror's own search index; a memory a teammate deleted is no hit. The private store's index is first
    checked against the files as the view stat-ed them, unless the caller ``checked`` it for this view."""
    from ..store.searchcache import search_hits

    identities = None if checked else view.identities
    hits = [(row, score) for row, score in search_hits(layout.harness, layout.project_home, query, limit, limits,
                                                       identities=identities)
            if row.file not in view.gone and row.file not in view.team]
    if view.team and layout.mirror is not None:
        hits += [(row, score) for row, score in search_hits(layout.mirror, layout.project_home, query,
                                                             limit + len(view.team), limits, kind="mirror",
                                                             identities=None if checked else view.mirror_identities)
                 if row.file in view.team]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0].file))[:limit]
