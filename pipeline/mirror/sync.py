"""Sync: the three-way reconcile of the base, the mirror as git left it, and the private store.

The first stage of every write transaction in a project (and all of ``memfold sync``), under the same
lock and in the same receipt. For each memory file name, with B its version at the base (``state.base``),
M its version in the mirror now and P the private store's:

- M == B: nothing came from outside; the transaction derives the mirror's copy from the store as ever.
- M != B (incoming): a file that fails a check (``screen``) is *held*; in a project the user has not
  trusted, every incoming change is held. Otherwise, when P == B (the private copy did not change since
  the base) the change is *adopted*: the store takes M's bytes, or deletes its copy when M is gone. When
  P == M both sides already agree. Anything else is a *conflict*: both versions stay where they are until
  ``memfold sync --take mine|theirs NAME``.

Held files and conflicts are *kept*: the transaction leaves their mirror files (or their absence) byte for
byte, and its receipt records the version last agreed on, so the next sync sees them again as incoming.
A file of the reference tool's shape (no ``visibility``) is safe by where it lives: it is adopted with
``visibility: safe`` written into its frontmatter, in the store and the mirror alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InputRejected
from ..frozen import Frozen
from ..fsutil import sha256_bytes
from ..state.base import Base
from ..state.model import Kept, Operation, PreState
from ..store.index import index_line
from ..store.memory import INDEX_NAME, parse_memory
from .screen import HOLD_FIXES, Screen, screen_for
from .shape import safe_by_place

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..paths import Layout
    from ..privacy import RuleSet
    from ..store.state import Limits
    from ..store.statecache import StateCache


class Held(Frozen):
    """A mirror file (or an incoming deletion) left as it is, and why (immutable)."""

    __slots__ = ("name", "code", "problem", "fix", "sha256", "agreed")
    name: str
    code: str
    problem: str
    fix: str
    sha256: str | None
    agreed: str | None

    def __init__(self, name: str, code: str, problem: str, fix: str, sha256: str | None, agreed: str | None) -> None:
        self._set(name=name, code=code, problem=problem, fix=fix, sha256=sha256, agreed=agreed)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "code": self.code, "problem": self.problem, "fix": self.fix,
                "sha256": self.sha256, "agreed": self.agreed}


class Conflict(Frozen):
    """A memory changed both in the mirror (theirs) and in the private store (mine) since they agreed."""

    __slots__ = ("name", "mine", "theirs", "agreed")
    name: str
    mine: str | None
    theirs: str | None
    agreed: str | None

    def __init__(self, name: str, mine: str | None, theirs: str | None, agreed: str | None) -> None:
        self._set(name=name, mine=mine, theirs=theirs, agreed=agreed)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "mine": self.mine, "theirs": self.theirs, "agreed": self.agreed,
                "fix": f"`memfold sync --take mine {self.name}` or `memfold sync --take theirs {self.name}`"}


class Adopted(Frozen):
    """A change that came through the mirror and was carried into the private store."""

    __slots__ = ("name", "change", "sha256", "agreed")
    name: str
    change: str  # added | changed | deleted
    sha256: str | None
    agreed: str | None

    def __init__(self, name: str, change: str, sha256: str | None, agreed: str | None) -> None:
        self._set(name=name, change=change, sha256=sha256, agreed=agreed)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "change": self.change, "sha256": self.sha256, "agreed": self.agreed}


class Sync(Frozen):
    """What a sync found and does: the private store's operations, and what the mirror keeps as it is."""

    __slots__ = ("base", "trusted", "operations", "adopted", "held", "conflicts", "kept")
    base: Base
    trusted: bool
    operations: list[Operation]
    adopted: list[Adopted]
    held: list[Held]
    conflicts: list[Conflict]
    kept: Kept

    def __init__(self, base: Base, trusted: bool, operations: list[Operation], adopted: list[Adopted],
                 held: list[Held], conflicts: list[Conflict], kept: Kept) -> None:
        self._set(base=base, trusted=trusted, operations=operations, adopted=adopted, held=held,
                  conflicts=conflicts, kept=kept)

    @property
    def quiet(self) -> bool:
        """Nothing came from outside: the transaction is the user's own alone."""
        return not (self.adopted or self.held or self.conflicts)

    def names(self) -> set[str]:
        """Every name this sync touched or kept apart."""
        return {*(a.name for a in self.adopted), *(h.name for h in self.held), *(c.name for c in self.conflicts)}


UNTRUSTED_FIX = "run `memfold trust` in this project to adopt the team's memories (only if you trust its committers)"


def reconcile(pre: PreState, base: Base, *, trusted: bool, screen: Screen) -> Sync:
    """The sync of ``pre`` against ``base`` (pure: nothing is read or written here)."""
    mirror, harness = pre.public, pre.harness
    names = (set(mirror.hashes) | set(mirror.held) | set(base.public) | set(base.agreed)) - {INDEX_NAME}
    operations: list[Operation] = []
    adopted: list[Adopted] = []
    held: list[Held] = []
    conflicts: list[Conflict] = []
    for name in sorted(names):
        theirs = mirror.hashes.get(name)
        agreed = base.version(name)
        mine = harness.hashes.get(name)
        if name in mirror.held:
            code, problem = mirror.held[name]
            held.append(Held(name, code, problem, HOLD_FIXES.get(code, "fix or remove it in git"), None, agreed))
            continue
        if theirs == agreed:
            continue
        if theirs is None and not base.knows_deletions:
            continue  # without a head git carried, a file missing here may never have been checked out
        if theirs is not None and base.known_version(name, theirs):
            continue  # a version this store wrote before: an older checkout, only behind
        if not trusted:
            problem = (f"{name} was deleted in the mirror" if theirs is None
                       else f"{name} came into the mirror from outside (git or a hand edit)")
            held.append(Held(name, "held.untrusted", problem + "; this project is not trusted", UNTRUSTED_FIX,
                             theirs, agreed))
            continue
        if theirs is None:
            if mine == agreed:
                operations.append(Operation(name, "delete", visibility_of(pre, name)))
                adopted.append(Adopted(name, "deleted", None, agreed))
            elif mine is not None:
                conflicts.append(Conflict(name, mine, None, agreed))
            continue
        data = mirror.files[name]
        found = screen(name, data)
        if found is not None:
            held.append(Held(name, *found, theirs, agreed))
            continue
        if mine == theirs:
            continue  # both sides already hold the same bytes
        if mine == agreed:
            content = safe_by_place(data)
            operations.append(Operation(name, "rewrite" if mine is not None else "create", "safe", content))
            adopted.append(Adopted(name, "added" if mine is None else "changed", theirs, agreed))
            continue
        conflicts.append(Conflict(name, mine, theirs, agreed))
    kept = _kept(pre, held, conflicts)
    return Sync(base, trusted, operations, adopted, held, conflicts, kept)


def visibility_of(pre: PreState, name: str) -> str:
    memory = pre.memories.get(name)
    return memory.visibility if memory is not None else "private"


def _kept(pre: PreState, held: Iterable[Held], conflicts: Iterable[Conflict]) -> Kept:
    """The mirror files (or absences) the transaction leaves, and their index lines."""
    files: dict[str, bytes | None] = {}
    lines: dict[str, str] = {}
    index = pre.public.files.get(INDEX_NAME)
    old_lines = _index_lines(index) if index is not None else {}
    for name in [h.name for h in held] + [c.name for c in conflicts]:
        if name in pre.public.held:
            files[name] = None
            if name in old_lines:
                lines[name] = old_lines[name]
            continue
        data = pre.public.files.get(name) if name in pre.public.hashes else None
        files[name] = data
        if data is None:
            continue
        line = line_of(name, data) or old_lines.get(name)
        lines[name] = line or f"- [{name.removesuffix('.md')}]({name}) — held by memfold (`memfold sync` says why)"
    return Kept(files, lines)


def line_of(name: str, data: bytes) -> str | None:
    try:
        memory = parse_memory(data, name)
    except InputRejected:
        return None
    return index_line(name, memory, private_marker=False)


def _index_lines(index: bytes) -> dict[str, str]:
    """Each ``- [title](file) — …`` line of an index, by the file it names."""
    out: dict[str, str] = {}
    for line in index.decode("utf-8", "replace").splitlines():
        if line.startswith("- [") and "](" in line:
            target = line.split("](", 1)[1].split(")", 1)[0]
            out.setdefault(target, line)
    return out


def consistent(pre: PreState) -> bool:
    """Whether the mirror holds exactly the store's safe memories, byte for byte, and nothing held: then
    whatever the base, a sync has nothing to do (each name agrees on both sides). Compared in C."""
    if pre.public.held:
        return False
    hashes = pre.harness.hashes
    safe = {name: hashes[name] for name, memory in pre.memories.items() if memory.is_safe and name in hashes}
    mirrored = dict(pre.public.hashes)
    mirrored.pop(INDEX_NAME, None)
    return safe == mirrored


def team_sync(layout: Layout, limits: Limits, ruleset: RuleSet | None, pre: PreState,
              cache: StateCache | None = None) -> Sync:
    """The sync of a write transaction in ``layout``'s project (the global store has none)."""
    from .trust import is_trusted

    trusted = layout.mirror is not None and is_trusted(layout.home, layout.project_root)
    if layout.mirror is None or layout.heads is None or consistent(pre):
        return Sync(Base({}), trusted, [], [], [], [], Kept())
    from ..receipts.base import find_base

    base = find_base(layout.receipts, layout.heads, layout.mirror, layout.project_root, cache)
    return reconcile(pre, base, trusted=trusted, screen=screen_for(ruleset, limits.max_file_bytes))


def synced_view(pre: PreState, operations: list[Operation]) -> PreState:
    """``pre`` as the private store will be once the sync's operations land: what a command's own
    operations are built on. Without operations, ``pre`` itself (its proofs and caches still hold)."""
    if not operations:
        return pre
    from ..store.state import RootState

    files = pre.harness.files.copy()
    hashes = dict(pre.harness.hashes)
    memories = dict(pre.memories)
    broken = dict(pre.broken)
    for op in operations:
        broken.pop(op.name, None)
        if op.kind == "delete":
            if op.name in files:
                del files[op.name]
            hashes.pop(op.name, None)
            memories.pop(op.name, None)
            continue
        assert op.content is not None
        files[op.name] = op.content
        hashes[op.name] = sha256_bytes(op.content)
        memories[op.name] = parse_memory(op.content, op.name)
    harness = RootState(pre.harness.path, files, hashes, list(pre.harness.ignored), list(pre.harness.temps))
    return PreState(harness, pre.public, memories, mirrored=pre.mirrored, cache=pre.cache, broken=broken)


def merge_operations(pre: PreState, first: list[Operation], then: list[Operation]) -> list[Operation]:
    """One operation per name for ``first`` followed by ``then`` (a command's own on the synced store),
    each of the kind it is against ``pre`` as it is on disk."""
    if not first:
        return then
    final: dict[str, Operation] = {}
    for op in [*first, *then]:
        final.pop(op.name, None)  # re-inserted last: the order is the order of the last say
        final[op.name] = op
    exists = pre.harness.hashes.keys()
    out: list[Operation] = []
    for name, op in final.items():
        if op.kind == "delete":
            if name in exists:
                out.append(op)
            continue
        kind = "rewrite" if name in exists else "create"
        out.append(op if op.kind == kind else Operation(name, kind, op.classification, op.content))
    return out


def sync_record(layout: Layout, sync: Sync) -> dict[str, Any]:
    """What a receipt records of the sync that opened its transaction: where it ran, whether the project
    was trusted, the base, and each change that came from outside with the commit (and author) that brought
    it, or ``working tree`` for an edit git does not hold."""
    record: dict[str, Any] = {"worktree": str(layout.project_root), "trusted": sync.trusted}
    if sync.quiet:
        return record
    from .gitinfo import provenance

    names = sorted(sync.names())
    found = provenance(layout.project_root, {name: _mirror_bytes(layout, name) for name in names})
    record["base"] = sync.base.as_dict()
    record["adopted"] = [{**a.as_dict(), **found.get(a.name, {})} for a in sync.adopted]
    record["held"] = [{**h.as_dict(), **found.get(h.name, {})} for h in sync.held]
    record["conflicts"] = [{**c.as_dict(), **found.get(c.name, {})} for c in sync.conflicts]
    return record


def _mirror_bytes(layout: Layout, name: str) -> bytes | None:
    from ..fsutil import read_bounded

    assert layout.mirror is not None
    try:
        return read_bounded(layout.mirror / name, 64 << 20)
    except (OSError, InputRejected):
        return None


def sync_warnings(sync: Sync) -> list[str]:
    """One line for each kind of thing the sync did or left, for a person to read."""
    out: list[str] = []
    if sync.adopted:
        names = ", ".join(a.name for a in sync.adopted[:5]) + (" ..." if len(sync.adopted) > 5 else "")
        out.append(f"adopted {len(sync.adopted)} change(s) that came through the mirror: {names}")
    untrusted = [h for h in sync.held if h.code == "held.untrusted"]
    if untrusted:
        out.append(f"{len(untrusted)} change(s) in .memory/ not adopted: this project is not trusted "
                   "(`memfold trust` adopts them)")
    others = [h for h in sync.held if h.code != "held.untrusted"]
    if others:
        out.append(f"{len(others)} mirror file(s) held back: " + "; ".join(f"{h.name} ({h.code})" for h in others[:5])
                   + " (`memfold sync` shows why and the fix)")
    if sync.conflicts:
        out.append(f"{len(sync.conflicts)} conflict(s) between the mirror and your store: "
                   + ", ".join(c.name for c in sync.conflicts[:5])
                   + " (settle with `memfold sync --take mine|theirs NAME`)")
    return out


def team_report(layout: Layout, limits: Limits, ruleset: RuleSet | None, pre: PreState) -> dict[str, Any]:
    """What the next write's sync would do, for people (``status``, ``doctor``, ``sync --dry-run``)."""
    sync = team_sync(layout, limits, ruleset, pre, pre.cache)
    return {"trusted": sync.trusted, "incoming": [a.as_dict() for a in sync.adopted],
            "held": [h.as_dict() for h in sync.held], "conflicts": [c.as_dict() for c in sync.conflicts],
            "behind": behind(pre, sync)}


def behind(pre: PreState, sync: Sync) -> list[str]:
    """Safe memories whose mirror copy is older than the store's, nothing having come from outside: written
    since from another worktree, or an older commit checked out. The next write here brings them up to date."""
    hashes, mirror, taken = pre.harness.hashes, pre.public.hashes, sync.names()
    return sorted(name for name, memory in pre.memories.items() if memory.is_safe and name not in taken
                  and mirror.get(name) != hashes.get(name))
