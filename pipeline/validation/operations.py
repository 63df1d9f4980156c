"""Rules on the plan's operations: scope, uniqueness, content, store bounds, publishing and privacy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import InputRejected, Issue
from ..planner.text import fact_key, known_keys
from ..privacy.nearcopy import NEAR_COPY, near_copies, near_copy_message
from ..store.files import size_of
from ..store.memory import Memory, windows_reserved
from .context import Context, Subject, json_path, valid_name

_MIRROR_NOTE = "safe memories are copied to the git-tracked mirror"


def operations(ctx: Context) -> Iterator[Issue]:
    roots: dict[str, list[str]] = {}
    for name in ctx.harness_names():
        roots.setdefault(name.lower(), []).append("the private store")
    for name in ctx.public_names():
        roots.setdefault(name.lower(), []).append("the mirror")
    first: dict[str, int] = {}
    for index, op in ctx.items("operations"):
        name, kind = op["name"], op["kind"]
        subject = Subject(ctx, "operations", index, op["name"], op["kind"])
        if isinstance(name, str) and windows_reserved(name):
            yield Issue("plan.operation.name-reserved", json_path("operations", index, "name"),
                        f"{subject}: a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9), "
                        "which teammates on Windows could not check out")
            continue
        if not valid_name(name):
            yield Issue("plan.operation.name", json_path("operations", index, "name"),
                        f"{subject}: not a memory file name (MEMORY.md is the index)")
            continue
        lower = name.lower()
        if lower in first:
            yield Issue("plan.operation.duplicate", json_path("operations", index, "name"),
                        f"{subject}: operations[{first[lower]}] already changes this memory "
                        "(one operation per name, compared case-insensitively)")
        else:
            first[lower] = index
        if kind in ("rewrite", "delete") and name not in ctx.selected:
            yield Issue("plan.operation.scope", json_path("operations", index, "name"),
                        f"{subject}: {kind} is only allowed on selected memories")
        if kind == "create" and lower in roots:
            yield Issue("plan.operation.exists", json_path("operations", index, "name"),
                        f"{subject}: a memory with this name already exists in "
                        f"{' and '.join(roots[lower])} (names are compared case-insensitively)")
        if kind != "delete":
            yield from _content(ctx, index, op, subject)


def _content(ctx: Context, index: int, op: dict[str, Any], subject: Subject) -> Iterator[Issue]:
    at = json_path("operations", index, "content")
    content = ctx.content(index, op)
    data = content.data
    if data is None:
        yield Issue("plan.operation.content", at, f"{subject}: content is not valid Unicode text "
                    "(it holds a lone surrogate)")
        return
    if len(data) > ctx.limits.max_file_bytes:
        yield Issue("plan.operation.too-large", at, f"{subject}: content is {len(data)} bytes in UTF-8, "
                    f"over the {ctx.limits.max_file_bytes}-byte bound")
        return
    digest = op.get("contentSha256")
    if digest is not None and digest.removeprefix("sha256:") != content.digest:
        yield Issue("plan.operation.hash", json_path("operations", index, "contentSha256"),
                    f"{subject}: contentSha256 is not the sha256 of the content's UTF-8 bytes")
    try:
        memory = content.memory()
    except InputRejected as exc:
        # parse_memory names the file first; the subject already does.
        detail = exc.message.removeprefix(f"{op['name']}: ")
        detail = ctx.redacted(detail, f"content does not parse as a memory file ({exc.code})")
        yield Issue("plan.operation.content", at, f"{subject}: {detail}")
        return
    if memory.visibility != op["classification"]:
        yield Issue("plan.operation.disagrees", at,
                    f"{subject}: the content's frontmatter says visibility {memory.visibility} "
                    f"but the operation's classification is {op['classification']}")


def bounds(ctx: Context) -> Iterator[Issue]:
    names = {n.lower() for n in ctx.harness_names()}
    for _, op in ctx.items("operations"):
        if op["kind"] == "delete" and op["name"] in ctx.pre.memories:
            names.discard(op["name"].lower())
        elif op["kind"] == "create":
            names.add(op["name"].lower())
    if len(names) > ctx.limits.max_files:
        yield Issue("bounds.file-count", json_path("operations"),
                    f"after the plan the store would hold {len(names)} memories, over the bound of "
                    f"{ctx.limits.max_files}")
    total = _mirror_after(ctx)
    if total > ctx.limits.mirror_bytes:
        yield Issue("bounds.mirror-bytes", json_path("operations"),
                    f"after the plan the mirror would hold {total} bytes of safe memories, over "
                    f"limits.mirror_bytes ({ctx.limits.mirror_bytes})")


def _mirror_after(ctx: Context) -> int:
    """The bytes of the safe memories after the plan: what the mirror will hold of this store."""
    files = ctx.pre.harness.files
    sizes = {n: size_of(files, n) for n, m in ctx.pre.memories.items() if m.is_safe}
    for index, op in ctx.items("operations"):
        data = ctx.content(index, op).data if op["kind"] != "delete" else None
        if data is not None and op["classification"] == "safe":
            sizes[op["name"]] = len(data)
        else:
            sizes.pop(op["name"], None)
    return sum(sizes.values())


def publish(ctx: Context) -> Iterator[Issue]:
    """private -> safe needs --allow-publish, and so does a safe memory that carries a private one's wording.

    Only what the plan writes as safe is measured: a safe memory left as it is was already in the
    mirror, so whatever a private memory shares with it is public, not carried out by this plan.
    """
    if ctx.allow_publish:
        return
    hint = "pass --allow-publish to consolidate to publish it"
    written: dict[str, Memory] = {}
    where: dict[str, tuple[int, Subject]] = {}
    for index, op in ctx.items("operations"):
        if op["kind"] == "delete" or op["classification"] != "safe":
            continue
        name = op["name"]
        subject = Subject(ctx, "operations", index, op["name"], op["kind"])
        current = ctx.pre.memories.get(name)
        if current is not None and not current.is_safe:
            yield Issue("privacy.publish", json_path("operations", index, "classification"),
                        f"{subject}: the memory is private and this makes it safe ({_MIRROR_NOTE}); {hint}")
            continue
        content = ctx.content(index, op)
        data = content.data
        if data is None or len(data) > ctx.limits.max_file_bytes or ctx.pre.harness.hashes.get(name) == \
                content.digest:
            continue  # unchanged, or refused by the operations rule
        try:
            written[name] = content.memory()
        except InputRejected:
            continue
        where[name] = (index, subject)
    shown = _shown_lines(ctx) if written else frozenset()
    # A memory made only of lines the mirror already shows carries nothing new out of the private store
    # (merging safe duplicates writes such memories by the hundred): the measure would only confirm it.
    written = {n: m for n, m in written.items() if not _lines_of(m) <= shown}
    for name, found in sorted(near_copies(ctx.pre, written).items()):
        index, subject = where[name]
        yield Issue(NEAR_COPY, json_path("operations", index, "content"),
                    f"{subject}: {near_copy_message(found, ctx.label)} ({_MIRROR_NOTE}); {hint}")


def privacy(ctx: Context) -> Iterator[Issue]:
    """Scan what will be safe after the plan and is new or changed; unchanged files were scanned when written."""
    assert ctx.ruleset is not None  # the registry runs this rule only with rules loaded
    for index, op in ctx.items("operations"):
        if op["kind"] == "delete" or op["classification"] != "safe":
            continue
        content = ctx.content(index, op)
        data = content.data
        if data is None or len(data) > ctx.limits.max_file_bytes:
            continue  # the operations rule rejects it; scanning it would be unbounded work
        name = op["name"]
        current = ctx.pre.memories.get(name)
        if current is not None and current.is_safe and ctx.pre.harness.hashes.get(name) == content.digest:
            continue
        subject = Subject(ctx, "operations", index, op["name"], op["kind"])
        # A file name enters the mirror (and its index) when the memory first becomes safe.
        names_it = current is None or not current.is_safe
        named = [*ctx.ruleset.scan(name, name), *ctx.ruleset.scan_name(name)] if names_it else []
        for finding in {f.rule_id: f for f in named}.values():
            yield Issue(f"privacy.{finding.category}", json_path("operations", index, "name"),
                        f"{subject}: the file name matches {finding.rule_id} ({finding.description}) "
                        f"[{finding.preview}]; {_MIRROR_NOTE}")
        for finding in ctx.ruleset.scan(op["content"], name):
            yield Issue(f"privacy.{finding.category}", json_path("operations", index, "content"),
                        f"{subject} line {finding.line}, column {finding.column}: {finding.rule_id} "
                        f"({finding.description}) [{finding.preview}]; {_MIRROR_NOTE}")


def _lines_of(memory: Memory) -> frozenset[str]:
    return known_keys(memory) | {fact_key(memory.name)}


def _shown_lines(ctx: Context) -> frozenset[str]:
    """Every line, description and title the mirror shows now of the safe memories the plan changes.

    Those are where a merge takes its lines from; an unchanged safe memory is left out only to
    keep the cost proportional to the plan (leaving one out can only measure more, never less).
    """
    out: set[str] = set()
    for _, op in ctx.items("operations"):
        memory = ctx.pre.memories.get(op["name"]) if isinstance(op.get("name"), str) else None
        if memory is not None and memory.is_safe:
            out |= _lines_of(memory)
    return frozenset(out)
