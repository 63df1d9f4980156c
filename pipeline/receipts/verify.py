"""Verify one receipt against its run and the disk; audit the whole receipt chain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..context.manifest import scope_digest
from ..errors import UsageError
from ..fsutil import read_bounded, sha256_bytes
from ..paths import Layout, find_run
from ..safetext import counted
from ..state.landed import current_hashes
from ..store.jsontext import loads_bounded, read_json
from ..store.state import Limits
from .drift import drift, explainer, older_version, recorded_sync, sync_worktree
from .findings import Report
from .log import LogEntry, log_entries
from .receipt import diff_maps, file_digest, load_receipt, normalize_maps, receipt_digest, schema_issues, strip_prefix
from .witness import GitFacts, check_witness

IDENTITY = ("runId", "scopeKey", "scopeDigest", "artifactHash")


def _load_json(path: Path, report: Report, code: str) -> Any:
    try:
        return read_json(path, 256 << 20)
    except FileNotFoundError:
        report.fail(code, path.name, f"{path.name} is missing from the run dir")
    except (OSError, ValueError) as exc:
        report.fail(code, path.name, f"{path.name} is not readable JSON ({exc.__class__.__name__})")
    return None


def check_run(run_dir: Path, receipt: dict[str, Any], report: Report, where: str) -> str | None:
    """The receipt against the exact plan bytes and the manifest kept in its run dir. Returns the work
    tree whose mirror the run wrote, as its manifest recorded it (None when that is unknown)."""
    if receipt.get("runId") != run_dir.name:
        report.fail("receipt.run-mismatch", f"{where}.runId",
                    f"receipt names run {receipt.get('runId')!r} but lies in run dir {run_dir.name}")
    try:
        plan = read_bounded(run_dir / "plan.json", 64 << 20)
    except FileNotFoundError:
        report.fail("receipt.plan-missing", f"{where}.planDigest", "plan.json is missing")
    else:
        if sha256_bytes(plan) != strip_prefix(str(receipt.get("planDigest", ""))):
            report.fail("receipt.plan-digest", f"{where}.planDigest",
                        "plan.json does not match the receipt's planDigest (the plan was changed)")
        else:
            report.checks.append(f"{where}: plan digest")
    manifest = _load_json(run_dir / "manifest.json", report, "receipt.manifest")
    if isinstance(manifest, dict):
        for key in IDENTITY:
            if manifest.get(key) != receipt.get(key):
                report.fail("receipt.identity", f"{where}.{key}", f"{key} differs between receipt and manifest")
        if sorted(manifest.get("selected") or []) != sorted(receipt.get("selected") or []):
            report.fail("receipt.selected", f"{where}.selected", "selected differs between receipt and manifest")
        report.checks.append(f"{where}: identity and selected match the manifest")
        _check_sources(run_dir, manifest, receipt, report, where)
    pre = run_dir / "pre-receipt.json"
    if pre.exists():
        pre_receipt = _load_json(pre, report, "receipt.pre")
        if isinstance(pre_receipt, dict):
            if pre_receipt.get("phase") != "pre":
                report.fail("receipt.phase", f"{where}.pre.phase", "pre-receipt.json does not have phase pre")
            if normalize_maps(pre_receipt.get("sourceHashes")) != normalize_maps(receipt.get("sourceHashes")):
                report.fail("receipt.pre-source", f"{where}.pre.sourceHashes",
                            "the pre and post receipts disagree on the source state")
    roots = manifest.get("roots") if isinstance(manifest, dict) else None
    project = roots.get("project") if isinstance(roots, dict) else None
    return project if isinstance(project, str) and project else None


def _check_sources(run_dir: Path, manifest: dict[str, Any], receipt: dict[str, Any], report: Report,
                   where: str) -> None:
    """The source state the receipt claims is the one the run recorded before anything was planned.

    The manifest holds the pre-state's hash maps, and the snapshot (whose sha256 is the artifactHash)
    holds them too for a direct edit; the scope digest is recomputed from the manifest's own fields.
    """
    source = normalize_maps(receipt.get("sourceHashes"))
    if normalize_maps(manifest.get("sourceHashes")) != source:
        report.fail("receipt.source-manifest", f"{where}.sourceHashes",
                    "sourceHashes differ from the source state the run's manifest recorded")
    else:
        report.checks.append(f"{where}: source hashes match the manifest")
    recomputed = scope_digest(str(receipt.get("runId")), str(receipt.get("scopeKey")),
                              str(manifest.get("snapshotDigest", manifest.get("artifactHash"))),
                              str(manifest.get("contextMode")), list(manifest.get("selected") or []))
    if recomputed != receipt.get("scopeDigest"):
        report.fail("receipt.scope-digest", f"{where}.scopeDigest",
                    "scopeDigest is not the digest of the manifest's run, scope, snapshot and selection")
    try:
        snapshot = read_bounded(run_dir / "snapshot.json", 256 << 20)
    except FileNotFoundError:
        return
    if sha256_bytes(snapshot) != receipt.get("artifactHash"):
        report.fail("receipt.artifact-hash", f"{where}.artifactHash",
                    "snapshot.json does not match the receipt's artifactHash (the snapshot was changed)")
        return
    try:
        recorded = loads_bounded(snapshot)
    except ValueError:
        return  # a context snapshot is not necessarily JSON with hash maps
    if isinstance(recorded, dict) and "sourceHashes" in recorded \
            and normalize_maps(recorded["sourceHashes"]) != source:
        report.fail("receipt.source-manifest", f"{where}.sourceHashes",
                    "sourceHashes differ from the source state in the run's snapshot (artifactHash)")


def check_receipt(receipt: Any, report: Report, where: str, expect_scope: str) -> bool:
    issues = schema_issues(receipt, where)
    for issue in issues[:20]:
        report.fail(issue.code, issue.path, issue.message)
    if issues:
        return False
    if receipt["phase"] != "post":
        report.fail("receipt.phase", f"{where}.phase", f"phase is {receipt['phase']!r}, expected 'post'")
    if receipt["scopeKey"] != expect_scope:
        report.fail("receipt.scope", f"{where}.scopeKey", "receipt belongs to another project")
    report.checks.append(f"{where}: schema and phase")
    return True


def verify_receipt(layout: Layout, limits: Limits, target: str, git: GitFacts | None = None) -> Report:
    """``target`` is a run id or a path to a receipt file. With ``git``, a mirror that moved on through git
    since the newest receipt (a pull, a merge, a checkout) is reported as such, not as a broken hash."""
    report = Report()
    entries = log_entries(layout.receipts)
    path = Path(target)
    if path.suffix == ".json" and path.exists():
        run_dir = path.parent if path.name in ("post-receipt.json", "pre-receipt.json") else None
    else:
        run_dir = find_run(layout.runs, target)
        path = run_dir / "post-receipt.json"
    try:
        receipt = load_receipt(path)
    except FileNotFoundError:
        raise UsageError(f"no receipt at {path} (the run may not have committed)", code="usage.no-receipt") from None
    except ValueError as exc:
        report.fail("receipt.json", str(path), f"not a receipt: {exc}")
        return report
    report.receipts = 1
    if not check_receipt(receipt, report, "receipt", layout.scope_key):
        return report
    run_id = receipt["runId"]
    if run_dir is None:
        run_dir = layout.runs / run_id if (layout.runs / run_id).is_dir() else None
    if run_dir is not None:
        check_run(run_dir, receipt, report, "receipt")
    position = next((i for i, e in enumerate(entries) if e.run_id == run_id), None)
    if position is None:
        report.fail("receipt.not-in-log", "receipt", f"run {run_id} has no receipt in the log")
        return report
    logged = entries[position]
    if read_bounded(logged.path, 256 << 20) != read_bounded(path, 256 << 20):
        if load_receipt(logged.path) != receipt:
            report.fail("receipt.log-differs", "receipt", f"the log copy {logged.path.name} differs from {path}")
    _check_link(entries, position, receipt, report, "receipt")
    if position + 1 < len(entries):
        _check_next_link(entries[position + 1], receipt, report)
    if position > 0:
        _gap(entries[position - 1], logged, receipt, report)
    if position == len(entries) - 1:
        now = current_hashes(layout, limits)
        final = normalize_maps(receipt["finalHashes"])
        differences = diff_maps(final, now)
        through_git = _through_git(layout, final["public"], now["public"], git)
        for line in differences:
            where = line.split(" ")[0]
            if where.removeprefix("public/") in through_git and where.startswith("public/"):
                report.warn("receipt.mirror-moved", f"receipt.finalHashes.{where}",
                            f"{line} since this receipt, through git ({through_git[where[7:]]}): run `memfold "
                            "sync` to bring the private store up to date")
                continue
            report.fail("receipt.final-hash", f"receipt.finalHashes.{where}", f"{line} since this receipt")
        if not differences:
            report.checks.append("receipt: final hashes match the files on disk")
        digest = receipt_digest(receipt)
        chain = digest if position == 0 else _digest_or_none(entries[0].path)
        check_witness(layout.heads, layout.mirror, layout.project_root, chain, logged.seq,
                      lambda seq: digest if seq == logged.seq else _digest_at(entries, seq), report)
    return report


def _through_git(layout: Layout, before: dict[str, str], now: dict[str, str], git: GitFacts | None) -> dict[str, str]:
    """The mirror files that differ between ``before`` and ``now`` because git changed them (each with the
    commit that did, shortened), as ``git`` tells; none without git."""
    changed = sorted(name for name, _ in before.items() ^ now.items())
    if git is None or layout.mirror is None or not changed:
        return {}
    files = {name: _read_or_none(layout.mirror / name) for name in changed}
    return {name: f"commit {fact['commit'][:12]} by {fact.get('author') or 'unknown'}"
            for name, fact in git.provenance(layout.project_root, files).items()
            if fact.get("source") == "commit" and "commit" in fact}


def _read_or_none(path: Path) -> bytes | None:
    try:
        return read_bounded(path, 64 << 20)
    except (OSError, ValueError):
        return None


def _digest_or_none(path: Path) -> str | None:
    try:
        return file_digest(path)
    except (OSError, ValueError):
        return None


def _digest_at(entries: list[LogEntry], seq: int) -> str | None:
    entry = next((e for e in entries if e.seq == seq), None)
    return None if entry is None else _digest_or_none(entry.path)


def _check_next_link(successor: LogEntry, receipt: dict[str, Any], report: Report) -> None:
    try:
        link = load_receipt(successor.path).get("previous")
    except (OSError, ValueError):
        report.fail("receipt.next-link", "receipt", f"the next receipt {successor.path.name} is unreadable")
        return
    if link != receipt_digest(receipt):
        report.fail("receipt.next-link", "receipt",
                    f"the next receipt {successor.path.name} links to another digest: this receipt was changed")
    else:
        report.checks.append(f"receipt: {successor.path.name} links to it")


def _gap(before: LogEntry, entry: LogEntry, receipt: dict[str, Any], report: Report) -> None:
    """Files edited by hand between the previous transaction and this one (drift, not an error); mirror
    changes this receipt's sync records as coming from outside are incoming instead."""
    try:
        final = normalize_maps(load_receipt(before.path).get("finalHashes"))
    except (OSError, ValueError):
        return  # the chain link check above already failed on it
    recorded = recorded_sync(receipt)
    drift(report, final, normalize_maps(receipt["sourceHashes"]), [before.path.name, entry.path.name],
           recorded.get)


def _check_link(entries: list[LogEntry], position: int, receipt: dict[str, Any], report: Report, where: str) -> None:
    expected = None if position == 0 else receipt_digest(load_receipt(entries[position - 1].path))
    if receipt.get("previous") != expected:
        report.fail(
            "receipt.chain",
            f"{where}.previous",
            "previous link does not match "
            + ("the start of the log" if expected is None else entries[position - 1].path.name),
        )
    else:
        report.checks.append(f"{where}: chain link")


class _Mirrors:
    """The mirror side of the chain, by work tree.

    Every linked worktree of a repository shares one private store but has a mirror of its own (its
    checkout of ``.memory/``), and a receipt's ``public`` maps describe the mirror of the work tree it
    ran in, as the run's manifest records. So the private side is one chain, and the mirror side is
    compared with the last receipt written from the same work tree; a receipt whose work tree is not
    known (its run dir pruned) is compared with the one before it, as in a single checkout.
    """

    def __init__(self) -> None:
        self.final: dict[str | None, tuple[str, dict[str, str]]] = {}
        self.seq: dict[str | None, int] = {}
        self.last: tuple[str, dict[str, str]] | None = None
        self.known = False

    def before(self, tree: str | None) -> tuple[str, dict[str, str]] | None:
        """(receipt, mirror map) to compare a receipt written from ``tree`` with: None for a work tree's first."""
        if tree is None or not self.known:
            return self.last
        return self.final.get(tree)

    def after(self, tree: str | None, where: str, public: dict[str, str], seq: int) -> None:
        self.known = self.known or tree is not None
        self.final[tree] = self.last = (where, public)
        self.seq[tree] = seq


def audit(layout: Layout, limits: Limits, tick: Callable[[], None] = lambda: None,
          git: GitFacts | None = None) -> Report:
    """Walk the chain: each receipt's own checks, its link, and drift between receipts (``tick`` per receipt).

    A mirror change between two receipts that the later one's sync records (adopted, held, in conflict) is
    *incoming*, with the commit and author that brought it, not a hand edit; so is one that puts back the
    files of the older receipt its sync started from (an older checkout). With ``git``, the committed
    versions of the chain head are checked too, and a mirror that moved on through git since the last
    receipt is incoming (`memfold sync` adopts it), not a hand edit."""
    report = Report()
    entries = log_entries(layout.receipts)
    previous_digest: str | None = None
    previous_final: dict[str, dict[str, str]] | None = None
    previous_name = None
    mirrors = _Mirrors()
    digests: dict[int, str] = {}
    # Every version of each mirror file the chain recorded: one back in the mirror is an older checkout.
    versions: dict[str, set[str]] = {}

    for entry in entries:
        tick()
        where = entry.path.name
        report.receipts += 1
        try:
            receipt = load_receipt(entry.path)
        except (OSError, ValueError) as exc:
            report.fail("receipt.json", where, f"unreadable receipt ({exc.__class__.__name__})")
            previous_digest, previous_final = None, None
            continue
        if check_receipt(receipt, report, where, layout.scope_key):
            if receipt["runId"] != entry.run_id:
                report.fail("receipt.run-mismatch", where, "file name and runId disagree")
            if receipt.get("previous") != previous_digest:
                report.fail("receipt.chain", f"{where}.previous",
                            f"previous link does not match {previous_name or 'the start of the log'}")
            run_dir = layout.runs / entry.run_id
            tree = check_run(run_dir, receipt, report, where) if run_dir.is_dir() else None
            tree = sync_worktree(receipt) or tree
            source = normalize_maps(receipt["sourceHashes"])
            if previous_final is not None:
                drift(report, {"harness": previous_final["harness"]}, {"harness": source["harness"]},
                       [previous_name, where])
                mirror = mirrors.before(tree)
                if mirror is not None:
                    drift(report, {"public": mirror[1]}, {"public": source["public"]}, [mirror[0], where],
                           explainer(recorded_sync(receipt), source["public"], versions))
            previous_final = normalize_maps(receipt["finalHashes"])
            mirrors.after(tree, where, previous_final["public"], entry.seq)
            for name, digest in previous_final["public"].items():
                versions.setdefault(name, set()).add(digest)
        previous_digest = digests[entry.seq] = receipt_digest(receipt)
        previous_name = where
    here = str(layout.project_root)
    newest_here = mirrors.seq.get(here) if mirrors.known else None
    if previous_final is not None:
        now = current_hashes(layout, limits)
        drift(report, {"harness": previous_final["harness"]}, {"harness": now["harness"]}, [previous_name, "now"])
        mirror = mirrors.before(here)
        if mirror is not None:
            moved = _through_git(layout, mirror[1], now["public"], git)

            def explain_now(name: str) -> dict[str, Any] | None:
                if name in moved:
                    return {"taken": "not yet synced (`memfold sync` adopts it)", "source": moved[name]}
                return older_version(versions, name, now["public"].get(name))

            drift(report, {"public": mirror[1]}, {"public": now["public"]}, [mirror[0], "now"], explain_now)
        elif layout.mirror is not None:
            report.checks.append("mirror: no receipt was written from this work tree yet "
                                 "(its mirror is checked from its first transaction on)")
    report.checks.append(f"{counted(report.receipts, 'receipt')} walked")
    chain = digests.get(entries[0].seq) if entries else None
    check_witness(layout.heads, layout.mirror, layout.project_root, chain, entries[-1].seq if entries else 0,
                  digests.get, report, git=git, newest_here=newest_here)
    return report
