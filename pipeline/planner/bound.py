"""The plan bound: a plan past ``maxPlanBytes`` prints the largest part that fits; the rest waits for the next run.

The part is cut from the whole plan, never planned again: the changes it makes are exactly the whole
plan's for the memories it covers. Changes that must land together form one unit: a memory with
everything deleted into it, the two memories of a contradiction, a rename with the memories whose
deletion frees the title it takes. Units are taken in a fixed order (session candidates first, then
by their first name) while they fit; every other memory is reported as deferred and left as it is.
"""

from __future__ import annotations

import re

from ..errors import WorkerFailed
from .planjson import compacted, item_json, plan_json

# The planner starts once per consolidation: typing stays out of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .work import Work

NOTE_PREFIX = "plan bound: "
DEFERRED_REASON = ("deferred: the whole plan would pass limits.plan_bytes, so the changes planned for this "
                   "memory wait for the next consolidation")
CAPACITY_PREFIX = "the index stays over capacity"
# Each pass moves the budget by what the printed part left unused or overran; a few passes settle it.
MAX_PASSES = 6
_COUNT = re.compile(r"leaves the changes of (\d+) memor")


class PlanBoundError(WorkerFailed):
    """Even the smallest part of the plan passes ``maxPlanBytes``."""

    default_code = "planner.plan-bound"


def stored_size(printed: bytes, plan: dict[str, Any]) -> int:
    """The bytes of ``plan.json`` (one item a line) for the printed text of ``plan``: only newlines differ."""
    lines = 1 + sum(len(v) + 1 if isinstance(v, list) and v else 1 for v in plan.values())
    return len(printed) - printed.count(b"\n") + lines


def lean(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan without a delete's reason where it only repeats its memory's staleness verdict and reason.

    The compact shape states that reason once, in ``staleness`` (``reason`` of an operation is
    optional, and readers of reasons take the staleness one when an operation gives none).
    """
    said = {i["name"]: f"{i['verdict']}: {i['reason']}" for i in plan["staleness"] if "reason" in i}
    ops = [{k: v for k, v in op.items() if k != "reason"}
           if op["kind"] == "delete" and op.get("reason") == said.get(op["name"]) else op
           for op in plan["operations"]]
    return {**plan, "operations": ops}


def deferred_count(notes: object) -> int:
    """How many memories' changes a plan's notes say were left for the next run (0 for a whole plan)."""
    for note in notes if isinstance(notes, list) else []:
        if isinstance(note, str) and note.startswith(NOTE_PREFIX):
            match = _COUNT.search(note)
            if match:
                return int(match.group(1))
    return 0


def units(plan: dict[str, Any], work: Work) -> list[list[str]]:
    """The plan's changes grouped into what must land together; each unit sorted, units by first name."""
    from .conflicts import title_key  # the summary reads this module's notes without the planner
    from .plan import final

    parent: dict[str, str] = {}

    def find(name: str) -> str:
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def join(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for op in plan["operations"]:
        find(op["name"])
        if op.get("into"):
            join(op["name"], op["into"])
    for name in work.fates:
        if work.fates[name].target is not None and final(work, name) in work.live:
            join(name, final(work, name))  # what is deleted into a memory lands with its rewrite
    renamed = [n for n in parent if n in work.live and n in work.original
               and work.live[n].name != work.original[n].name]
    if renamed:
        titles: dict[str, list[str]] = {}
        for name, memory in work.original.items():
            titles.setdefault(title_key(memory), []).append(name)
        for name in renamed:
            # A title the rename takes may be one a deleted memory holds until its deletion lands.
            for holder in titles.get(title_key(work.live[name]), ()):
                if holder != name:
                    join(name, holder)
    groups: dict[str, list[str]] = {}
    for name in sorted(parent):
        groups.setdefault(find(name), []).append(name)
    return sorted(groups.values(), key=lambda u: u[0])


def _from_session(unit: list[str], work: Work) -> bool:
    """A unit holding a session candidate: the candidate may not be offered again, so it goes first."""
    return any(n in work.created or any(e.startswith("updated with candidate") for e in work.events.get(n, ()))
               for n in unit)


def _costs(plan: dict[str, Any], ordered: list[list[str]]) -> list[int]:
    """An upper bound of the bytes each unit adds to the part: its items as the whole plan prints them."""
    by_name: dict[str, int] = {}
    for artifact in ("staleness", "report", "operations"):
        for item in plan[artifact]:
            by_name[item["name"]] = by_name.get(item["name"], 0) + len(item_json(item).encode("utf-8")) + 1
    for cluster in plan["clusters"]:
        if len(cluster["files"]) > 1:
            first = cluster["files"][0]
            by_name[first] = by_name.get(first, 0) + len(item_json(cluster).encode("utf-8")) + 1
    return [sum(by_name.get(n, 0) for n in unit) for unit in ordered]


def _part(plan: dict[str, Any], deferred: set[str], note: str | None) -> dict[str, Any]:
    """The whole plan with the changes of ``deferred`` left out, and their memories reported as deferred."""
    out = dict(plan)
    clusters = []
    for cluster in plan["clusters"]:
        if deferred.isdisjoint(cluster["files"]):
            clusters.append(cluster)
        else:
            clusters.extend({"name": n.removesuffix(".md")[:200], "files": [n]} for n in cluster["files"])
    out["clusters"] = sorted(clusters, key=lambda c: str(c["name"]))
    out["staleness"] = [{"name": i["name"], "verdict": "KEEP", "reason": DEFERRED_REASON}
                        if i["name"] in deferred else i for i in plan["staleness"]]
    out["report"] = [{"name": i["name"], "status": "kept", "summary": DEFERRED_REASON}
                     if i["name"] in deferred else i for i in plan["report"]]
    out["operations"] = [op for op in plan["operations"] if op["name"] not in deferred]
    # The capacity advice speaks of the store after every change: this run leaves some for the next.
    if deferred and note:
        out["notes"] = [n for n in plan["notes"] if not n.startswith(CAPACITY_PREFIX)] + [note]
    return compacted(out)


def bounded(plan: dict[str, Any], work: Work, bound: int, whole: int) -> dict[str, Any]:
    """The compact plan of the largest run of units that fits ``bound`` bytes of ``plan.json``.

    ``whole`` is the size of the whole compact plan (for the note). Raises PlanBoundError when not
    even one unit fits beside the items every selected memory needs.
    """
    ordered = sorted(units(plan, work), key=lambda u: (not _from_session(u, work), u[0]))
    costs = _costs(plan, ordered)
    everything = {n for unit in ordered for n in unit}
    # The base holds the longest note this plan can print: every count at its largest.
    most = len(everything)
    base = len(plan_json(_part(plan, everything, _note(whole, bound, most, most, len(ordered), most, 10 * whole))))
    budget = bound - base
    alone = [i for i, cost in enumerate(costs) if cost > bound - base]
    best: tuple[int, dict[str, Any]] | None = None
    tried: set[frozenset[int]] = set()
    for _ in range(MAX_PASSES):
        taken = _first_fit(costs, budget)
        if not taken or frozenset(taken) in tried:
            break
        tried.add(frozenset(taken))
        deferred = {n for i, unit in enumerate(ordered) if i not in taken for n in unit}
        note = None if not deferred else _note(
            whole, bound, len(everything) - len(deferred), len(deferred), len(ordered) - len(taken),
            sum(len(ordered[i]) for i in alone), base + max((costs[i] for i in alone), default=0))
        part = _part(plan, deferred, note)
        size = len(plan_json(part))
        if size <= bound and (best is None or len(taken) > best[0]):
            best = (len(taken), part)
        # The estimate is nearly an upper bound: what the part left unused may take more units, what
        # it overran takes some back (below what was taken, or the same units would be taken again).
        budget = budget + bound - size if size <= bound else sum(costs[i] for i in taken) - (size - bound)
    if best is not None:
        return best[1]
    smallest = base + min(costs, default=0)
    raise PlanBoundError(
        f"the built-in plan cannot fit limits.plan_bytes ({bound} bytes): the items every selected memory "
        f"needs and the smallest group of changes that must land together take {smallest} bytes; raise "
        f"limits.plan_bytes in config.yaml to at least {smallest}, or consolidate a smaller scope",
        data={"bound": bound, "needed": smallest})


def _first_fit(costs: list[int], budget: int) -> set[int]:
    taken: set[int] = set()
    for index, cost in enumerate(costs):
        if cost <= budget:
            taken.add(index)
            budget -= cost
    return taken


def _note(whole: int, bound: int, done: int, left: int, groups: int, alone: int, needed: int) -> str:
    text = (f"{NOTE_PREFIX}the whole plan is {whole} bytes, over limits.plan_bytes ({bound}); this run makes the "
            f"changes of {done} memories and leaves the changes of {left} memories ({groups} groups) for the "
            "next run: consolidate again to continue")
    if alone:
        text += (f"; {alone} of them are in groups too large for the bound on their own: raise "
                 f"limits.plan_bytes to at least {needed} to let them through")
    return text[:3900]
