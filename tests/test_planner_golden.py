"""The planner prints the same bytes for the same snapshot: compared with plans recorded from the planner itself."""

# The record holds the sha256, length and line count of the plan the planner printed for each store
# of ``planner_golden.stores()``: synthetic stores of 200, 2,000 and 20,000 memories, stores full of
# values, hosts, paths, reminders and shared titles, the labelled evaluation set and the fixtures.

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planner_golden import GOLDEN, digest, plan_bytes, stores

RECORD = json.loads(GOLDEN.read_text())
CASES = [pytest.param(label, marks=[pytest.mark.stress] if large else [], id=label)
         for label, (_, large) in stores().items()]


def test_every_store_has_a_recorded_plan() -> None:
    assert sorted(RECORD) == sorted(stores())


@pytest.mark.parametrize("label", CASES)
def test_the_plan_is_byte_identical_to_the_recorded_one(label: str, tmp_path: Path) -> None:
    make, _ = stores()[label]
    data = plan_bytes(tmp_path / "run", make())
    assert digest(data) == RECORD[label]


def test_a_changed_memory_changes_the_plan(tmp_path: Path) -> None:
    """The record is sensitive to the plan: a body that names one more file gives other bytes."""
    make, _ = stores()["fixture-shop-api"]
    store = make()
    name = sorted(store.files)[0]
    store.files[name] = store.files[name].replace(b"\n---\n", b"\n---\n- see `src/nowhere/missing.py`\n", 1)
    assert digest(plan_bytes(tmp_path / "run", store)) != RECORD["fixture-shop-api"]
