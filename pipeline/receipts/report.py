"""The receipt chain gathered into a plain model for the audit report: runs, changes, sizes, the newest state.

Verification is not repeated here: the chain is judged by ``verify.audit`` and this module only
files its findings under the receipts they name. Memory text is looked up by content hash (run
backups, plan operations, the files on disk), so a diff shown is always the text a receipt names.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputRejected, UsageError
from ..fsutil import read_bounded
from ..paths import BACKUP_DIR as BACKUP
from ..paths import Layout
from ..state.maps import HashMaps
from ..store.index import capacity
from ..store.jsontext import read_json
from ..store.memory import INDEX_NAME, parse_memory
from ..store.state import Limits
from .findings import Report
from .log import log_entries
from .receipt import load_receipt, normalize_maps
from .report_model import MERGE_VERDICTS, Chain, Change, Entry, Texts, carried_lines, lost_from, memory_names
from .verify import audit
from .witness import GitFacts


def _plan(run_dir: Path, texts: Texts) -> dict[str, Any]:
    try:
        plan = read_json(run_dir / "plan.json", 64 << 20)
    except (OSError, ValueError):
        return {}
    if not isinstance(plan, dict):
        return {}
    from ..planner.planjson import full_shape

    plan = full_shape(plan)  # a compact plan: each memory's verdict and cluster as the full shape has them
    for op in plan.get("operations") or []:
        if isinstance(op, dict) and isinstance(op.get("content"), str):
            texts.add(op["content"].encode("utf-8"))
    return plan


def _by_name(items: Any, key: str) -> dict[str, Any]:
    return {str(i["name"]): i.get(key) for i in items or [] if isinstance(i, dict) and "name" in i}


def _undoes(run_dir: Path) -> str | None:
    """The run an undo put back: its direct-edit snapshot names it (bound to the receipt by artifactHash)."""
    try:
        snapshot = read_json(run_dir / "snapshot.json", 256 << 20)
    except (OSError, ValueError):
        return None
    undone = snapshot.get("undoes") if isinstance(snapshot, dict) else None
    return undone if isinstance(undone, str) else None


def _field(receipt: dict[str, Any], key: str) -> dict[str, Any]:
    value = receipt.get(key)
    return value if isinstance(value, dict) else {}


def _worker(receipt: dict[str, Any]) -> str:
    worker = _field(receipt, "worker")
    kind = str(worker.get("kind") or "unknown")
    name = worker.get("name")
    label = kind if not name or name == kind else f"{kind} ({name})"
    if "network" in worker:
        label += ", network allowed" if worker["network"] else ", no network"
    return label


def _sandbox(receipt: dict[str, Any]) -> str:
    box = _field(receipt, "sandbox")
    if box.get("kind") == "none":
        return f"none ({box.get('reason') or 'no worker'})"
    if not box.get("enforced"):
        return "NOT enforced" + (f" (missing: {', '.join(map(str, box.get('missing') or []))})"
                                 if box.get("missing") else "")
    network = box.get("network")
    parts = [f"filesystem {box.get('filesystem')}", f"kill {box.get('kill')}"]
    if isinstance(network, dict):
        parts.append(f"network {network.get('requested')}")
    missing = box.get("missing") or []
    if missing:
        parts.append(f"missing {', '.join(map(str, missing))}")
    return "enforced: " + ", ".join(parts)


def _changes(src: HashMaps, fin: HashMaps, plan: dict[str, Any], texts: Texts, public: bool) -> list[Change]:
    verdicts = _by_name(plan.get("staleness"), "verdict")
    reasons = {**_by_name(plan.get("staleness"), "reason"), **_by_name(plan.get("operations"), "reason")}
    clusters = [list(map(str, c.get("files") or [])) for c in plan.get("clusters") or [] if isinstance(c, dict)]
    shown = "public" if public else "harness"
    after = {n: fin[shown][n] for n in memory_names(fin[shown])}
    carried: set[str] | None = None
    out: list[Change] = []
    for name in sorted(set(memory_names(src["harness"])) | set(memory_names(fin["harness"]))):
        old, new = src["harness"].get(name), fin["harness"].get(name)
        safe_before, safe_after = name in src["public"], name in fin["public"]
        if old == new and safe_before == safe_after:
            continue
        if public and not (safe_before or safe_after):
            continue  # a private name never reaches a public report
        verdict = verdicts.get(name)
        into: tuple[str, ...] = ()
        if new is None:
            mates = [m for c in clusters if name in c for m in c if m != name and m in after]
            into = tuple(sorted(set(mates)))
            kind = "merged" if into and verdict in MERGE_VERDICTS else "deleted"
        else:
            kind = "created" if old is None else "rewritten" if old != new else "reclassified"
        moved = None if safe_before == safe_after or old is None or new is None else \
            ("safe → private" if safe_before else "private → safe")
        before_text = texts.text(old) if old and (safe_before or not public) else None
        after_text = texts.text(new) if new and (safe_after or not public) else None
        lost: tuple[str, ...] = ()
        if old is not None and kind != "created" and old != new and before_text is not None:
            if carried is None:
                carried = carried_lines(b for n, h in after.items() if (b := texts.body(h, n)) is not None)
            lost = tuple(lost_from(texts.body(old, name) or "", carried))
        missing = (old is not None and before_text is None and (safe_before or not public)) or \
                  (new is not None and after_text is None and (safe_after or not public))
        # A worker's reason may name the private memory a safe one was folded into.
        reason = None if public or reasons.get(name) is None else str(reasons[name])
        out.append(Change(name, kind, moved, None if verdict is None else str(verdict), reason, into,
                          before_text, after_text, missing, lost))
    return out


def _drift(report: Report, public: bool, public_names: set[str]) -> dict[str, tuple[list[str], int]]:
    """Hand edits by the receipt they precede ("now" after the newest); private names become a count."""
    out: dict[str, tuple[list[str], int]] = {}
    for item in report.drift:
        later = str(item["between"][1])
        lines, hidden = out.get(later, ([], 0))
        line = str(item["file"])
        root, _, rest = line.partition("/")
        if public and root != "public" and rest.split(" ")[0] not in public_names:
            hidden += 1
        else:
            lines.append(line)
        out[later] = (lines, hidden)
    return out


def _findings(report: Report, public: bool) -> dict[str, list[str]]:
    """Audit errors and warnings by the receipt file their path names; "" for the chain as a whole.

    A public report shows the stable codes only: a message may name a private memory.
    """
    out: dict[str, list[str]] = {}
    for level, issues in (("FAIL", report.errors), ("WARN", report.warnings)):
        for issue in issues:
            head = issue.path.split(".json")[0] + ".json" if ".json" in issue.path else ""
            text = f"{level} {issue.code}" if public else f"{level} {issue.code} {issue.path}: {issue.message}"
            out.setdefault(head, []).append(text)
    return out


def _size(maps: HashMaps, root: str) -> int:
    return len(memory_names(maps[root]))


def gather(layout: Layout, limits: Limits, *, public: bool, since: str | None, now: str,
           git: GitFacts | None = None) -> Chain:
    """The whole chain (from the receipt of run ``since`` on, if given) as the report's model."""
    report = audit(layout, limits, git=git)
    logged = log_entries(layout.receipts)
    if since is not None and not any(e.run_id == since for e in logged):
        raise UsageError(f"run {since} has no receipt in the log", code="usage.no-run",
                         hint="pick a run id from `memfold audit` or the receipts directory")
    texts = Texts()
    receipts: list[tuple[Any, dict[str, Any] | None]] = []
    for item in logged:
        try:
            receipts.append((item, load_receipt(item.path)))
        except (OSError, ValueError):
            receipts.append((item, None))
        backup = layout.runs / item.run_id / BACKUP
        texts.add_dir(backup, "harness.")
        texts.add_dir(backup / "harness")  # a run written before backups were one directory
    texts.add_dir(layout.harness)
    if layout.mirror is not None:
        texts.add_dir(layout.mirror)
    current = _current(layout, limits)
    public_names = {n for _, r in receipts if r for n in normalize_maps(r.get("finalHashes"))["public"]}
    public_names |= set(current["public"])
    drift = _drift(report, public, public_names)
    findings = _findings(report, public)
    previous: HashMaps = {"harness": {}, "public": {}}
    entries: list[Entry] = []
    started = since is None
    for item, receipt in receipts:
        started = started or item.run_id == since
        name = item.path.name
        if receipt is None:
            if started:
                entries.append(Entry(item.seq, item.run_id, name, "unreadable", "", "", "", False,
                                     tuple(findings.get(name, [])), False, 0, 0, False, None, (), 0, ()))
            continue
        run_dir = layout.runs / item.run_id
        plan = _plan(run_dir, texts) if run_dir.is_dir() else {}
        src = normalize_maps(receipt.get("sourceHashes"))
        fin = normalize_maps(receipt.get("finalHashes")) if receipt.get("finalHashes") else previous
        previous = fin
        if not started:
            continue
        lines, hidden = drift.get(name, ([], 0))
        mine = findings.get(name, [])
        entries.append(Entry(
            item.seq, item.run_id, name, str(receipt.get("command") or "consolidate"),
            str(receipt.get("createdAt", "")), _worker(receipt), _sandbox(receipt),
            not any(f.startswith("FAIL") for f in mine), tuple(mine),
            any(" receipt.chain" in f for f in mine), _size(fin, "harness"), _size(fin, "public"),
            run_dir.is_dir(), _undoes(run_dir) if receipt.get("command") == "undo" else None,
            tuple(lines), hidden, tuple(_changes(src, fin, plan, texts, public))))
    now_lines, now_hidden = drift.get("now", ([], 0))
    by_type, by_visibility, cap = _newest(layout, limits, current, texts, public)
    # The scope key is the sha256 of the project's absolute path: a public page would let anyone confirm a
    # guessed home directory or user name. It stays in private reports only.
    return Chain(public=public, scope_key="" if public else layout.scope_key,
                 project=None if public else str(layout.project_root),
                 generated_at=now, audit_ok=report.ok, receipts_total=len(logged), entries=tuple(entries),
                 findings=tuple(findings.get("", [])), hand_edits_now=tuple(now_lines),
                 hidden_hand_edits_now=now_hidden, memories=sum(by_visibility.values()),
                 by_type=by_type, by_visibility=by_visibility, capacity=cap)


def _current(layout: Layout, limits: Limits) -> HashMaps:
    from ..state.landed import current_hashes

    return current_hashes(layout, limits)


def _newest(layout: Layout, limits: Limits, current: HashMaps, texts: Texts,
            public: bool) -> tuple[dict[str, int], dict[str, int], tuple[int, int, int, int]]:
    root = "public" if public else "harness"
    types: Counter[str] = Counter()
    visibility: Counter[str] = Counter()
    for name in memory_names(current[root]):
        data = texts.text(current[root][name])
        try:
            memory = parse_memory((data or "").encode("utf-8"), name)
        except InputRejected:  # a hand-edited file that no longer parses still counts, as unreadable
            types["unreadable"] += 1
            visibility["unreadable"] += 1
            continue
        types[memory.type] += 1
        visibility[memory.visibility] += 1
    index = layout.root(root) / INDEX_NAME if root == "harness" or layout.mirror else None
    try:
        raw = read_bounded(index, 1 << 20) if index is not None else b""
    except OSError:
        raw = b""
    cap = capacity(raw, limits)
    return dict(sorted(types.items())), dict(sorted(visibility.items())), \
        (cap.lines, cap.bytes, cap.max_lines, cap.max_bytes)


@dataclass(frozen=True)
class Written:
    path: Path
    mode: int
    receipts: int
    memories: int
    hand_edits: int
    audit_ok: bool
    inside_project: bool


def write_report(layout: Layout, limits: Limits, *, public: bool, since: str | None, out: Path | None,
                 now: str, git: GitFacts | None = None) -> Written:
    """Gather, render and write the report atomically: 0600 unless public (0644), under the home by default."""
    from ..fsutil import atomic_write, ensure_dir
    from .report_html import render

    chain = gather(layout, limits, public=public, since=since, now=now, git=git)
    if out is None:
        folder = layout.home / "reports"
        ensure_dir(folder, layout.home)
        stamp = now.replace("-", "").replace(":", "")
        out = folder / f"{'public' if public else layout.scope_key[:12]}-{stamp}.html"
    out = Path(out).absolute()
    mode = 0o644 if public else 0o600
    try:
        atomic_write(out, render(chain).encode("utf-8"), mode)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {out}: {exc.strerror or exc.__class__.__name__}",
                         code="usage.report-out",
                         hint="pass --out with a file in an existing, writable directory") from None
    if public:
        # A umask may narrow 0644, and a report meant for a pull request must be readable as promised;
        # a private report only ever gets narrower under a umask, so it keeps its 0600 as created.
        os.chmod(out, mode)
    hand_edits = sum(len(e.hand_edits) + e.hidden_hand_edits for e in chain.entries) \
        + len(chain.hand_edits_now) + chain.hidden_hand_edits_now
    inside = out.is_relative_to(layout.project_root) and not layout.is_global
    return Written(out, mode, len(chain.entries), chain.memories, hand_edits, chain.audit_ok, inside)
