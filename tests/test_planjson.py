"""The plan text the built-in planner prints and plan.json holds: compact, packed lines, the compact shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.planner.planjson import PRINT_LINE_BUDGET, compacted, expanded, plan_json


def _plan(n: int) -> dict[str, Any]:
    names = [f"project_note-{i:05d}.md" for i in range(n)]
    return {
        "kind": "memory-consolidation-plan", "schemaVersion": 1, "selected": names,
        "inventory": [{"name": x, "classification": "private"} for x in names],
        "clusters": [{"name": x.removesuffix(".md"), "files": [x]} for x in names[1:]]
        + [{"name": "merged", "files": [names[0]]}],
        "staleness": [{"name": x, "verdict": "KEEP"} for x in names[:-1]] + [{"name": names[-1], "verdict": "DORMANT"}],
        "grounding": [{"name": x, "status": "not-applicable", "observations": []} for x in names],
        "report": [{"name": x, "status": "kept", "summary": "kept unchanged"} for x in names],
        "operations": [],
    }


def test_the_printed_plan_parses_back_and_no_line_passes_the_budget_by_more_than_an_item() -> None:
    plan = _plan(20_000)
    data = plan_json(plan, PRINT_LINE_BUDGET)
    assert json.loads(data) == plan
    lines = data.split(b"\n")
    assert lines[-1] == b"" and len(lines) < 40
    assert max(map(len, lines)) <= PRINT_LINE_BUDGET + 200


def test_plan_json_holds_one_item_a_line_with_sorted_keys_and_no_padding() -> None:
    plan = _plan(3)
    data = plan_json(plan)
    assert json.loads(data) == plan
    assert b'{"classification":"private","name":"project_note-00000.md"}' in data
    assert data.count(b"\n") > 3 * 5 and b": " not in data


def test_the_compact_shape_expands_to_exactly_the_full_plan_items() -> None:
    plan = _plan(50)
    small = compacted(plan)
    assert small["defaults"]["staleness"] == {"verdict": "KEEP"}
    assert small["staleness"] == [{"name": "project_note-00049.md", "verdict": "DORMANT"}]
    assert small["grounding"] == [] and small["report"] == []
    assert small["clusters"] == [{"name": "merged", "files": ["project_note-00000.md"]}]
    assert len(plan_json(small)) * 3 < len(plan_json(plan))
    full = expanded(small, plan["selected"])
    for artifact in ("staleness", "grounding", "report", "clusters"):
        key = (lambda item: item["name"]) if artifact != "clusters" else (lambda item: item["files"][0])
        assert sorted(full[artifact], key=key) == sorted(plan[artifact], key=key), artifact
    assert "defaults" not in full


def test_each_expanded_default_item_is_a_copy_of_its_own() -> None:
    plan = _plan(4)
    small = compacted(plan)
    small["defaults"]["grounding"]["observations"] = ["seen once"]
    full = expanded(small, plan["selected"])
    items = full["grounding"]
    assert len(items) == 4 and all(item["observations"] == ["seen once"] for item in items)
    items[0]["observations"].append("changed")
    items[1]["status"] = "changed"
    assert [item["observations"] for item in items[1:]] == [["seen once"]] * 3
    assert small["defaults"]["grounding"] == {"status": "not-applicable", "observations": ["seen once"]}
    assert [item["status"] for item in items] == ["not-applicable", "changed", "not-applicable", "not-applicable"]


def test_a_malformed_defaults_entry_is_left_for_the_schema_to_refuse() -> None:
    plan = _plan(3)
    for bad in ({"staleness": "KEEP"}, {"inventory": {}}, {"clusters": "all"}, {"report": {"name": "x.md"}}):
        broken = {**plan, "defaults": bad}
        assert expanded(broken, plan["selected"]) is broken


def test_a_limit_stops_the_text_past_it_and_leaves_a_text_within_it_unchanged() -> None:
    import pytest

    from pipeline.planner.planjson import TooLong

    plan = _plan(300)
    whole = plan_json(plan, PRINT_LINE_BUDGET)
    assert plan_json(plan, PRINT_LINE_BUDGET, limit=len(whole)) == whole
    with pytest.raises(TooLong):
        plan_json(plan, PRINT_LINE_BUDGET, limit=len(whole) // 3)


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _VALUES, max_size=6))
def test_each_item_is_written_exactly_as_compact_sorted_json_dumps_writes_it(plan: dict[str, Any]) -> None:
    lines = plan_json(plan).decode("utf-8").removesuffix("\n").split("\n")
    assert "".join(lines) == json.dumps(plan, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def test_a_plan_that_cannot_be_written_leaves_the_writer_as_it_was() -> None:
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        plan_json({"operations": [{"content": looped}]})
    with pytest.raises(TypeError):
        plan_json({"operations": [{"content": object()}]})
    plan = _plan(3)
    assert json.loads(plan_json(plan)) == plan  # no container of a failed call is still marked


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                     max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=10), _JSON | st.lists(_JSON, max_size=6), max_size=8))
def test_plan_json_one_item_a_line_is_the_text_the_item_by_item_writer_builds(plan: dict[str, Any]) -> None:
    # A limit no text reaches sends the call through the item-by-item writer: both texts are one.
    assert plan_json(plan) == plan_json(plan, 0, limit=1 << 40)
    assert json.loads(plan_json(plan)) == plan


def test_plan_json_one_item_a_line_matches_the_item_by_item_writer_on_a_real_plan_shape() -> None:
    plan = _plan(500)
    assert plan_json(plan) == plan_json(plan, 0, limit=1 << 40)
    assert plan_json({}) == plan_json({}, 0, limit=1 << 40) == b"{}\n"
