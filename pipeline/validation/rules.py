"""Semantic rules on the plan's identity and per-memory artifacts: binding, scope, coverage, verdicts."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..errors import Issue
from .context import ARTIFACTS, IDENTITY, Context, json_path
from .schema import verdicts

_SEPARATORS = re.compile(r"[\s_]+")


def identity(ctx: Context) -> Iterator[Issue]:
    for key in IDENTITY:
        if not ctx.intact(key):
            continue  # the schema already reported it
        value = ctx.plan[key]
        expected = ctx.manifest.identity[key]
        if value != expected:
            yield Issue("plan.identity", json_path(key),
                        f"{key} {ctx.show(str(value))} does not match the run's manifest ({expected!r})")
    if "snapshotDigest" in ctx.plan and ctx.intact("snapshotDigest") and ctx.intact("artifactHash"):
        if ctx.plan["snapshotDigest"] != ctx.plan["artifactHash"]:
            yield Issue("plan.identity", json_path("snapshotDigest"),
                        "snapshotDigest is an alias of artifactHash and must equal it")


def selected(ctx: Context) -> Iterator[Issue]:
    expected = ctx.selected
    seen: dict[str, int] = {}
    for index, name in enumerate(ctx.plan["selected"]):
        if name in seen:
            yield Issue("plan.selected", json_path("selected", index),
                        f"selected names {ctx.label(name)} twice (first at selected[{seen[name]}])")
            continue
        seen[name] = index
        if name not in expected:
            yield Issue("plan.selected", json_path("selected", index),
                        f"selected names {ctx.label(name)}, which the run did not select")
    for name in sorted(expected - seen.keys()):
        yield Issue("plan.selected", json_path("selected"),
                    f"selected is missing {name}, which the run selected")


def coverage(ctx: Context) -> Iterator[Issue]:
    """Each artifact names every selected memory exactly once; clusters partition the selection."""
    expected = ctx.selected
    for artifact in ARTIFACTS:
        if not ctx.intact(artifact):
            continue
        seen: dict[str, int] = {}
        for index, item in ctx.items(artifact):
            name = item["name"]
            if name in expected and name not in seen:
                seen[name] = 1  # the common case, without building the message's path and place
                continue
            yield from _one(ctx, artifact, name, seen, (artifact, index, "name"), f"{artifact}[{index}]")
        yield from _missing(artifact, expected, seen)
    if ctx.intact("clusters"):
        seen = {}
        for index, cluster in ctx.items("clusters"):
            for position, name in enumerate(cluster["files"]):
                if name in expected and name not in seen:
                    seen[name] = 1
                    continue
                yield from _one(ctx, "clusters", name, seen, ("clusters", index, "files", position),
                                f"clusters[{index}].files[{position}]")
        yield from _missing("clusters", expected, seen)


def _one(ctx: Context, artifact: str, name: str, seen: dict[str, int], path: tuple[str | int, ...],
         where: str) -> Iterator[Issue]:
    if name not in ctx.selected:
        yield Issue("plan.coverage.unknown", json_path(*path),
                    f"{where} names {ctx.label(name)}, which is not in the selected scope")
    elif name in seen:
        yield Issue("plan.coverage.duplicate", json_path(*path),
                    f"{where} names {name} again; {artifact} must name each selected memory exactly once")
    else:
        seen[name] = 1


def _missing(artifact: str, expected: frozenset[str], seen: dict[str, int]) -> Iterator[Issue]:
    for name in sorted(expected - seen.keys()):
        yield Issue("plan.coverage.missing", json_path(artifact),
                    f"{artifact} has no entry for {name}; it must name each selected memory exactly once")


def classification(ctx: Context) -> Iterator[Issue]:
    """The inventory states today's visibility, or the new one when a rewrite reclassifies the memory."""
    planned: dict[str, str] = {}
    for _, op in ctx.items("operations"):
        if op["kind"] == "rewrite":
            planned.setdefault(op["name"], op["classification"])
    for index, item in ctx.items("inventory"):
        memory = ctx.pre.memories.get(item["name"])
        if memory is None:
            continue  # an unknown name is a coverage issue; a vanished one, a stale snapshot
        allowed = {memory.visibility, planned.get(item["name"], memory.visibility)}
        if item["classification"] not in allowed:
            yield Issue("plan.inventory.classification", json_path("inventory", index, "classification"),
                        f"inventory[{index}] ({item['name']}): classification {item['classification']} "
                        f"disagrees with the memory's visibility {memory.visibility}, and no rewrite "
                        "reclassifies it")


def verdict(ctx: Context) -> Iterator[Issue]:
    """Runs whatever the schema said: it replaces the schema's enum error with a spelling hint."""
    allowed = verdicts()
    for index, item in ctx.items("staleness"):
        if "verdict" not in item or (isinstance(item["verdict"], str) and item["verdict"] in allowed):
            continue
        value = item["verdict"]
        name = item.get("name")
        where = f"staleness[{index}]" + (f" ({ctx.label(name)})" if isinstance(name, str) else "")
        choices = ", ".join(allowed)
        if not isinstance(value, str):
            message = f"{where}: verdict must be a string, one of {choices}"
        else:
            guess = _SEPARATORS.sub("-", value.strip()).upper()
            if guess in allowed:
                message = (f"{where}: verdict {ctx.show(value)} is misspelled; write {guess!r} "
                           "(verdicts are upper case with hyphens)")
            else:
                message = f"{where}: verdict {ctx.show(value)} is not one of {choices}"
        yield Issue("plan.verdict", json_path("staleness", index, "verdict"), message)
