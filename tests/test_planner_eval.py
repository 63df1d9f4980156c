"""The labelled evaluation set: merge precision/recall, no lost facts, staleness, conflicts, grounding, capacity."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from test_planner_support import (
    apply_plan,
    check_plan,
    load_projects,
    lost_facts,
    memory_bytes,
    merged_pairs,
    plan_store,
    store_of,
    write_repo,
)

from pipeline.store.memory import parse_memory

EXPECTED_VERDICT = {"superseded": "SUPERSEDED", "contradicted": "CONTRADICTED", "dormant": "DORMANT",
                    "oneshot": "ONE-SHOT"}
TAKEN = {"DORMANT", "ONE-SHOT", "SUPERSEDED", "SUBSUMED"}


def _labelled_pairs(project: dict[str, Any]) -> set[frozenset[str]]:
    groups: dict[str, list[str]] = {}
    for entry in project["memories"]:
        if entry.get("dup"):
            groups.setdefault(f"{project['id']}/{entry['dup']}", []).append(entry["n"])
    return {frozenset(p) for g in groups.values() for p in itertools.combinations(g, 2)}


def test_the_evaluation_set_is_large_enough() -> None:
    projects = load_projects()
    assert len(projects) >= 5
    assert sum(len(p["memories"]) for p in projects) >= 150


def test_merges_reach_the_precision_and_recall_targets_without_losing_facts(tmp_path: Path) -> None:
    tp = fp = fn = 0
    lost: list[str] = []
    for project in load_projects():
        store = store_of(project)
        repo = write_repo(tmp_path / project["id"], project.get("files", {}))
        plan = plan_store(store, repo)
        assert check_plan(plan, sorted(store), store, repo) == []
        merged, labelled = merged_pairs(plan), _labelled_pairs(project)
        tp += len(merged & labelled)
        fp += len(merged - labelled)
        fn += len(labelled - merged)
        lost += lost_facts(store, apply_plan(store, plan), plan)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"\nmerge pairs: tp={tp} fp={fp} fn={fn} precision={precision:.3f} recall={recall:.3f}; "
          f"lost fact lines={len(lost)}")
    assert precision >= 0.95
    assert recall >= 0.90
    assert lost == []


def test_one_store_of_all_projects_never_merges_across_projects(tmp_path: Path) -> None:
    projects = load_projects()
    store: dict[str, bytes] = {}
    owner: dict[str, str] = {}
    for project in projects:
        for name, data in store_of(project).items():
            store[name] = data
            owner[name] = project["id"]
    plan = plan_store(store, write_repo(tmp_path / "repo", {}))
    assert check_plan(plan, sorted(store), store, tmp_path / "repo") == []
    merged = merged_pairs(plan)
    assert [sorted(p) for p in merged if len({owner[n] for n in p}) > 1] == []
    labelled = set().union(*(_labelled_pairs(p) for p in projects))
    unrelated = merged - labelled
    print(f"\ncombined store: {len(merged & labelled)} of {len(labelled)} labelled pairs merged, "
          f"{len(unrelated)} unrelated")
    assert unrelated == set()


@pytest.mark.parametrize("project", load_projects(), ids=lambda p: p["id"])
def test_verdicts_and_grounding_match_the_labels(project: dict[str, Any], tmp_path: Path) -> None:
    store = store_of(project)
    repo = write_repo(tmp_path / "repo", project.get("files", {}))
    plan = plan_store(store, repo)
    verdicts = {s["name"]: s["verdict"] for s in plan["staleness"]}
    grounding = {g["name"]: g["status"] for g in plan["grounding"]}
    report = {r["name"]: r for r in plan["report"]}
    deleted = {op["name"] for op in plan["operations"] if op["kind"] == "delete"}
    for entry in project["memories"]:
        name = entry["n"]
        label = entry.get("stale") or entry.get("conflict")
        if label in EXPECTED_VERDICT:
            assert verdicts[name] == EXPECTED_VERDICT[label], name
        elif not entry.get("dup"):
            assert verdicts[name] not in TAKEN, name
        if entry.get("stale"):
            assert name in deleted, f"{name} is stale and must be removed"
        if entry.get("conflict") == "contradicted":
            assert name not in deleted
        if entry.get("ground"):
            assert grounding[name] == entry["ground"], name
        if entry.get("ground") == "ungrounded" and not entry.get("dup"):
            assert name not in deleted and report[name]["status"] == "flagged", name
    # A value change on one subject is a supersession: the newer stands, named as the successor.
    successors = {op["name"]: op.get("into") for op in plan["operations"] if op["kind"] == "delete"}
    newer = {e["n"] for e in project["memories"] if e.get("conflict") == "newer"}
    for entry in project["memories"]:
        if entry.get("conflict") == "superseded":
            assert successors[entry["n"]] in newer, entry["n"]


@pytest.mark.parametrize("project", load_projects(), ids=lambda p: p["id"])
def test_a_second_run_on_the_applied_store_plans_nothing(project: dict[str, Any], tmp_path: Path) -> None:
    store = store_of(project)
    repo = write_repo(tmp_path / "repo", project.get("files", {}))
    after = apply_plan(store, plan_store(store, repo))
    assert plan_store(after, repo)["operations"] == []


def _capacity_store() -> tuple[dict[str, bytes], dict[str, str]]:
    """Six topics of ten distinct notes each: 60 index lines for a 40-line index."""
    topics = ["billing", "search", "queue", "ledger", "export", "catalog"]
    facts = ["retries three times", "logs to the audit table", "has a nightly job", "owns a feature flag",
             "pages the on-call", "keeps a dead letter queue", "exports metrics", "needs a VPN",
             "caches lookups", "writes to a replica"]
    store: dict[str, bytes] = {}
    topic_of: dict[str, str] = {}
    for t, topic in enumerate(topics):
        for i, fact in enumerate(facts):
            name = f"project_{topic}-{fact.split()[1]}-{fact.split()[-1]}.md"
            store[name] = memory_bytes({
                "n": name, "d": f"the {topic} service {fact}", "m": f"2026-{1 + i:02d}-{1 + t:02d}T00:00:00Z",
                "b": f"- The {topic} service {fact}.\n- Owner: team {topic} {i}\n"})
            topic_of[name] = topic
    return store, topic_of


def test_an_over_capacity_store_of_distinct_notes_is_left_whole_and_the_plan_says_so(tmp_path: Path) -> None:
    store, _ = _capacity_store()
    limits = {"indexLines": 40, "indexBytes": 25_600}
    repo = write_repo(tmp_path / "repo", {})
    plan = plan_store(store, repo, limits=limits)
    assert check_plan(plan, sorted(store), store, repo) == []
    # Sixty distinct facts sharing six topic words: nothing is a duplicate, so nothing merges.
    assert plan["operations"] == []
    assert apply_plan(store, plan) == store
    note = next(n for n in plan["notes"] if n.startswith("the index stays over capacity"))
    assert "by 20 lines" in note and "memfold forget NAME" in note
    oldest = sorted(store, key=lambda n: parse_memory(store[n], n).modified or "")[:5]
    assert all(name in note for name in oldest)
