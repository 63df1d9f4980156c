"""Commit a computed post-state as one receipted transaction (shared by direct edits and consolidation)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import VerifyFailed
from ..frozen import Frozen
from ..fsutil import ensure_dir, read_bounded, sha256_bytes
from ..mirror.guard import name_gate, privacy_gate, refuse_safe_without_mirror, verify_post
from ..paths import Layout
from ..receipts.log import LogEntry, log_name
from ..receipts.maptext import MapText, maps_digest
from ..receipts.newest import NEWEST, newest_bytes
from ..receipts.receipt import build_receipt, diff_maps, head_digest, log_ends, remember_landed, remember_written
from ..receipts.witness import Head, head_name, legacy_head_name, read_head_file
from ..state.landed import current_hashes, landed_hashes
from ..state.maps import HashMaps
from ..state.model import PostState, PreState
from ..state.proven import proven_maps, record_proof
from ..store.memory import stamp
from ..store.state import Limits, refuse_mirror_over
from ..store.statecache import cache_for
from ..timing import Timings
from .durable import SYNCFS_MIN
from .journal import apply_changes as apply_changes  # re-exported: the bench times it here
from .recovery import recover
from .roots import Change, RootResolver
from .runs import prune_runs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..privacy import RuleSet

ROOTS = ("harness", "public", "heads", "receipts")
# The parts of a commit its timings name (stage rows of `memfold bench`).
COMMIT_PARTS = ("commit: apply", "commit: re-verify", "commit: index wait")
# Files of a commit's staging batch besides its changes and artifacts: the pending marker, the pre
# receipt, both journal states, and the directories (the project home, runs, the run dir, each root).
_RUN_FILES = 8


def _roots(layout: Layout) -> tuple[str, ...]:
    return ROOTS if layout.mirror is not None and _heads_exist(layout) else \
        ("harness", "public", "receipts") if layout.mirror is not None else ("harness", "receipts")


def _heads_exist(layout: Layout) -> bool:
    return layout.heads is not None and os.path.isdir(layout.heads) and not os.path.islink(layout.heads)


class Services(Frozen):
    """What a transaction needs besides its inputs: paths, bounds, the clock, the privacy rules (immutable)."""

    __slots__ = ("layout", "limits", "clock", "ruleset", "keep_runs")
    layout: Layout
    limits: Limits
    clock: Callable[[], dt.datetime]
    ruleset: RuleSet | None
    keep_runs: int

    def __init__(self, layout: Layout, limits: Limits, clock: Callable[[], dt.datetime], ruleset: RuleSet | None,
                 keep_runs: int = 50) -> None:
        self._set(layout=layout, limits=limits, clock=clock, ruleset=ruleset, keep_runs=keep_runs)

    def now(self) -> str:
        return stamp(self.clock())

    def resolver(self, run_dir: Path) -> RootResolver:
        roots: dict[str, Path] = {"run": run_dir}  # built once: a large import resolves roots per file

        def resolve(key: str) -> Path:
            path = roots.get(key)
            if path is None:
                path = roots[key] = self.layout.root(key)
            return path

        return resolve


def run_recovery(svc: Services) -> str | None:
    layout = svc.layout
    return recover(layout.project_home, layout.runs, svc.resolver, _roots(layout))


class RunRecord(Frozen):
    """The identity a run is bound to (what manifest, plan and receipts must agree on); immutable."""

    __slots__ = ("run_id", "scope_digest", "artifact_hash", "selected", "command", "worker", "sandbox")
    run_id: str
    scope_digest: str
    artifact_hash: str
    selected: list[str]
    command: str
    worker: dict[str, Any]
    sandbox: dict[str, Any]

    def __init__(self, run_id: str, scope_digest: str, artifact_hash: str, selected: list[str], command: str,
                 worker: dict[str, Any], sandbox: dict[str, Any]) -> None:
        self._set(run_id=run_id, scope_digest=scope_digest, artifact_hash=artifact_hash, selected=selected,
                  command=command, worker=worker, sandbox=sandbox)


def gate(svc: Services, pre: PreState, post: PostState) -> None:
    """Everything that must hold before anything is written: privacy, post-state shape."""
    if not post.mirrored:
        refuse_safe_without_mirror(post)
        if svc.ruleset is not None:
            name_gate(post, svc.ruleset)
        verify_post(post, svc.limits, None)
        return
    if svc.ruleset is not None:
        privacy_gate(post, svc.ruleset, cache_for(svc.layout.project_home))
    verify_post(post, svc.limits, None)
    refuse_mirror_over(post.public, svc.limits, post.kept.files)


def commit_run(svc: Services, run_dir: Path, rec: RunRecord, pre: PreState, post: PostState,
               plan_bytes: bytes, artifacts: Mapping[str, bytes] | None = None,
               outcome: dict[str, Any] | None = None, *, hashes: tuple[HashMaps, HashMaps] | None = None,
               texts: MapText | None = None, timings: Timings | None = None,
               prune_later: bool = False, sync: dict[str, Any] | None = None) -> tuple[dict[str, Any], Path]:
    """Pre receipt, stage, journal, commit, re-verify on disk. Returns the post receipt and its log path.

    ``artifacts`` are run-dir files not yet written (a direct edit's plan and manifest): they are made
    durable in one batch with the pre receipt and the staged files, before the commit point.
    ``hashes`` are the source and final hash maps if the caller built them already, ``texts`` the
    encodings of them its own documents made: each map is then encoded once for the whole run.
    ``timings`` gets the commit's parts: the apply, the re-verify on disk, and the wait for the search
    indexes after it (``COMMIT_PARTS``). ``prune_later``: a long-lived process removes the run dirs
    this commit retires after it answers (``prune_runs``). ``sync``: the receipt's record of the sync
    that opened the transaction (``mirror.sync``), for a project.
    """
    t = Timings() if timings is None else timings
    layout = svc.layout
    source, final = (pre.hash_maps(), post.hash_maps()) if hashes is None else hashes
    texts = MapText() if texts is None else texts
    ops = [op.summary() for op in post.operations]
    cache = cache_for(layout.project_home)
    ends = log_ends(layout.receipts)
    seq, previous = (1, None) if ends is None else (ends[1].seq + 1, head_digest(ends[1].path, cache))
    first = rec.run_id if ends is None else ends[0].run_id
    common: dict[str, Any] = dict(
        run_id=rec.run_id, scope_key=layout.scope_key, scope_digest=rec.scope_digest,
        artifact_hash=rec.artifact_hash, plan_digest=sha256_bytes(plan_bytes), selected=rec.selected,
        source_hashes=source, final_hashes=final, operations=ops, worker=rec.worker,
        sandbox=rec.sandbox, previous=previous, command=rec.command, outcome=outcome, sync=sync,
    )
    pre_receipt = texts.dump(build_receipt(phase="pre", created_at=svc.now(), **common))
    receipt = build_receipt(phase="post", created_at=svc.now(), **common)
    receipt_bytes = texts.dump(receipt)
    # The next commit reads this receipt back as the chain head: its digest is kept by the file's hash.
    written = sha256_bytes(receipt_bytes)
    digest = remember_written(receipt, receipt_bytes, texts=texts, data_sha=written)
    cache.seen.add(written)
    cache.put("receipt", f"{log_name(seq, rec.run_id)} {written}", digest)
    changes = [*_changes("harness", pre.harness.hashes, post.harness, final["harness"]),
               *_changes("public", pre.public.hashes, post.public, final["public"])]
    touched = _touched(changes)
    heads = _head_change(layout, seq, rec.run_id, digest, bool(touched["public"]), ends)
    changes.extend(heads)
    head = heads[0] if heads else None
    changes.append(Change("receipts", log_name(seq, rec.run_id), receipt_bytes, None, written))
    changes.append(Change("run", "post-receipt.json", receipt_bytes, None, written))
    # The log's pointer lands with the entry it names, so the next commit reads it instead of listing
    # the log; a roll-back puts the old one back from the run's backup/home.newest-receipt.json.
    changes.append(Change("home", NEWEST, newest_bytes(seq, rec.run_id, first), _pointer_hash(layout)))
    from ..store.indexcommit import Refresh, after_commit

    # The search indexes are written while the commit goes on, and committed once it has landed.
    started: list[Refresh] = []

    def index() -> None:
        started.append(after_commit(layout, source, final, post, svc.limits, touched))

    # A batch this large is made durable by one syncfs, which would also write back every page the
    # indexes dirty meanwhile: they start once it is done. Below it each file's own fsync is unaffected.
    early = len(changes) + len(artifacts or {}) + _RUN_FILES < SYNCFS_MIN
    if early:
        index()
    try:
        with t.stage(COMMIT_PARTS[0]):
            apply_changes(layout.project_home, run_dir, svc.resolver(run_dir), changes,
                          artifacts={**(artifacts or {}), "pre-receipt.json": pre_receipt},
                          synced=None if early else index)
    except BaseException:
        for refresh in started:
            refresh.finish(False)
            refresh.join()
        raise
    if not started:
        index()
    started[0].finish(True)
    try:
        with t.stage(COMMIT_PARTS[1]):
            reverify_on_disk(svc, final, head, pre)
    finally:
        with t.stage(COMMIT_PARTS[2]):
            started[0].join()
    proof = proven_maps(final)
    if proof is not None:  # what landed is the state this process checked in full: the next process need not
        record_proof(cache, proof, maps_digest(texts, final))
    remember_landed(layout.receipts / log_name(seq, rec.run_id), digest, len(receipt_bytes))
    prune_runs(layout.runs, svc.keep_runs, {rec.run_id}, later=prune_later)
    return receipt, layout.receipts / log_name(seq, rec.run_id)


def _changes(root: str, before: Mapping[str, str], files: Mapping[str, bytes],
             after: Mapping[str, str]) -> list[Change]:
    """A change for every file whose hash differs between the pre-state and the final map, by name.

    ``after`` is the post-state's own hash map (the receipt's ``finalHashes``), so the names are the
    symmetric difference of the two maps' items, found in C; only those files' bytes are looked up. Each
    change carries its hash from that map: the receipt says it, and the check after the commit reads
    every written file back against it.
    """
    names = sorted({name for name, _digest in before.items() ^ after.items()})
    return [Change(root, name, files[name] if name in after else None, before.get(name), after.get(name))
            for name in names]


def _pointer_hash(layout: Layout) -> str | None:
    try:
        return sha256_bytes(read_bounded(layout.project_home / NEWEST, 1 << 16))
    except FileNotFoundError:
        return None


def _touched(changes: list[Change]) -> dict[str, set[str]]:
    """The names of each store root the commit changes."""
    out: dict[str, set[str]] = {"harness": set(), "public": set()}
    for change in changes:
        if change.root in out:
            out[change.root].add(change.name)
    return out


def _head_change(layout: Layout, seq: int, run_id: str, digest: str, touches_mirror: bool,
                 ends: tuple[LogEntry, LogEntry] | None) -> list[Change]:
    """The chain head naming this receipt, staged in ``.memfold/heads/`` with the same commit point (and
    an older memfold's head in the mirror removed: the mirror holds memory files and its index only).

    It is not in the receipt's hash maps: it names the receipt, so the receipt cannot hash it. A change
    to the private store alone still goes through when the work tree cannot be written (a read-only
    checkout); the head then stays behind, and `memfold audit` says so.
    """
    if layout.mirror is None or layout.heads is None or \
            (not touches_mirror and not os.access(layout.project_root, os.W_OK)):
        return []
    chain = digest if ends is None else _genesis(layout, ends[0])
    ensure_dir(layout.heads, layout.project_root, mode=0o755)
    name = head_name(chain)
    old = read_head_file(layout.heads, name)
    changes = [Change("heads", name, Head(chain, seq, run_id, digest).to_bytes(),
                      None if old is None else sha256_bytes(old))]
    legacy = read_head_file(layout.mirror, legacy_head_name(chain))
    if legacy is not None:
        changes.append(Change("public", legacy_head_name(chain), None, sha256_bytes(legacy)))
    return changes


def _genesis(layout: Layout, first: LogEntry) -> str:
    try:
        chain: str | None = head_digest(first.path, cache_for(layout.project_home))
    except (OSError, ValueError):
        chain = None
    if chain is None:
        raise VerifyFailed("the first receipt of the log is unreadable, so the chain head cannot be written",
                           code="receipt.unreadable", hint="run `memfold audit` to see what happened to the log")
    return chain


def reverify_on_disk(svc: Services, final: dict[str, dict[str, str]], head: Change | None = None,
                     pre: PreState | None = None) -> None:
    now = current_hashes(svc.layout, svc.limits) if pre is None else landed_hashes(svc.layout, svc.limits, pre, final)
    differences = diff_maps(final, now)
    if head is not None and svc.layout.heads is not None \
            and read_head_file(svc.layout.heads, head.name) != head.data:
        differences.append(f"heads/{head.name} changed")
    if differences:
        raise VerifyFailed(
            "after commit the files on disk do not match the receipt: " + ", ".join(differences[:5]),
            code="verify.post-commit",
            hint="another process changed the store during the commit; run `memfold audit`",
        )
