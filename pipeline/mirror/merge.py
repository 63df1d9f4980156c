"""Three-way merges of mirror files that git hands to memfold's merge drivers: memories and chain heads.

Pure functions over the three versions' bytes. Each returns the merged bytes, or None when the versions
do not merge cleanly this way (a conflict, a version that does not parse): the caller then falls back
to git's own text merge, which writes the usual conflict markers.

A memory merges field by field: ``modified`` takes the later of the two sides; every other frontmatter
field, and the body, takes the side that changed it, and is a conflict when both sides changed it to
different values. The body is merged by lines with the text merge the caller passes (git's), and only
when both sides changed it. The result is rendered the way memfold writes memories, and a field that
no version gave (``name``, ``type`` or ``visibility`` of a host-written file) stays absent.

A chain head merges only within one chain: the head with the higher sequence number names the newer
receipt of that chain, so it wins.
"""

from __future__ import annotations

from ..errors import MemfoldError
from ..store.memory import build_memory, memory_fields, parse_memory, render_memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # (base, ours, theirs) -> the merged text, or None when it conflicts.
    TextMerge = Callable[[bytes, bytes, bytes], "bytes | None"]
    # gitinfo.merge_file: (ours, base, theirs, labels, marker size) -> (text, clean), None when impossible.
    GitMerge = Callable[[bytes, bytes, bytes, tuple[str, str, str], int], "tuple[bytes, bool] | None"]

KINDS = ("memory", "head")
_MISSING: Any = object()
_CONFLICT: Any = object()
# Fields a memory file may leave out, and renders with a default when given.
_DEFAULTED = ("name", "type", "visibility")


def settled(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The result when at most one side changed the bytes (git usually settles these itself)."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


def merge_head(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """The side whose head has the higher sequence number of the one chain both name; else None."""
    from ..receipts.witness import parse_head  # json and pathlib: only for heads

    done = settled(base, ours, theirs)
    if done is not None:
        return done
    mine, other = parse_head(ours), parse_head(theirs)
    if mine is None or other is None or mine.chain != other.chain or mine.seq == other.seq:
        return None
    return ours if mine.seq > other.seq else theirs


def merge_memory(base: bytes, ours: bytes, theirs: bytes, merge_text: TextMerge,
                 file: str = "<memory>") -> bytes | None:
    """The field-aware merge of three versions of one memory file, or None (conflict, unparseable)."""
    done = settled(base, ours, theirs)
    if done is not None:
        return done
    try:
        versions = [_parts(data, file) for data in (base, ours, theirs)]
    except MemfoldError:
        return None  # a version that does not parse (or an add/add, with no base): git's text merge
    (old_known, old_extra, old_body), (my_known, my_extra, my_body), (their_known, their_extra, their_body) = versions
    known = _merge_fields(old_known, my_known, their_known)
    extra = _merge_fields(old_extra, my_extra, their_extra)
    body = _merge_body(old_body, my_body, their_body, merge_text)
    if known is None or extra is None or body is None:
        return None
    return _render(known, extra, body, file)


def _merge_fields(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any] | None:
    """Each key merged on its own; None when one conflicts."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys([*base, *ours, *theirs]):
        value = _merge_field(key, base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING))
        if value is _CONFLICT:
            return None
        if value is not _MISSING:
            merged[key] = value
    return merged


def _parts(data: bytes, file: str) -> tuple[dict[str, str], dict[str, Any], str]:
    """One version as given: (known fields, other frontmatter keys, the body as memfold renders it)."""
    parse_memory(data, file)  # the version must be a valid memory, not only parse
    known, extra, body = memory_fields(data, file)
    body = body.replace("\r", "\n").strip("\n")
    return known, extra, body + "\n" if body else ""


def _merge_field(key: str, base: Any, ours: Any, theirs: Any) -> Any:
    """The merged value: ``_MISSING`` when the field goes, ``_CONFLICT`` when both sides changed it."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    if key == "modified":
        return _later(ours, theirs)
    return _CONFLICT


def _later(ours: Any, theirs: Any) -> Any:
    """The later of two ``modified`` stamps (one side's alone when the other has none); a conflict when
    either is not an ISO date or stamp, which no order can compare."""
    if theirs is _MISSING:
        return ours
    if ours is _MISSING:
        return theirs
    if not (_iso(ours) and _iso(theirs)):
        return _CONFLICT
    return max(ours, theirs)


def _iso(value: Any) -> bool:
    """``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM:SSZ``: what memfold writes, in the order strings sort."""
    return (isinstance(value, str) and len(value) in (10, 20) and value[:4].isdigit() and value[4] == "-"
            and value[5:7].isdigit() and value[7] == "-" and value[8:10].isdigit()
            and (len(value) == 10 or (value[10] == "T" and value[19] == "Z")))


def _merge_body(base: str, ours: str, theirs: str, merge_text: TextMerge) -> str | None:
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    merged = merge_text(base.encode("utf-8"), ours.encode("utf-8"), theirs.encode("utf-8"))
    if merged is None:
        return None
    try:
        return merged.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _render(known: dict[str, str], extra: dict[str, Any], body: str, file: str) -> bytes | None:
    """The merged memory as memfold writes it, or None when the merged fields make no valid memory."""
    try:
        memory = build_memory(known, extra, body, file)
        data = render_memory(memory, omit=[key for key in _DEFAULTED if key not in known])
        parse_memory(data, file)
    except MemfoldError:
        return None
    return data


def merge_versions(kind: str, base: bytes, ours: bytes, theirs: bytes, file: str,
                   labels: tuple[str, str, str] = ("ours", "base", "theirs"), marker_size: int = 7,
                   git_merge: GitMerge | None = None) -> tuple[bytes, bool] | None:
    """What a merge driver leaves: (bytes, clean). memfold's merge of ``kind`` when it settles the file,
    else git's text merge with its conflict markers; None when git cannot merge them either (binary)."""
    def run_git(*args: Any) -> tuple[bytes, bool] | None:
        if git_merge is not None:
            return git_merge(*args)
        from .gitinfo import merge_file  # a process to start: only for what memfold cannot settle alone

        return merge_file(*args)

    def text_merge(old: bytes, mine: bytes, other: bytes) -> bytes | None:
        done = run_git(mine, old, other, labels, marker_size)
        return done[0] if done is not None and done[1] else None

    merged = merge_memory(base, ours, theirs, text_merge, file) if kind == "memory" else merge_head(base, ours, theirs)
    if merged is not None:
        return merged, True
    return run_git(ours, base, theirs, labels, marker_size)
