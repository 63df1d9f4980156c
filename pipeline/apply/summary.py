"""What a consolidation did, for people and machines: merged, rewritten, created, deleted, reclassified, dropped."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..planner.text import fact_key, fact_lines, known_keys
from ..state.model import PostState, PreState
from ..store.memory import INDEX_NAME, Memory

# Per changed memory, and in all: the summary shows what was dropped, never an unbounded list.
MAX_DROPPED_LINES = 20
MAX_DROPPED_MEMORIES = 200
MAX_LINE_CHARS = 200


def dropped_lines(pre: PreState, post: PostState, redact: Callable[[str], str] | None = None) -> dict[str, list[str]]:
    """Per memory the plan rewrote or deleted, its lines (description included) no post-state memory carries."""
    changed = [op.name for op in post.operations if op.kind != "create" and op.name in pre.memories]
    if not changed:
        return {}
    carried: set[str] = set()
    for memory in post.memories.values():
        carried |= known_keys(memory)
    out: dict[str, list[str]] = {}
    for name in sorted(changed):
        lines = [raw.strip() for raw, key in _lines(pre.memories[name]) if key not in carried]
        if lines:
            shown = [(redact or _same)(_short(line)) for line in dict.fromkeys(lines)]
            out[name] = shown[:MAX_DROPPED_LINES] + ([f"... and {len(shown) - MAX_DROPPED_LINES} more lines"]
                                                     if len(shown) > MAX_DROPPED_LINES else [])
        if len(out) >= MAX_DROPPED_MEMORIES:
            break
    return out


def _lines(memory: Memory) -> list[tuple[str, str]]:
    return [(memory.description, fact_key(memory.description)), *fact_lines(memory)]


def _same(text: str) -> str:
    return text


def _short(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _hidden(plan: dict[str, Any], pre: PreState, post: PostState) -> list[dict[str, str]]:
    """Memories deleted into one of the other visibility that moved content: a safe one's facts now only
    private, or a private one's lines now in a safe one (a private copy of what the mirror shows moves nothing)."""
    out = []
    for op in plan.get("operations") or []:
        if not isinstance(op, dict) or op.get("kind") != "delete" or not isinstance(op.get("into"), str):
            continue
        before, after = pre.memories.get(op["name"]), post.memories.get(op["into"])
        if before is None or after is None or before.visibility == after.visibility:
            continue
        if before.is_safe or not known_keys(before) <= known_keys(after):
            out.append({"name": op["name"], "into": op["into"], "from": before.visibility, "to": after.visibility})
    return out


def summarize(run_id: str, plan: dict[str, Any], pre: PreState, post: PostState,
              redact: Callable[[str], str] | None = None) -> dict[str, Any]:
    from ..planner.planjson import full_shape

    plan = full_shape(plan)  # a compact plan's left-out items still name their status and reason
    created, rewritten, deleted, reclassified = [], [], [], []
    for op in post.operations:
        if op.kind == "create":
            created.append(op.name)
        elif op.kind == "delete":
            deleted.append(op.name)
        else:
            rewritten.append(op.name)
            before = pre.memories.get(op.name)
            if before is not None and before.visibility != op.classification:
                reclassified.append({"name": op.name, "from": before.visibility, "to": op.classification})
    report = {r.get("name"): r for r in plan.get("report") or [] if isinstance(r, dict)}
    # A merge shows once: the absorbed memory under "merged", its target under "rewritten".
    merged = sorted(n for n in deleted if report.get(n, {}).get("status") == "merged")
    deleted = [n for n in deleted if n not in merged]
    # Indexes are derived: rebuilding one (first run, a memory added by hand) changes no memory.
    changed = _memory_hashes(post.hash_maps()) != _memory_hashes(pre.hash_maps())
    day = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}"
    expired = sorted(n for n in deleted if (m := pre.memories.get(n)) is not None and m.expires is not None
                     and m.expires[:10] < day)
    moved = _hidden(plan, pre, post)
    notes = [n for n in plan.get("notes") or [] if isinstance(n, str)]
    from ..planner.bound import NOTE_PREFIX, deferred_count

    deferred = deferred_count(notes)
    left = {"deferred": {"memories": deferred, "note": next(n for n in notes if n.startswith(NOTE_PREFIX))}} \
        if deferred else {}
    return {
        "ok": True,
        "runId": run_id,
        "selected": len(plan.get("selected") or []),
        "noOp": not changed,
        "verified": True,
        "merged": merged,
        "rewritten": sorted(rewritten),
        "created": sorted(created),
        "deleted": sorted(deleted),
        "reclassified": sorted(reclassified, key=lambda r: str(r["name"])),
        "visibilityChanges": len(reclassified) + len(moved),
        "movedAcrossVisibility": moved,
        "dropped": dropped_lines(pre, post, redact),
        "capacity": next((n for n in notes if n.startswith("the index stays over capacity")), None),
        "memories": {"before": len(pre.memories), "after": len(post.memories)},
        "reasons": {n: r.get("summary", "") for n, r in sorted(report.items()) if r.get("status") != "kept"},
        "expired": expired,
        # Files that do not parse are no memory of the plan: left as they are, and said so.
        "untouched": [b.as_dict() for _, b in sorted(pre.broken.items())],
        # A plan cut to fit limits.plan_bytes: what it left for the next run.
        **left,
    }


def receipt_outcome(summary: dict[str, Any]) -> dict[str, Any]:
    """What the receipt records of a consolidation's effect beyond its hashes."""
    out = {"visibilityChanges": summary["visibilityChanges"], "dropped": summary["dropped"]}
    if summary.get("deferred"):
        out["deferred"] = summary["deferred"]
    return out


def _memory_hashes(maps: Any) -> dict[str, dict[str, str]]:
    return {root: {n: h for n, h in files.items() if n != INDEX_NAME} for root, files in maps.items()}


def summary_text(summary: dict[str, Any]) -> str:
    from ..safetext import counted

    if summary["noOp"]:
        head = f"consolidation {summary['runId']}: verified no-op ({counted(summary['selected'], 'memory')} checked)"
    else:
        head = f"consolidation {summary['runId']}: changed and verified"
    lines = [head + (" [dry run: nothing written]" if summary.get("dryRun") else "")]
    for key in ("merged", "rewritten", "created", "deleted"):
        for name in summary[key]:
            reason = summary["reasons"].get(name, "")
            lines.append(f"  {key:<10} {name}" + (f": {reason}" if reason else ""))
    for item in summary["reclassified"]:
        lines.append(f"  reclassified {item['name']}: {item['from']} -> {item['to']}")
    for item in summary.get("movedAcrossVisibility") or []:
        lines.append(f"  moved      {item['name']} into the {item['to']} {item['into']}")
    if summary.get("visibilityChanges"):
        lines.append(f"visibility changes: {summary['visibilityChanges']}")
    for name, dropped in (summary.get("dropped") or {}).items():
        lines.append(f"  no memory carries any more, from {name}:")
        lines.extend(f"    - {line}" for line in dropped)
    if summary.get("capacity"):
        lines.append(summary["capacity"])
    if summary.get("deferred"):
        lines.append(summary["deferred"]["note"])
    for item in summary.get("untouched") or []:
        lines.append(f"  untouched  {item['path']}: {item['problem']} (see `memfold doctor`)")
    lines.append(totals_line(summary))
    if summary.get("receipt"):
        lines.append(f"receipt: {summary['receipt']}")
    return "\n".join(lines)


def totals_line(summary: dict[str, Any]) -> str:
    """``2,859 → 2,790 memories: 60 merged, 9 expired``: the whole run in one line."""
    from ..safetext import counted

    counts = summary["memories"]
    expired = len(summary.get("expired") or [])
    parts = [f"{len(summary['merged']):,} merged", f"{expired:,} expired"]
    others = len(summary["deleted"]) - expired
    parts += [f"{n:,} {word}" for n, word in ((others, "deleted"), (len(summary["created"]), "created"),
                                               (len(summary["rewritten"]), "rewritten")) if n]
    if summary.get("untouched"):
        parts.append(f"{counted(len(summary['untouched']), 'broken file')} untouched")
    return f"{counts['before']:,} \u2192 {counts['after']:,} {'memory' if counts['after'] == 1 else 'memories'}: " \
        + ", ".join(parts)


SETTLED_REASON = "the last consolidation left nothing more to merge safely and nothing changed since"


def settled(receipts: Path, pre: PreState, today: str) -> bool:
    """The built-in planner would change nothing: its last run left the store as it is now, and no
    memory has gone stale by date since. ``status`` then stops calling a consolidation due."""
    from ..planner.staleness import verdict
    from ..receipts.log import log_entries
    from ..receipts.receipt import load_receipt

    entries = log_entries(receipts)
    if not entries:
        return False
    try:
        last = load_receipt(entries[-1].path)
    except (OSError, ValueError):
        return False
    worker = last.get("worker")
    if left_for_next_run(last):
        return False
    if last.get("command") != "consolidate" or not isinstance(worker, dict) or worker.get("name") != "builtin":
        return False
    final = last.get("finalHashes")
    harness = final.get("harness") if isinstance(final, dict) else None
    if not isinstance(harness, dict):
        return False
    recorded = {n: str(h).removeprefix("sha256:") for n, h in harness.items() if n != INDEX_NAME}
    now = {n: h for n, h in pre.harness.hashes.items() if n != INDEX_NAME}
    return recorded == now and not any(verdict(m, today) for m in pre.memories.values())


def left_for_next_run(receipt: dict[str, Any]) -> int:
    """How many memories' changes a consolidation receipt says its plan left for the next run."""
    outcome = receipt.get("outcome")
    deferred = outcome.get("deferred") if isinstance(outcome, dict) else None
    count = deferred.get("memories") if isinstance(deferred, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def capacity_advice(memories: dict[str, Memory], cap: Any) -> str:
    from ..planner.capacity import advice, oldest

    return advice(max(0, cap.lines - cap.max_lines), max(0, cap.bytes - cap.max_bytes), oldest(memories))
