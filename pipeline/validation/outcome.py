"""Rules on what a plan does to the store as a whole: nothing dropped unnamed, nothing hidden from the mirror."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import Issue
from .context import Context, Subject, json_path

# A memory may leave the store without a successor only for a reason of time.
TIME_VERDICTS = frozenset({"DORMANT", "ONE-SHOT"})
DELETE_HINT = ("name the memory its content went into (\"into\": a memory that exists after the plan), "
               "or give it a time verdict (DORMANT, ONE-SHOT) in staleness")


def post_names(ctx: Context) -> dict[str, str]:
    """Lower-cased name → visibility of every memory after the plan (the mirror's copies follow the store)."""
    names = {n.lower(): m.visibility for n, m in ctx.pre.memories.items()}
    for _, op in ctx.items("operations"):
        if not isinstance(op.get("name"), str):
            continue
        if op["kind"] == "delete":
            names.pop(op["name"].lower(), None)
        else:
            names[op["name"].lower()] = op["classification"]
    return names


def _verdicts(ctx: Context) -> dict[str, str]:
    return {item["name"]: item["verdict"] for _, item in ctx.items("staleness")
            if isinstance(item.get("name"), str) and isinstance(item.get("verdict"), str)}


def deletes(ctx: Context) -> Iterator[Issue]:
    """Every delete names an ``into`` that exists after the plan, or has a time verdict."""
    after = post_names(ctx)
    verdicts = _verdicts(ctx)
    for index, op in ctx.items("operations"):
        if op["kind"] != "delete":
            continue
        name, into = op["name"], op.get("into")
        subject = Subject(ctx, "operations", index, name, "delete")
        if into is None:
            if verdicts.get(name) not in TIME_VERDICTS:
                yield Issue("plan.delete.unaccounted", json_path("operations", index),
                            f"{subject}: deletes the memory without naming where its content went and "
                            f"without a time verdict (staleness says {verdicts.get(name, 'nothing')}); "
                            + DELETE_HINT)
        elif into.lower() == name.lower() or into.lower() not in after:
            yield Issue("plan.delete.into", json_path("operations", index, "into"),
                        f"{subject}: into names {ctx.label(into)}, which does not exist after the plan; "
                        + DELETE_HINT)


def privatised(ctx: Context) -> list[str]:
    """Safe memories whose content ends up only in a private one: reclassified, or deleted into a private one."""
    after = post_names(ctx)
    out = []
    for _, op in ctx.items("operations"):
        before = ctx.pre.memories.get(op["name"]) if isinstance(op.get("name"), str) else None
        if before is None or not before.is_safe:
            continue
        if op["kind"] == "rewrite" and op["classification"] == "private":
            out.append(op["name"])
        elif op["kind"] == "delete" and isinstance(op.get("into"), str) and after.get(op["into"].lower()) == "private":
            out.append(op["name"])
    return out


def visibility(ctx: Context) -> Iterator[Issue]:
    """A plan may not hide more safe memories from the mirror than it merges (any worker)."""
    hidden = privatised(ctx)
    merged = sum(1 for _, op in ctx.items("operations") if op["kind"] == "delete" and op.get("into"))
    if len(hidden) > merged:
        shown = ", ".join(ctx.label(n) for n in hidden[:5]) + (" and more" if len(hidden) > 5 else "")
        yield Issue("plan.visibility.privatised", json_path("operations"),
                    f"the plan makes {len(hidden)} safe memories private ({shown}) and merges only {merged}: "
                    "merge within one visibility, or keep the safe facts in a safe memory; to make a memory "
                    "private on purpose, use `memfold update NAME --visibility private`")
