"""Direct edits (add, update, forget, undo, …): each a parent-built plan committed as a transaction."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .apply.commit import RunRecord, Services, commit_run, gate
from .apply.runs import create_run_dir
from .apply.skeleton import transaction
from .context.manifest import build_manifest
from .errors import InputRejected, PrivacyRejected, StaleState
from .frozen import Frozen
from .fsutil import sha256_bytes
from .mirror.sync import Sync, merge_operations, sync_record, sync_warnings, synced_view, team_sync
from .receipts.maptext import MapText, maps_digest
from .state.model import Operation, PostState, PreState
from .state.post import compute_post
from .state.read import read_pre
from .store.duplicates import near_duplicate
from .store.index import capacity
from .store.jsontext import dump_json
from .store.memory import INDEX_NAME, TYPES, VISIBILITIES, Memory, render_memory, sanitize_line, stamp, today
from .store.state import find_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .state.maps import HashMaps
    from .state.warm import WarmState
    from .store.stored import Broken

EDIT_PLAN_KIND = "memory-edit-plan"
DIRECT = "direct"  # the context mode and scope of a direct edit: the parent chose the operations
PARENT_WORKER: dict[str, Any] = {"name": "parent", "kind": "parent"}
NO_SANDBOX: dict[str, Any] = {"kind": "none", "reason": "direct edit: no worker runs"}


class TxResult:
    """What a direct edit did: its run, operation summaries, receipt, warnings, and the sync that opened it."""

    __slots__ = ("run_id", "command", "operations", "receipt", "warnings", "sync")
    run_id: str | None
    command: str
    operations: list[dict[str, Any]]
    receipt: str | None
    warnings: list[str]
    sync: dict[str, Any] | None

    def __init__(self, run_id: str | None, command: str, operations: list[dict[str, Any]] | None = None,
                 receipt: str | None = None, warnings: list[str] | None = None,
                 sync: dict[str, Any] | None = None) -> None:
        self.run_id = run_id
        self.command = command
        self.operations = [] if operations is None else operations
        self.receipt = receipt
        self.warnings = [] if warnings is None else warnings
        self.sync = sync

    def __repr__(self) -> str:
        return (f"TxResult(run_id={self.run_id!r}, command={self.command!r}, operations={self.operations!r}, "
                f"receipt={self.receipt!r}, warnings={self.warnings!r})")

    def as_dict(self) -> dict[str, Any]:
        out = {"ok": True, "command": self.command, "runId": self.run_id, "operations": self.operations,
               "receipt": self.receipt, "warnings": self.warnings}
        if self.sync is not None:
            out["sync"] = self.sync
        return out


def direct_transaction(
    svc: Services, command: str, build: Callable[[PreState], list[Operation]], *, lock_timeout: float,
    extra: dict[str, Any] | None = None, publish: str = "any", warm: WarmState | None = None,
    settle: Callable[[Sync, PreState], Sync] | None = None,
) -> TxResult:
    """Read, build the operations, gate, then commit with a receipt, inside the one transaction skeleton.

    ``publish`` is what the caller may publish (``PUBLISH``): undo, import and rename restore or move
    what a person already decided, so they publish "any"; add, update and edit by a person "named".
    ``warm`` (a long-lived process) keeps the post-state as the next pre-state while nothing else
    changes the roots. ``settle`` changes the sync that opens the transaction (``sync --take``).
    """
    layout = svc.layout
    # A large store is watched for this one transaction too: the check after the commit then reads
    # back what it wrote instead of stat-ing every file again.
    with transaction(svc, command, lock_timeout=lock_timeout) as tx:
        watched = warm if warm is not None else _one_shot_watch(layout, svc.limits)
        if watched is not None and tx.recovered is not None:
            watched.forget()  # recovery changed the roots: read them
        pre = watched.read() if watched is not None else read_pre(layout, svc.limits)
        try:
            result, post, final = _edit(svc, tx.run_id, command, build, pre, extra, publish, warm is not None,
                                        settle)
        except BaseException:
            if watched is not None:
                watched.forget()
            raise
        finally:
            if watched is not None and warm is None:
                watched.close()
        if warm is not None and post is not None:
            warm.committed(pre, post, final)
        if post is None:
            return result
    indexes = (("private", post.harness), ("mirror", post.public))
    result.warnings += [w for label, files in indexes if INDEX_NAME in files
                        for w in [capacity(files[INDEX_NAME], svc.limits).warning(label)] if w]
    return result


def _one_shot_watch(layout: Any, limits: Any) -> WarmState | None:
    from .state.warm import one_shot

    return one_shot(layout, limits)


def _edit(svc: Services, run_id: str, command: str, build: Callable[[PreState], list[Operation]], pre: PreState,
          extra: dict[str, Any] | None, publish: str, long_lived: bool = False,
          settle: Callable[[Sync, PreState], Sync] | None = None, synced: Sync | None = None,
          ) -> tuple[TxResult, PostState | None, HashMaps]:
    """Build, gate and commit one direct edit from ``pre`` (under the transaction's lock); a
    ``long_lived`` process removes retired run dirs after it answers."""
    layout = svc.layout
    # Teammates' changes that git brought into the mirror come first: the edit is built on them.
    sync = synced if synced is not None else team_sync(layout, svc.limits, svc.ruleset, pre, pre.cache)
    if settle is not None:
        sync = settle(sync, pre)
    view = synced_view(pre, sync.operations)
    own = build(view)
    refuse_publishing(view, own, publish)
    operations = merge_operations(pre, sync.operations, own)
    texts = MapText()  # the snapshot, the manifest and both receipts carry the same maps
    source = pre.hash_maps()
    # An earlier process's proof of this very state is found by the digest of its maps.
    post = compute_post(pre, operations, maps_digest(texts, source), kept=sync.kept)
    final = post.hash_maps()
    record = sync_record(layout, sync) if layout.mirror is not None else None
    warnings = sync_warnings(sync)
    if final == source:
        return TxResult(None, command, warnings=["nothing to change", *warnings], sync=record), None, final
    gate(svc, pre, post)
    run_dir = create_run_dir(layout.runs, layout.home, run_id, scratch=False)  # no worker
    selected = sorted(op.name for op in operations if op.name in pre.memories)
    snapshot = texts.dump({"kind": "memfold-direct-edit", "command": command, **(extra or {}),
                           "sourceHashes": source})
    artifact = sha256_bytes(snapshot)
    manifest = build_manifest(
        layout=layout, run_id=run_id, run_dir=run_dir, snapshot_digest=artifact, context_mode=DIRECT,
        scope=DIRECT, selected=selected, source=source, worker=PARENT_WORKER, sandbox=NO_SANDBOX,
        limits=svc.limits, extract_limits={}, allow_publish=publish == "any", created_at=svc.now(),
        command=command)
    identity = {key: manifest[key] for key in ("runId", "scopeKey", "scopeDigest", "artifactHash", "selected")}
    # Each summary hashes its content: built once for the plan and the result (an import has thousands).
    summaries = [op.summary() for op in operations]
    plan = {"kind": EDIT_PLAN_KIND, "schemaVersion": 1, **identity, "command": command,
            "operations": [{**summary, "content": op.content.decode("utf-8") if op.content else None}
                           for summary, op in zip(summaries, operations, strict=True)]}
    plan_bytes = dump_json(plan)
    artifacts = {"snapshot.json": snapshot, "manifest.json": texts.dump(manifest), "plan.json": plan_bytes}
    rec = RunRecord(run_id, manifest["scopeDigest"], artifact, selected, command, PARENT_WORKER, NO_SANDBOX)
    log_path = commit_run(svc, run_dir, rec, pre, post, plan_bytes, artifacts, hashes=(source, final),
                          texts=texts, prune_later=long_lived, sync=record)[1]
    warnings += attributes_kept(svc, post, source, final)
    return TxResult(run_id, command, summaries, str(log_path), warnings, record), post, final


def attributes_kept(svc: Services, post: PostState, source: HashMaps, final: HashMaps) -> list[str]:
    """The repository's .gitattributes block kept current once a transaction changed a mirror that holds
    memory files (``mirror.attributes``); a warning when it cannot be."""
    if svc.layout.mirror is None or source["public"] == final["public"]:
        return []
    from .mirror.attributes import keep_block

    warning = keep_block(svc.layout.project_root, any(name != INDEX_NAME for name in post.public))
    return [warning] if warning else []


def commit_sync(svc: Services, run_id: str, pre: PreState, sync: Sync) -> TxResult:
    """Commit ``sync`` alone from ``pre``, inside a transaction the caller holds (a consolidation's, whose
    worker must find the adopted files on disk)."""
    return _edit(svc, run_id, "sync", lambda view: [], pre, None, "any", synced=sync)[0]


# any: no check (--allow-publish); named: the memory the command names may become safe, a copy of
# another private memory may not; none: nothing private becomes safe (an agent over MCP).
PUBLISH = ("any", "named", "none")
MCP_PUBLISH_HINT = ("publishing is a person's decision: run `memfold update NAME --visibility safe`, "
                    "or set mcp.allow_publish in the config")


def refuse_publishing(pre: PreState, operations: list[Operation], publish: str) -> None:
    """Refuse what ``publish`` does not allow before anything is written (exit 1)."""
    if publish == "any":
        return
    from .store.memory import parse_memory
    written: dict[str, Memory] = {}
    for op in operations:
        if op.kind == "delete" or op.classification != "safe" or op.content is None:
            continue
        old = pre.memories.get(op.name)
        if old is not None and not old.is_safe and publish == "none":
            raise PrivacyRejected(f"{op.name} is private and this would make it safe (copied to the "
                                  "git-tracked mirror)", code="mcp.publish-refused", hint=MCP_PUBLISH_HINT)
        if pre.harness.hashes.get(op.name) != sha256_bytes(op.content):
            written[op.name] = parse_memory(op.content, op.name)
    if not written:
        return
    from .privacy.nearcopy import NEAR_COPY, near_copies, near_copy_message

    for name, found in sorted(near_copies(pre, written).items()):
        message = f"{name} would be safe (copied to the git-tracked mirror) but {near_copy_message(found)}"
        if publish == "none":
            raise PrivacyRejected(message, code="mcp.publish-refused", hint=MCP_PUBLISH_HINT)
        raise PrivacyRejected(message, code=NEAR_COPY, hint="reword it, keep it private, or pass --allow-publish "
                              "to publish it anyway")


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
        clash = find_name([*pre.memories, *pre.broken], name)
        existing = pre.memories.get(name)
        if clash is not None and clash != name:
            raise InputRejected(f"{name} clashes with existing {clash} (names are unique case-insensitively)",
                                code="memory.duplicate", hint=f"use `memfold update {clash}`")
        if name in pre.broken:
            raise InputRejected(f"{name} exists but does not parse: {pre.broken[name].problem}",
                                code="memory.broken", hint=pre.broken[name].fix)
        memory = Memory(
            name=title, description=description, type=data.type or "project",
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
    from .store.memory import normalize_name
    from .store.names import fold_title, is_file_form, new_file_name, title_of

    if is_file_form(raw):
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
    from .store.names import resolve

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
    from .store.memory import normalize_name
    from .store.names import is_file_form, new_file_name, title_of

    def build(pre: PreState) -> list[Operation]:
        actual = require(pre, old, parsed=True)
        memory = pre.memories[actual]
        if is_file_form(new):
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
    from .store.memory import parse_memory

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
