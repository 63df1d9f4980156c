"""The stores a context block reads, and which of them shows each memory's name.

A private memory shadows a team memory of the same name (and a global one), except a safe private copy
that a teammate's newer version in the mirror replaces; a row the mirror holds back is never shown.
What each store hides is kept in the last store's index under the directories' generations, so a
session pays for it once per change, not once per prompt.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

    from .memory import Memory
    from .searchcache import Index, Row

    # Whether a row of a store may be served at all (a teammate's file the mirror holds back may not).
    Admit = Callable[["Source", Row], bool]

TEAM = "team"


class Source:
    """One store as the block sees it: its kind (private, mirror, global), its directory, its index."""

    def __init__(self, kind: str, path: str, index: Index) -> None:
        self.kind = kind
        self.path = path
        self.index = index

    @classmethod
    def of_memories(cls, kind: str, memories: Mapping[str, Memory], path: str = "") -> Source:
        """A store given as parsed memories, indexed in memory (no file is read or checked)."""
        from .searchcache import Index

        return cls(kind, path, Index.of_memories(memories))

    def label(self, row: Row, *, with_type: bool = True) -> str:
        """What the model is told about a memory: who may see it (its visibility, or ``team`` for a
        teammate's memory in the git-tracked mirror, never private), then its type."""
        seen = TEAM if self.kind == "mirror" else row.visibility or "private"
        parts = [seen, row.type or "project"] if with_type else [seen]
        return ", ".join(["global", *parts] if self.kind == "global" else parts)


def shadowed(sources: Sequence[Source], i: int, file: str) -> bool:
    return any(s.index.has(file) for s in sources[:i])


def everyone(source: Source, row: Row) -> bool:
    return True


def shown(sources: Sequence[Source], i: int, row: Row, newer: Collection[str], admit: Admit) -> bool:
    """Whether a row is the one shown for its name: a private memory shadows a team memory of the same
    name (and a global one), except a safe private copy that a teammate's newer version in the mirror
    replaces; a row the mirror holds back is never shown."""
    source = sources[i]
    if row.file in newer:
        return source.kind == "mirror" and admit(source, row)
    return not shadowed(sources, i, row.file) and admit(source, row)


def ranked(sources: Sequence[Source], query: str, limit: int, newer: Collection[str] = frozenset(),
           admit: Admit = everyone) -> list[tuple[Source, Row, float]]:
    """The best hits of all stores for ``query``; a memory shadowed by an earlier store is not one.

    The rows are not checked against their files yet: whoever serves one checks it (``_fresh``).
    """
    hits = []
    for i, source in enumerate(sources):
        for row, score in source.index.ranked(query, limit, check=False):
            if shown(sources, i, row, newer, admit):
                hits.append((source, row, score))
    hits.sort(key=lambda h: -h[2])
    return hits[:limit]


def unranked(sources: Sequence[Source], limit: int, newer: Collection[str],
              admit: Admit) -> list[tuple[Source, Row]]:
    """Without a query: durable guidance first (feedback, user), then the newest."""
    order = "prio, modified DESC, file"
    out: list[tuple[Source, Row]] = []
    for i, source in enumerate(sources):
        for row in source.index.rows(order=order):
            if len(out) >= limit:
                return out
            if shown(sources, i, row, newer, admit):
                out.append((source, row))
    return out


def listing(sources: Sequence[Source], newer: Collection[str], admit: Admit) -> Iterator[tuple[Source, Row]]:
    for i, source in enumerate(sources):
        for row in source.index.rows():
            if shown(sources, i, row, newer, admit):
                yield source, row


def contributing(sources: Sequence[Source], counts: Sequence[int]) -> list[Source]:
    """The stores with at least one memory no other store shadows (the first always)."""
    return [s for i, s in enumerate(sources) if i == 0 or counts[i] < s.index.count()]


def shadowing(sources: Sequence[Source]) -> tuple[list[int], frozenset[str]]:
    """For each store, how many of its memories another store's memory of the same name hides, and the
    names a teammate's newer version in the mirror takes over from a safe private copy.

    An earlier store's memory hides a later one of the same name (the private store the mirror's), except
    where the private copy is safe, differs, and was modified before the mirror's: a teammate's change not
    yet adopted, whose private copy is the one hidden. Shadowing depends on each store's names and rows, and
    every name added or removed changes its directory, whose stat is each index's generation (while
    racy, the names themselves are compared on open); a file rewritten in place changes its row's stat.
    The result is kept in the last index under those generations: a session pays for it once per change
    of a directory, not once per prompt.
    """
    if len(sources) < 2:
        return [0] * len(sources), frozenset()
    last = sources[-1].index
    key = "shadowed:" + "|".join(f"{s.kind}={s.index.generation()}" for s in sources)
    known = (last.memo(key) or "").split(";") if last.verify else []
    if len(known) == 2:
        kept = known[0].split(",")
        if len(kept) == len(sources) and all(k.isdigit() for k in kept):
            return [int(k) for k in kept], frozenset(filter(None, known[1].split("/")))
    seen: set[str] = set()
    counts: list[int] = []
    for source in sources:
        files = {file for (file,) in source.index.conn.execute("SELECT file FROM docs")}
        counts.append(len(files & seen))
        seen |= files
    newer = newer_in_mirror(sources)
    if newer:
        at = next(i for i, s in enumerate(sources) if s.kind == "private")
        counts[at] += len(newer)
        counts[next(i for i, s in enumerate(sources) if s.kind == "mirror")] -= len(newer)
    if last.verify:
        last.remember(key, ",".join(map(str, counts)) + ";" + "/".join(sorted(newer)))
    return counts, frozenset(newer)


def newer_in_mirror(sources: Sequence[Source]) -> set[str]:
    """The names whose private copy is safe, differs from the mirror's, and was modified before it."""
    private = next((s for s in sources if s.kind == "private"), None)
    mirror = next((s for s in sources if s.kind == "mirror"), None)
    if private is None or mirror is None:
        return set()
    mine = {file: (sha, modified or "") for file, sha, modified, visibility in
            private.index.conn.execute("SELECT file, sha, modified, visibility FROM docs") if visibility == "safe"}
    return {file for file, sha, modified in mirror.index.conn.execute("SELECT file, sha, modified FROM docs")
            if file in mine and mine[file][0] != sha and (modified or "") > mine[file][1]}
