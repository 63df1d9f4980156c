"""Property tests: for random stores the plan is valid, loses no fact, and a second run is a no-op."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_planner_support import apply_plan, check_plan, lost_facts, memory_bytes, plan_store

WORDS = ["deploy", "cache", "billing", "port", "tests", "redis", "queue", "token", "api", "docs", "lint", "ci"]
VALUES = ["8080", "9090", "3.11", "3.12", "ops/deploy.sh", "src/app/main.py", "`make test`", "`make check`"]

line = st.builds(lambda ws, v, marker: f"{marker}{' '.join(ws)} {v}".strip(),
                 st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.sampled_from([*VALUES, ""]),
                 st.sampled_from(["", "- ", "* ", "1. "]))
entry = st.fixed_dictionaries({
    "stem": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map("-".join),
    "t": st.sampled_from(["project", "feedback", "user", "reference"]),
    "v": st.sampled_from(["safe", "private"]),
    "d": st.lists(st.sampled_from(WORDS + VALUES), min_size=1, max_size=6).map(" ".join),
    "b": st.lists(line, max_size=5).map("\n".join),
    "m": st.sampled_from(["2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-06-01T00:00:00Z"]),
    "e": st.sampled_from([None, None, None, "2026-01-01", "2027-01-01"]),
    "selected": st.booleans(),
})


def _store(entries: list[dict[str, object]]) -> tuple[dict[str, bytes], list[str]]:
    store: dict[str, bytes] = {}
    selected: list[str] = []
    for i, e in enumerate(entries):
        name = f"{e['t']}_{e['stem']}-{chr(97 + i % 26)}{i}.md"
        store[name] = memory_bytes({**e, "n": name})
        if e["selected"]:
            selected.append(name)
    return store, selected


def _pair(older_body: str) -> list[dict[str, object]]:
    """A newer "deploy 8080" and an older memory of the same description saying ``older_body``."""
    base = {"stem": "deploy", "t": "feedback", "v": "safe", "d": "8080", "e": None, "selected": True}
    return [{**base, "b": "deploy 8080", "m": "2026-03-01T00:00:00Z"},
            {**base, "b": older_body, "m": "2026-01-01T00:00:00Z"}]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# A doubled word states the same subject; one shared word out of two does not (found by this test).
@example(entries=_pair("deploy deploy 9090"), lines=3, tiny=False)
@example(entries=_pair("deploy cache 9090"), lines=3, tiny=False)
@given(entries=st.lists(entry, max_size=14), lines=st.sampled_from([3, 8, 200]), tiny=st.booleans())
def test_random_stores_give_valid_plans_that_keep_facts_and_settle(
    entries: list[dict[str, object]], lines: int, tiny: bool, tmp_path: Path
) -> None:
    store, selected = _store(entries)
    limits = {"indexLines": lines, "indexBytes": 25_600, "maxFileBytes": 700 if tiny else 65_536}
    plan = plan_store(store, tmp_path, selected=selected, limits=limits)
    assert check_plan(plan, selected, store, tmp_path, max_file_bytes=limits["maxFileBytes"]) == []
    after = apply_plan(store, plan)
    assert lost_facts(store, after, plan) == []
    for name in set(store) - set(selected):
        assert after[name] == store[name]
    second_selected = sorted(set(selected) - set(store) | {n for n in after if n in selected or n not in store})
    assert plan_store(after, tmp_path, selected=second_selected, limits=limits)["operations"] == []
