"""``memfold sync --take mine|theirs NAME`` and what ``memfold sync`` leaves alone: a conflict or held file
settled for one side, and mirror files that are only behind the store kept as git left them."""

from __future__ import annotations

from ..state.model import Kept, Operation, PreState
from .shape import safe_by_place
from .sync import UNTRUSTED_FIX, Adopted, Sync, behind, line_of, visibility_of

SIDES = ("mine", "theirs")


def settle(sync: Sync, pre: PreState, name: str, side: str) -> Sync:
    """``sync`` with the conflict (or held file) ``name`` settled for ``side``: ``mine`` keeps the private
    copy and the mirror follows it (or loses the file, where the copy is private or gone); ``theirs`` takes
    the mirror's version into the store (or deletes the copy, where the mirror has none)."""
    from ..errors import InputRejected as Refused

    if side not in SIDES:
        raise Refused(f"--take {side!r} is not mine or theirs", code="sync.side")
    conflict = next((c for c in sync.conflicts if c.name == name), None)
    held = next((h for h in sync.held if h.name == name), None)
    if conflict is None and held is None:
        raise Refused(f"{name} is neither in conflict nor held back", code="sync.nothing-to-settle",
                      hint="`memfold sync` lists the conflicts and held files")
    operations = list(sync.operations)
    if side == "theirs":
        if held is not None and held.code != "held.untrusted":
            raise Refused(f"{name} is held back ({held.code}): {held.problem}", code="sync.held",
                          hint=held.fix + f"; or `memfold sync --take mine {name}` to replace it with yours")
        if held is not None:
            raise Refused(f"{name} came from a project you have not trusted", code="sync.untrusted",
                          hint=UNTRUSTED_FIX)
        theirs = pre.public.files.get(name) if name in pre.public.hashes else None
        exists = name in pre.harness.hashes
        if theirs is None:
            if exists:
                operations.append(Operation(name, "delete", visibility_of(pre, name)))
        else:
            operations.append(Operation(name, "rewrite" if exists else "create", "safe", safe_by_place(theirs)))
    elif held is not None and name in pre.public.held:
        raise Refused(f"{name} in the mirror is a link or special file; memfold never writes through it",
                      code="sync.link", hint=held.fix)
    conflicts = [c for c in sync.conflicts if c.name != name]
    helds = [h for h in sync.held if h.name != name]
    kept = Kept({n: d for n, d in sync.kept.files.items() if n != name},
                {n: line for n, line in sync.kept.lines.items() if n != name})
    agreed = conflict.agreed if conflict is not None else held.agreed if held is not None else None
    adopted = [*sync.adopted, *([Adopted(name, "taken-theirs", pre.public.hashes.get(name), agreed)]
                                if side == "theirs" else [])]
    return Sync(sync.base, sync.trusted, operations, adopted, helds, conflicts, kept)


def keep_behind(sync: Sync, pre: PreState, settled: str | None = None) -> Sync:
    """``sync`` that leaves the mirror's files that are only behind the store as they are: ``memfold sync``
    carries out what came from outside and nothing else (an older commit checked out stays as git left
    it, so checking out the newer one again never meets files memfold wrote meanwhile). ``settled``: the
    name ``--take`` settles, which the sync writes all the same."""
    late = [name for name in behind(pre, sync) if name != settled]
    if not late:
        return sync
    files = dict(sync.kept.files)
    lines = dict(sync.kept.lines)
    for name in late:
        files[name] = pre.public.files[name] if name in pre.public.hashes else None
        if files[name] is not None:
            line = line_of(name, files[name] or b"")
            if line is not None:
                lines[name] = line
    return Sync(sync.base, sync.trusted, sync.operations, sync.adopted, sync.held, sync.conflicts, Kept(files, lines))
