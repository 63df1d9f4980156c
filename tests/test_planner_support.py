"""Helpers for the planner tests: stores from descriptions, a plan checker and a plan applier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from pipeline.fsutil import sha256_bytes
from pipeline.planner.plan import build_plan
from pipeline.planner.text import fact_lines, known_keys, masked
from pipeline.store.memory import Memory, is_memory_name, parse_memory, render_memory

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "planner"
NOW = "2026-11-30T12:00:00Z"
HEX = {"scopeKey": "a" * 64, "scopeDigest": "b" * 64, "artifactHash": "c" * 64, "snapshotDigest": "c" * 64}
VERDICTS = {"KEEP", "SUPERSEDED", "SUBSUMED", "CONTRADICTED", "OPS-ONLY", "ONE-SHOT", "DORMANT"}


def load_projects() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted(DATA.glob("*.yaml"))]


def memory_bytes(entry: dict[str, Any]) -> bytes:
    modified = str(entry.get("m", "2026-04-01T09:00:00Z"))
    memory = Memory(
        name=entry.get("title", entry["n"].removesuffix(".md").split("_", 1)[-1].replace("-", " ")),
        description=entry["d"], type=entry.get("t", "project"), visibility=entry.get("v", "private"),
        created=str(entry.get("c", modified[:10])), modified=modified,
        expires=str(entry["e"]) if entry.get("e") else None, body=entry.get("b", ""),
    )
    return render_memory(memory)


def store_of(project: dict[str, Any]) -> dict[str, bytes]:
    return {e["n"]: memory_bytes(e) for e in project["memories"]}


def write_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def manifest_for(selected: list[str], limits: dict[str, int] | None = None, run_id: str = "run-1") -> dict[str, Any]:
    return {"kind": "memory-consolidation-manifest", "schemaVersion": 1, "runId": run_id, **HEX,
            "selected": sorted(selected), "scope": "all", "createdAt": NOW, "limits": limits or {}}


def plan_store(store: dict[str, bytes], repo: Path, *, selected: list[str] | None = None,
               limits: dict[str, int] | None = None, candidates: list[dict[str, Any]] | None = None,
               mirror: tuple[str, ...] = ()) -> dict[str, Any]:
    memories = {n: (b, parse_memory(b, n)) for n, b in store.items()}
    manifest = manifest_for(sorted(store) if selected is None else selected, limits)
    return build_plan(manifest, memories, {"candidates": candidates or []}, repo, reserved=list(mirror))


def apply_plan(store: dict[str, bytes], plan: dict[str, Any]) -> dict[str, bytes]:
    after = dict(store)
    for op in plan["operations"]:
        if op["kind"] == "delete":
            del after[op["name"]]
        else:
            after[op["name"]] = op["content"].encode("utf-8")
    return after


def _schema() -> dict[str, Any]:
    return json.loads((REPO / "schemas" / "plan.schema.json").read_text())


def check_plan(plan: dict[str, Any], manifest_selected: list[str], store: dict[str, bytes], repo: Path,
               max_file_bytes: int = 64 * 1024, mirror: tuple[str, ...] = ()) -> list[str]:
    """Every issue a validating parent would raise about ``plan``."""
    import jsonschema

    issues = [f"schema: {e.message}" for e in jsonschema.Draft202012Validator(_schema()).iter_errors(plan)]
    selected = sorted(manifest_selected)
    if plan["selected"] != selected:
        issues.append("selected differs from the manifest")
    for key in ("inventory", "staleness", "grounding", "report"):
        names = [item["name"] for item in plan[key]]
        if sorted(names) != selected:
            issues.append(f"{key} does not cover the selection exactly once")
    files = [f for c in plan["clusters"] for f in c["files"]]
    if sorted(files) != selected:
        issues.append("clusters do not cover the selection exactly once")
    for item in plan["staleness"]:
        if item["verdict"] not in VERDICTS:
            issues.append(f"verdict {item['verdict']}")
    real_root = repo.resolve()
    for item in plan["grounding"]:
        for obs in item["observations"]:
            path = obs["path"]
            if path.startswith("/") or ".." in path.split("/"):
                issues.append(f"grounding path {path!r} is not repository-relative")
            resolved = (repo / path).resolve()
            if obs["status"] == "found" and (not resolved.is_file() or real_root not in resolved.parents):
                issues.append(f"grounding path {path!r} is not an existing file inside the root")
    existing = {n.lower() for n in store} | {n.lower() for n in mirror}
    seen: set[str] = set()
    for op in plan["operations"]:
        name = op["name"]
        if name.lower() in seen:
            issues.append(f"{name}: more than one operation")
        seen.add(name.lower())
        if op["kind"] in ("rewrite", "delete") and name not in selected:
            issues.append(f"{name}: {op['kind']} outside the selection")
        if op["kind"] == "create" and (name.lower() in existing or not is_memory_name(name)):
            issues.append(f"{name}: create on an existing or invalid name")
        if op["kind"] != "delete":
            data = op["content"].encode("utf-8")
            if op["contentSha256"] != sha256_bytes(data):
                issues.append(f"{name}: contentSha256 mismatch")
            if len(data) > max_file_bytes:
                issues.append(f"{name}: content over the size bound")
            if parse_memory(data, name).visibility != op["classification"]:
                issues.append(f"{name}: classification differs from the content's visibility")
    return issues


def _wording(raw: str) -> str:
    """A line apart from its values, each word once and in its order: "deploy deploy 9090" restated
    as "deploy 8080" is restated (the order still counts, so a swap of roles is not)."""
    return " ".join(dict.fromkeys(masked(raw)[0].split()))


def lost_facts(before: dict[str, bytes], after: dict[str, bytes], plan: dict[str, Any]) -> list[str]:
    """Fact lines of the pre-state found nowhere after the plan (stale deletions excepted)."""
    verdicts = {s["name"]: s["verdict"] for s in plan["staleness"]}
    post = {n: parse_memory(b, n) for n, b in after.items()}
    keys: set[str] = set()
    masks: set[str] = set()
    for memory in post.values():
        keys |= known_keys(memory)
        masks |= {_wording(raw) for raw, _ in fact_lines(memory)} | {_wording(memory.description)}
    lost = []
    for name, data in sorted(before.items()):
        if verdicts.get(name) in ("DORMANT", "ONE-SHOT"):
            continue
        for raw, key in fact_lines(parse_memory(data, name)):
            if key in keys:
                continue
            if verdicts.get(name) == "SUPERSEDED" and _wording(raw) in masks:
                continue  # restated with a newer value
            lost.append(f"{name}: {raw}")
    return lost


def merged_pairs(plan: dict[str, Any]) -> set[frozenset[str]]:
    """Pairs of names that ended up in one memory through duplicate or capacity merges."""
    into: dict[str, str] = {}
    for item in plan["report"]:
        if item["status"] == "merged" and "; merged into " in item["summary"]:
            into[item["name"]] = item["summary"].rsplit("; merged into ", 1)[1].split(" ", 1)[0]

    def final(name: str) -> str:
        seen = set()
        while name in into and name not in seen:
            seen.add(name)
            name = into[name]
        return name

    groups: dict[str, set[str]] = {}
    for name in plan["selected"]:
        groups.setdefault(final(name), set()).add(name)
    return {frozenset((a, b)) for g in groups.values() for a in g for b in g if a < b}



_TOPICS = ["deploy", "billing", "search", "auth", "cache", "queue", "metrics", "storage", "email", "reports",
           "mobile", "gateway", "ledger", "export", "import", "scheduler", "pricing", "catalog", "orders", "users"]
_WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
          "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil cedar dune ember fjord "
          "grove harbor iris jade kestrel lotus maple nectar orchid pine quartz raven sage tulip umber violet "
          "willow yarrow zephyr").split()


def generate_store(count: int, seed: int = 7) -> dict[str, bytes]:
    """A synthetic store: distinct notes, ~10% paraphrased duplicates, some expired and conflicting."""
    import random

    rng = random.Random(seed)
    store: dict[str, bytes] = {}
    i = 0
    while len(store) < count:
        topic = _TOPICS[i % len(_TOPICS)]
        words = rng.sample(_WORDS, 6)
        kind = ["project", "feedback", "reference", "user"][i % 4]
        month = 1 + i % 9
        desc = f"{topic} {words[0]} {words[1]} uses {words[2]} for {words[3]} number {i}"
        body = f"- {topic} {words[4]} relies on {words[5]} {i}\n- see src/{topic}/{words[0]}.py\n"
        tag = "".join(chr(97 + (i // 26**k) % 26) for k in range(4))
        entry = {"n": f"{kind}_{topic}-{words[0]}-{tag}.md", "t": kind, "d": desc, "b": body,
                 "m": f"2026-0{month}-01T00:00:00Z"}
        if i % 50 == 7:
            entry["e"] = "2026-02-01"
        store[entry["n"]] = memory_bytes(entry)
        if i % 10 == 3 and len(store) < count:
            dup = dict(entry, n=f"{kind}_{topic}-{words[0]}-{tag}-again.md", d=desc.capitalize() + ".",
                       b=body.replace("- ", "* "), m=f"2026-0{month}-15T00:00:00Z")
            store[dup["n"]] = memory_bytes(dup)
        i += 1
    return store
