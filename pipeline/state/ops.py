"""What each direct edit changes: the operations add, update, forget, rename, clear and replace make of
the pre-state, each checked against it (the name taken or missing, a near-duplicate, an expiry date in
the past, a choice the schema does not know) before any transaction starts."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import InputRejected, StaleState
from ..frozen import Frozen
from ..store.duplicates import near_duplicate
from ..store.memory import TYPES, VISIBILITIES, Memory, render_memory, sanitize_line, stamp, today
from ..store.state import find_name
from .model import Operation, PreState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store.stored import Broken


class MemoryInput(Frozen):
    """The fields a user gave for add or update; None means not given (immutable)."""

    __slots__ = ("description", "type", "visibility", "body", "expires", "evidence")
    description: str | None
    type: str | None
    visibility: str | None
    body: str | None
    expires: str | None
    # The memory's citations (``store.evidence``), anchored by the caller; None: none given.
    evidence: tuple[Any, ...] | None

    def __init__(self, description: str | None = None, type: str | None = None,
                 visibility: str | None = None, body: str | None = None, expires: str | None = None,
                 evidence: tuple[Any, ...] | None = None) -> None:
        self._set(description=description, type=type, visibility=visibility, body=body, expires=expires,
                  evidence=evidence)


def _check_choice(value: str | None, choices: tuple[str, ...], what: str) -> None:
    if value is not None and value not in choices:
        raise InputRejected(f"{what} {value!r} is not one of {', '.join(choices)}", code=f"memory.{what}")


def add_ops(raw: str, data: MemoryInput, now: Any) -> Callable[[PreState], list[Operation]]:
    """``raw`` is a file name (used as given) or a title in words (its file is derived, or found by title)."""

    def build(pre: PreState) -> list[Operation]:
        _check_choice(data.type, TYPES, "type")
        _check_choice(data.visibility, VISIBILITIES, "visibility")
        check_expires(data.expires)
        description = sanitize_line(data.description or "")
        if not description:
            raise InputRejected("a memory needs a one-line --description", code="memory.description")
        name, title = _add_target(pre, raw, data.type or "project")
        # Names follow the type (``feedback_tabs.md``): without --type, a file's prefix gives it.
        prefix = name.split("_", 1)[0] if "_" in name else ""
        mtype = data.type or (prefix if prefix in TYPES else "project")
        clash = find_name([*pre.memories, *pre.broken], name)
        existing = pre.memories.get(name)
        if clash is not None and clash != name:
            raise InputRejected(f"{name} clashes with existing {clash} (names are unique case-insensitively)",
                                code="memory.duplicate", hint=f"use `memfold update {clash}`")
        if name in pre.broken:
            raise InputRejected(f"{name} exists but does not parse: {pre.broken[name].problem}",
                                code="memory.broken", hint=pre.broken[name].fix)
        memory = Memory(
            name=title, description=description, type=mtype,
            visibility=data.visibility or "private",
            created=existing.created if existing and existing.created else today(now),
            modified=stamp(now), expires=data.expires, body=data.body or "",
            extra=existing.extra if existing else {}, evidence=data.evidence or (),
        )
        if existing is None:
            twin = near_duplicate(pre.memories, pre.harness.hashes, pre.cache, name, memory)
            if twin:
                raise InputRejected(
                    f"{name} is a near-duplicate of {twin}; not stored twice",
                    code="memory.near-duplicate", hint=f"update the existing memory with `memfold update "
                    f"{twin.split(' ')[0]}` instead", data={"matches": twin.split(" ")[0]},
                )
        content = render_memory(memory)
        return [Operation(name, "rewrite" if existing else "create", memory.visibility, content)]

    return build


def _add_target(pre: PreState, raw: str, mtype: str) -> tuple[str, str]:
    """The file ``add`` writes and the title it keeps: a file name as given; a title finds the memory
    of that title (overwritten, like a file name) or becomes ``<type>_<slug>.md``, numbered on collision."""
    from ..store.memory import normalize_name
    from ..store.names import fold_title, names_a_file, new_file_name, title_of

    if names_a_file(raw, [*pre.memories, *pre.broken]):
        name = normalize_name(raw)
        existing = pre.memories.get(name)
        return name, existing.name if existing is not None else name.removesuffix(".md")
    title = title_of(raw)
    same = sorted(f for f, m in pre.memories.items() if fold_title(m.name) == fold_title(title))
    if len(same) > 1:
        raise InputRejected(f"{title!r} is the title of {len(same)} memories: {', '.join(same)}",
                            code="memory.ambiguous", hint="give the file name of the one to overwrite",
                            data={"candidates": same})
    if same:
        return same[0], title
    return new_file_name(title, mtype, {**pre.harness.files, **pre.public.files}), title


def check_expires(value: str | None) -> None:
    """``--expires`` is a real day: 2026-02-30 and 2026-13-45 are refused before anything is read."""
    if value is None:
        return
    import datetime as dt

    try:
        ok = len(value) == 10 and dt.date.fromisoformat(value).isoformat() == value
    except ValueError:
        ok = False
    if not ok:
        raise InputRejected(f"--expires {value!r} is not a day of the calendar (YYYY-MM-DD)",
                            code="memory.expires", hint="give a real date, e.g. --expires 2027-01-31")


def update_ops(name: str, data: MemoryInput, now: Any,
               anchor: Callable[[Memory], tuple[Any, ...]] | None = None) -> Callable[[PreState], list[Operation]]:
    """``anchor`` gives the updated memory's citations (re-anchored to the repository as it is now)."""

    def build(pre: PreState) -> list[Operation]:
        _check_choice(data.type, TYPES, "type")
        _check_choice(data.visibility, VISIBILITIES, "visibility")
        check_expires(data.expires)
        actual = require(pre, name, parsed=True)
        old = pre.memories[actual]
        changes: dict[str, Any] = {k: v for k, v in (
            ("description", sanitize_line(data.description) if data.description is not None else None),
            ("type", data.type), ("visibility", data.visibility), ("body", data.body),
            ("expires", data.expires)) if v is not None}
        if "description" in changes and not changes["description"]:
            raise InputRejected("the description cannot be empty", code="memory.description")
        if anchor is not None:
            changes["evidence"] = anchor(old.with_changes(**changes))
        elif data.evidence is not None:
            changes["evidence"] = data.evidence
        if all(getattr(old, key) == value for key, value in changes.items()):
            return []  # nothing changes: no write, no receipt, ``modified`` kept
        memory = old.with_changes(**changes, modified=stamp(now))
        return [Operation(actual, "rewrite", memory.visibility, render_memory(memory))]

    return build


def forget_ops(name: str) -> Callable[[PreState], list[Operation]]:
    def build(pre: PreState) -> list[Operation]:
        actual = require(pre, name)
        old = pre.memories.get(actual)
        return [Operation(actual, "delete", old.visibility if old is not None else "private")]

    return build


def require(pre: PreState, name: str, *, parsed: bool = False) -> str:
    """The file ``name`` (a title, slug or file name) names; broken files count unless ``parsed``."""
    return require_in(pre.memories, pre.broken, name, parsed=parsed)


def require_in(memories: Mapping[str, Memory], broken: Mapping[str, Broken], name: str, *,
               parsed: bool = False) -> str:
    """``require`` over a root's parsed memories and broken files, without the rest of a PreState."""
    from ..store.names import resolve

    titles: dict[str, str | None] = {file: m.name for file, m in memories.items()}
    titles.update(dict.fromkeys(broken))
    actual = resolve(titles, name)
    if parsed and actual in broken:
        raise InputRejected(f"{actual} does not parse: {broken[actual].problem}", code="memory.broken",
                            hint=broken[actual].fix)
    return actual


def rename_ops(old: str, new: str, now: Any) -> Callable[[PreState], list[Operation]]:
    """The file and its frontmatter name follow; body, dates and visibility are kept. ``new`` is a
    file name, or a title in words whose file name is derived as ``add`` derives it."""
    from ..store.memory import normalize_name
    from ..store.names import names_a_file, new_file_name, title_of

    def build(pre: PreState) -> list[Operation]:
        actual = require(pre, old, parsed=True)
        memory = pre.memories[actual]
        if names_a_file(new, [*pre.memories, *pre.broken]):
            target = normalize_name(new)
            title = target.removesuffix(".md") if memory.name == actual.removesuffix(".md") else memory.name
        else:
            title = title_of(new)
            others = {n: b for root in (pre.harness.files, pre.public.files) for n, b in root.items() if n != actual}
            target = new_file_name(title, memory.type, others)
        clash = find_name([*pre.memories, *pre.broken], target)
        if clash is not None and clash != actual:
            raise InputRejected(f"{target} already exists as {clash}", code="memory.duplicate",
                                hint="forget or rename that one first")
        if target == actual and title == memory.name:
            return []
        renamed = memory.with_changes(name=title, modified=stamp(now))
        if target == actual:
            return [Operation(actual, "rewrite", renamed.visibility, render_memory(renamed))]
        return [Operation(actual, "delete", memory.visibility),
                Operation(target, "create", renamed.visibility, render_memory(renamed))]

    return build


def clear_ops() -> Callable[[PreState], list[Operation]]:
    def build(pre: PreState) -> list[Operation]:
        # Files that do not parse go too: clearing means an empty store.
        return [Operation(name, "delete", pre.memories[name].visibility if name in pre.memories else "private")
                for name in sorted({*pre.memories, *pre.broken})]

    return build


def replace_ops(name: str, content: bytes, *, expected: str, now: Any = None) -> Callable[[PreState], list[Operation]]:
    """`memfold edit`: the edited file replaces the memory, unless it changed meanwhile (exit 5).

    With ``now``, an edit that leaves ``modified`` as it was gets it set to ``now``.
    """
    from ..store.memory import parse_memory

    def build(pre: PreState) -> list[Operation]:
        actual = require(pre, name)
        if pre.harness.hashes.get(actual) != expected:
            raise StaleState(f"{actual} changed while it was being edited", code="state.stale",
                             hint="re-run `memfold edit` to start from the current version")
        memory = parse_memory(content, actual)
        before = pre.memories.get(actual)
        data = content
        if now is not None and (before is None or memory.modified == before.modified):
            data = render_memory(memory.with_changes(modified=stamp(now)))
        return [Operation(actual, "rewrite", memory.visibility, data)]

    return build
