"""Direct edits (add, update, forget, undo, …): each a parent-built plan committed as a transaction."""

from __future__ import annotations

from collections.abc import Callable

from .apply.commit import RunRecord, Services, commit_run, gate
from .apply.runs import create_run_dir
from .apply.skeleton import transaction
from .context.manifest import build_manifest
from .errors import PrivacyRejected
from .fsutil import sha256_bytes
from .mirror.sync import Sync, merge_operations, sync_record, sync_warnings, synced_view, team_sync
from .receipts.maptext import MapText, maps_digest
from .state.model import Operation, PostState, PreState
from .state.post import compute_post
from .state.read import read_pre
from .store.index import capacity
from .store.jsontext import dump_json
from .store.memory import INDEX_NAME, Memory

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .state.maps import HashMaps
    from .state.warm import WarmState

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
