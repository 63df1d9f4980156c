"""What a consolidation did, for people and machines: merged, rewritten, created, deleted, reclassified."""

from __future__ import annotations

from typing import Any

from ..state import PostState, PreState
from ..store.memory import INDEX_NAME


def summarize(run_id: str, plan: dict[str, Any], pre: PreState, post: PostState) -> dict[str, Any]:
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
        "memories": {"before": len(pre.memories), "after": len(post.memories)},
        "reasons": {n: r.get("summary", "") for n, r in sorted(report.items()) if r.get("status") != "kept"},
        "expired": expired,
        # Files that do not parse are no memory of the plan: left as they are, and said so.
        "untouched": [b.as_dict() for _, b in sorted(pre.broken.items())],
    }


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
