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

from collections.abc import Callable, Mapping

from ..frozen import Frozen
from ..paths import MIRROR_DIR, Layout
from ..state.read import read_pre, read_private
from ..store.memory import Memory
from ..store.state import Limits
from .sync import consistent, synced_view, team_sync

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..privacy import RuleSet
    from ..store.searchcache import Row
    from ..store.stored import Broken

TEAM = "team"


class ReadView(Frozen):
    """Memories as reads show them: each one's bytes, and for those still only in the mirror, its path."""

    __slots__ = ("memories", "files", "broken", "team", "gone")
    memories: dict[str, Memory]
    files: Mapping[str, bytes]  # read when asked for (a list reads none of them)
    broken: dict[str, Broken]
    team: dict[str, str]  # name -> its path in the mirror, for memories the sync has yet to adopt
    gone: set[str]  # names a teammate deleted, which the sync will delete from the store

    def __init__(self, memories: dict[str, Memory], files: Mapping[str, bytes], broken: dict[str, Broken],
                 team: dict[str, str], gone: set[str]) -> None:
        self._set(memories=memories, files=files, broken=broken, team=team, gone=gone)

    def origin(self, name: str) -> dict[str, str]:
        """Where a memory shown comes from: the private store, or the team's mirror (with its path)."""
        return {"origin": TEAM, "path": self.team[name]} if name in self.team else {"origin": "private"}


def read_view(layout: Layout, limits: Limits, rules: Callable[[], RuleSet | None]) -> ReadView:
    """The store as the next sync leaves it (``rules`` loads the privacy rules that judge teammates'
    files, asked only when the mirror holds something the store does not)."""
    from .trust import is_trusted

    if layout.mirror is None or not is_trusted(layout.home, layout.project_root):
        harness, memories, broken = read_private(layout, limits)  # nothing of the mirror is shown
        return _view(memories, harness.files, broken, {}, set())
    pre = read_pre(layout, limits)
    if consistent(pre):
        return _view(pre.memories, pre.harness.files, pre.broken, {}, set())
    sync = team_sync(layout, limits, rules(), pre, pre.cache)
    if not sync.operations:
        return _view(pre.memories, pre.harness.files, pre.broken, {}, set())
    view = synced_view(pre, sync.operations)
    team = {a.name: f"{MIRROR_DIR}/{a.name}" for a in sync.adopted if a.change != "deleted"}
    gone = {a.name for a in sync.adopted if a.change == "deleted"}
    return _view(view.memories, view.harness.files, view.broken, team, gone)


def _view(memories: dict[str, Memory], files: Mapping[str, bytes], broken: dict[str, Broken], team: dict[str, str],
          gone: set[str]) -> ReadView:
    return ReadView(memories, files, broken, team, gone)


def team_hits(layout: Layout, limits: Limits, view: ReadView, query: str, limit: int) -> list[tuple[Row, float]]:
    """The best ``limit`` hits of the private store and, for memories the sync has yet to adopt, of the
    mirror's own search index; a memory a teammate deleted is no hit."""
    from ..store.searchcache import search_hits

    hits = [(row, score) for row, score in search_hits(layout.harness, layout.project_home, query, limit, limits)
            if row.file not in view.gone and row.file not in view.team]
    if view.team and layout.mirror is not None:
        hits += [(row, score) for row, score in search_hits(layout.mirror, layout.project_home, query,
                                                             limit + len(view.team), limits, kind="mirror")
                 if row.file in view.team]
    return sorted(hits, key=lambda hit: (-hit[1], hit[0].file))[:limit]
