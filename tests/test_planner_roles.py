"""Roles: the same words with things in other roles are two facts, never merged nor superseded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Env
from role_store import build
from test_planner_support import plan_store, write_repo

from pipeline.planner.planjson import expanded
from pipeline.planner.roles import memory_roles, roles_disagree, statement_roles, values_apart
from pipeline.store.memory import INDEX_NAME, Memory, parse_memory, render_memory


def _memory(description: str, body: str = "", modified: str = "2026-03-01T09:00:00Z", title: str = "Timeout",
            visibility: str = "private") -> Memory:
    return Memory(name=title, description=description, type="project", visibility=visibility,
                  created="2026-01-01", modified=modified, body=body or f"- {description}.")


def test_a_statement_names_its_things_as_first_target_and_value() -> None:
    assert statement_roles("timeout from chat-cron to catalog-web is 30 seconds") == (
        frozenset({"chat-cron"}), frozenset({"catalog-web"}), frozenset())
    assert statement_roles("the db-primary alias points to db-blue") == (
        frozenset({"db-primary"}), frozenset({"db-blue"}), frozenset())
    assert statement_roles("the default node pool uses m5.large instances") == (
        frozenset(), frozenset(), frozenset({"m5.large"}))
    assert statement_roles("LOG_LEVEL = debug-verbose") == (
        frozenset({"log-level"}), frozenset(), frozenset({"debug-verbose"}))


def test_plain_words_are_things_only_between_from_and_to() -> None:
    assert statement_roles("builds are promoted from staging to production") == (
        frozenset({"staging"}), frozenset({"production"}), frozenset())
    assert statement_roles("remember to run the tests before a commit") == (frozenset(), frozenset(), frozenset())


def test_swapped_pairs_swapped_direction_and_swapped_key_and_value_disagree() -> None:
    base = _memory("timeout from chat-cron to catalog-web is 30 seconds")
    assert roles_disagree(base, _memory("timeout from chat-web to catalog-cron is 30 seconds"))
    assert roles_disagree(base, _memory("timeout from catalog-web to chat-cron is 30 seconds"))
    alias = _memory("the db-primary alias points to db-blue")
    assert roles_disagree(alias, _memory("the db-blue alias points to db-primary"))
    # An unknown verb: the order the two things are named in speaks.
    header = _memory("the x-tenant-id header carries x-request-id")
    assert roles_disagree(header, _memory("the x-request-id header carries x-tenant-id"))


def test_the_same_roles_in_other_words_agree() -> None:
    base = _memory("timeout from chat-cron to catalog-web is 30 seconds")
    assert not roles_disagree(base, _memory("The timeout from chat-cron to catalog-web is 30 seconds"))
    assert not roles_disagree(base, _memory("chat-cron waits 30 seconds for catalog-web"))
    # A copy with one more line about one more thing is a superset, not a second fact.
    longer = _memory(base.description, body="- timeout from chat-cron to catalog-web is 30 seconds\n"
                     "- timeout from chat-cron to search-api is 30 seconds")
    assert not roles_disagree(base, longer)
    assert memory_roles(_memory("keep answers short")) == (frozenset(), frozenset(), frozenset())


def test_a_new_value_is_apart_only_as_a_value() -> None:
    old, new = _memory("the default node pool uses m5.large"), _memory("the default node pool uses m6i.large")
    assert values_apart(old, new)
    assert not roles_disagree(old, new)


def test_the_planner_keeps_both_memories_of_a_role_swap_and_merges_the_real_duplicate(tmp_path: Path) -> None:
    files = {
        "project_a.md": _memory("timeout from chat-cron to catalog-web is 30 seconds"),
        "project_b.md": _memory("timeout from chat-web to catalog-cron is 30 seconds", modified="2026-04-01T09:00:00Z"),
        "project_c.md": _memory("timeout from catalog-web to chat-cron is 30 seconds", modified="2026-05-01T09:00:00Z"),
        "project_d.md": _memory("The timeout from chat-cron to catalog-web is 30 seconds",
                                modified="2026-06-01T09:00:00Z", title="Timeout again"),
    }
    plan = plan_store({n: render_memory(m) for n, m in files.items()}, write_repo(tmp_path / "repo", {}))
    deletes = {op["name"]: op.get("into") for op in plan["operations"] if op["kind"] == "delete"}
    assert deletes == {"project_a.md": "project_d.md"}


def test_a_role_swap_with_a_new_value_is_no_supersession(tmp_path: Path) -> None:
    """One title, a newer date and another number: still another edge, not a new value of the old one."""
    files = {
        "project_a.md": _memory("timeout from chat-cron to catalog-web is 30 seconds"),
        "project_b.md": _memory("timeout from catalog-web to chat-cron is 45 seconds", modified="2026-09-01T09:00:00Z"),
    }
    plan = plan_store({n: render_memory(m) for n, m in files.items()}, write_repo(tmp_path / "repo", {}))
    assert [op for op in plan["operations"] if op["kind"] == "delete"] == []
    assert {s["name"]: s["verdict"] for s in plan["staleness"]} == {"project_a.md": "KEEP", "project_b.md": "KEEP"}


@pytest.mark.integration
def test_a_3000_memory_store_merges_only_labelled_duplicates_and_the_mirror_keeps_exactly_the_safe_rest(
        env: Env) -> None:
    store = build(3000)
    assert env.run("init").code == 0
    for name, data in store.files.items():
        (env.harness / name).write_bytes(data)
        if store.visibility[name] == "safe":
            (env.mirror / name).write_bytes(data)
    mirror_before = {p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME}
    result = env.spawn("--json", "consolidate", "--no-context", timeout=600)
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    raw = json.loads((Path(summary["runDir"]) / "plan.json").read_bytes())
    plan = expanded(raw, raw["selected"])
    merged = {op["name"]: op.get("into") for op in plan["operations"] if op["kind"] == "delete"}
    labelled = {name: target for name, target in store.expect.items() if target != "keep"}
    assert merged == labelled
    after = {p.name: p.read_bytes() for p in env.harness.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME}
    safe_after = {n for n, data in after.items() if parse_memory(data, n).is_safe}
    mirror_after = {p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME}
    # The mirror holds exactly the safe memories the plan kept, byte for byte ...
    assert mirror_after == safe_after
    assert all((env.mirror / n).read_bytes() == after[n] for n in safe_after)
    # ... and lost exactly the safe duplicates it merged, nothing more.
    safe_merged = {n for n in labelled if store.visibility[n] == "safe"}
    assert mirror_before - mirror_after == safe_merged
    assert len(mirror_before) - len(mirror_after) == len(safe_merged) > 100
