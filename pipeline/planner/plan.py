"""The pure core: manifest, memories and snapshot in, one consolidation plan out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from ..fsutil import sha256_bytes
from ..store.memory import Memory, render_memory
from ..store.state import Limits
from . import candidates, capacity, conflicts, dedupe, roles, staleness
from .grounding import Tree, cited_observations, ground, in_repository
from .text import clear_caches
from .work import Fate, Work, canonical

# The planner starts once per consolidation: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KIND = "memory-consolidation-plan"
MAX_PASSES = 6
MAX_TEXT = 1900


class PlanInputError(ValueError):
    """The run's inputs cannot be planned (e.g. a selected memory is not in the store)."""


def limits_of(manifest: dict[str, Any]) -> Limits:
    raw = manifest.get("limits") or {}
    base = Limits()

    def num(key: str, default: int) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default

    return Limits(num("maxFileBytes", base.max_file_bytes), num("maxFiles", base.max_files),
                  num("indexLines", base.index_lines), num("indexBytes", base.index_bytes))


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def consolidate(work: Work) -> None:
    """Run merge, conflict and capacity stages until none of them changes the post-state."""
    dirty: set[str] | None = None
    index: dedupe.Index | None = None
    for _ in range(MAX_PASSES):
        work.touched = set()
        changed = False
        found, index = dedupe.groups(list(work.live), work.live, index, dirty)
        for group in found:
            changed |= _merge_group(work, group)
        changed |= conflicts.resolve(work)
        if not changed:
            break
        dirty = set(work.touched)
    else:
        work.notes.append(f"consolidation did not settle after {MAX_PASSES} passes; a later run may merge more")
    conflicts.retitle(work)
    capacity.report(work)


def _merge_group(work: Work, group: list[str]) -> bool:
    """Duplicates merge into the newest of their visibility; a private copy of a safe note into the safe one."""
    safe = [n for n in group if work.live[n].is_safe]
    private = [n for n in group if not work.live[n].is_safe]
    changed = False
    if safe:
        target = safe[0]
        changed |= bool(work.absorb(target, safe[1:], "SUBSUMED", f"a duplicate of {target}"))
        copies = [n for n in private if dedupe.mergeable(work.live[n], work.live[target])]
        changed |= bool(work.absorb(target, copies, "SUBSUMED", f"a private copy of the safe {target}"))
        private = [n for n in private if n in work.live]
    if len(private) > 1:
        changed |= bool(work.absorb(private[0], private[1:], "SUBSUMED", f"a duplicate of {private[0]}"))
    return changed


def build_plan(manifest: dict[str, Any], memories: dict[str, tuple[bytes, Memory]], snapshot: dict[str, Any],
               repo_root: Path, *, reserved: Iterable[str] = (), signals: dict[str, Any] | None = None
               ) -> dict[str, Any]:
    """The plan for one run. ``memories`` is the whole private store; ``reserved`` adds mirror names;
    ``signals`` is the run's ``signals.json`` (cited code and usage, as the parent found them)."""
    return planned(manifest, memories, snapshot, repo_root, reserved=reserved, signals=signals)[0]


def planned(manifest: dict[str, Any], memories: dict[str, tuple[bytes, Memory]], snapshot: dict[str, Any],
            repo_root: Path, *, reserved: Iterable[str] = (), signals: dict[str, Any] | None = None
            ) -> tuple[dict[str, Any], Work]:
    """``build_plan``, with the working state it was printed from (what the plan bound groups into units)."""
    clear_caches()
    dedupe.clear_caches()
    conflicts.clear_caches()
    roles.clear_caches()
    selected = sorted(str(n) for n in manifest.get("selected") or [])
    absent = [n for n in selected if n not in memories]
    if absent:
        raise PlanInputError(f"selected memories missing from the store: {', '.join(absent[:5])}")
    now = str(manifest["createdAt"])
    chosen = set(selected)
    parsed = {n: m for n, (_, m) in memories.items()}
    original = {n: canonical(parsed[n]) for n in selected}
    work = Work(original=original, live=dict(original),
                fixed={n: m for n, m in parsed.items() if n not in chosen},
                limits=limits_of(manifest), today=now[:10])
    for name in selected:
        stale = staleness.verdict(original[name], work.today)
        if stale is not None:
            work.remove(name, Fate(stale[0], "deleted", stale[1]))
    cited = _cited(original, repo_root, signals or {})
    _signal_verdicts(work, cited, signals or {})
    taken = {n.lower() for n in parsed} | {n.lower() for n in reserved}
    cands = snapshot.get("candidates") if isinstance(snapshot, dict) else None
    candidates.apply(work, cands if isinstance(cands, list) else [], taken, now)
    consolidate(work)
    tree = Tree(repo_root) if repo_root.is_dir() else None
    repository = tree is not None and in_repository(repo_root)
    grounding = [ground(n, original[n], tree, repository, cited_observations(cited.get(n, []))) for n in selected]
    plan: dict[str, Any] = {
        "kind": KIND,
        "schemaVersion": 1,
        "runId": manifest["runId"],
        "scopeKey": manifest["scopeKey"],
        "scopeDigest": manifest["scopeDigest"],
        "artifactHash": manifest["artifactHash"],
        "selected": selected,
        "inventory": [{"name": n, "classification": original[n].visibility} for n in selected],
        "clusters": _clusters(work, selected),
        "staleness": [_staleness(work, n) for n in selected],
        "grounding": grounding,
        "report": [_report(work, n, g) for n, g in zip(selected, grounding, strict=False)],
        "operations": _operations(work),
        "notes": [_cut(n, 3900) for n in dict.fromkeys(work.notes)],
    }
    if manifest.get("snapshotDigest") == manifest["artifactHash"]:
        plan["snapshotDigest"] = manifest["artifactHash"]
    return plan, work


def _cited(original: dict[str, Memory], repo_root: Path, signals: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each selected memory's citations as the parent checked them (``signals.json``), else checked here
    (the worker may read the repository, not ask git: a renamed file is then gone)."""
    given = signals.get("evidence")
    if isinstance(given, dict):
        return {n: list(given[n]) for n in original if isinstance(given.get(n), list)}
    from ..store.citecheck import check

    return {n: [f.as_dict() for f in check(str(repo_root), m.evidence)] for n, m in original.items() if m.evidence}


def _signal_verdicts(work: Work, cited: dict[str, list[dict[str, Any]]], signals: dict[str, Any]) -> None:
    """Staleness from outside the text: cited code that changed or is gone (flagged and kept, never
    deleted for that), and memories nobody used (DORMANT: deleted only with ``forgetDormant``)."""
    unused = signals.get("unused") if isinstance(signals.get("unused"), dict) else {}
    for name in sorted(work.original):
        if name not in work.live:
            continue
        drift = [f for f in cited.get(name, []) if f.get("status") in ("changed", "gone", "renamed")]
        if drift:
            changed = [str(f.get("cited")) for f in drift if f.get("status") != "renamed"]
            moved = [f"{f.get('cited')} is now {f.get('now')}" for f in drift if f.get("status") == "renamed"]
            parts = ([f"the code it cites changed or is gone since it was written: {', '.join(changed)}"]
                     if changed else []) + ([f"its cited file moved: {'; '.join(moved)}"] if moved else [])
            reason = "; ".join(parts) + "; kept: verify it, then `memfold update` re-anchors it (or `memfold review`)"
            work.verdicts[name] = ("CONTRADICTED" if changed else "KEEP", reason)
            continue
        why = unused.get(name) if isinstance(unused, dict) else None
        if isinstance(why, str):
            if signals.get("forgetDormant") is True:
                work.remove(name, Fate("DORMANT", "deleted", f"unused: {why}; usage.forget_dormant is on"))
            else:
                work.verdicts[name] = ("DORMANT", f"unused: {why}; kept (usage.forget_dormant is off)")


def final(work: Work, name: str) -> str:
    """The memory of the post-state a selected name's content ends in (itself when it stays).

    The chain also passes through memories this plan created and then merged away (``forwards``):
    they are never written, so nothing may be deleted into them.
    """
    seen = {name}
    while True:
        fate = work.fates.get(name)
        step = fate.target if fate is not None else work.forwards.get(name)
        if not step or step in seen:
            return name
        name = step
        seen.add(name)


def _clusters(work: Work, selected: list[str]) -> list[dict[str, Any]]:
    """One cluster per memory of the post-state (named after it) with the selected ones that went into it."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in selected:
        last = final(work, name)
        groups[(last if last in work.live else name).removesuffix(".md")].append(name)
    return [{"name": key[:200], "files": sorted(files)} for key, files in sorted(groups.items())]


def _staleness(work: Work, name: str) -> dict[str, str]:
    if name in work.fates:
        fate = work.fates[name]
        return {"name": name, "verdict": fate.verdict, "reason": _cut(fate.summary)}
    if name in work.verdicts:
        verdict, reason = work.verdicts[name]
        return {"name": name, "verdict": verdict, "reason": _cut(reason)}
    return {"name": name, "verdict": "KEEP", "reason": "current: not expired, not a duplicate, not contradicted"}


def _changed(work: Work, name: str) -> bool:
    if name not in work.live or work.live[name] is work.original.get(name):
        return False
    return name not in work.original or render_memory(work.live[name]) != render_memory(work.original[name])


def _report(work: Work, name: str, grounding: dict[str, Any]) -> dict[str, str]:
    if name in work.fates:
        fate = work.fates[name]
        return {"name": name, "status": fate.status, "summary": _cut(fate.summary, 3900)}
    parts = list(work.events.get(name, []))
    if grounding["status"] == "ungrounded":
        parts.append("flagged: none of the repository paths it names exist any more; kept (verify or update)")
    if _changed(work, name):
        merged = any(p.startswith(("absorbed", "supersedes")) for p in parts)
        status = "merged" if merged else "rewritten"
        if work.live[name].visibility != work.original[name].visibility and not merged:
            status = "reclassified"
    elif grounding["status"] == "ungrounded" or name in work.verdicts:
        status = "flagged"
        if name in work.verdicts:
            parts.append(work.verdicts[name][1])
    else:
        status = "kept"
    summary = "; ".join(parts) or "kept unchanged"
    return {"name": name, "status": status, "summary": _cut(summary, 3900)}


def _operations(work: Work) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for name in sorted(set(work.original) | set(work.live)):
        memory = work.live.get(name)
        if memory is None:
            fate = work.fates[name]
            op = {"name": name, "kind": "delete", "classification": work.original[name].visibility,
                  "reason": _cut(f"{fate.verdict}: {fate.summary}")}
            if fate.target is not None:
                op["into"] = final(work, name)
            ops.append(op)
            continue
        if name in work.created:
            kind = "create"
        elif _changed(work, name):
            kind = "rewrite"
        else:
            continue
        content = render_memory(memory)
        ops.append({"name": name, "kind": kind, "classification": memory.visibility,
                    "content": content.decode("utf-8"), "contentSha256": sha256_bytes(content),
                    "reason": _cut("; ".join(work.events.get(name, [])) or "updated")})
    return ops
