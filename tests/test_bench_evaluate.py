"""The labelled consolidation evaluation: the data set's size and kinds, and the figures a real run reaches."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.bench.evaluate import TARGETS, format_eval, load_cases, run_eval, score


def test_the_data_set_has_300_memories_in_12_kinds_with_an_expected_outcome_each() -> None:
    _, cases = load_cases()
    assert len(cases) >= 300
    assert len({c.kind for c in cases}) >= 12
    files = [c.file for c in cases]
    assert len(files) == len({f.lower() for f in files})
    for case in cases:
        kind, _, target = case.expect.partition(":")
        assert kind in ("keep", "into", "superseded", "flag", "dormant", "one-shot"), case
        if target:
            assert target in files, case
    assert any(c.data.count(b"\r\n") > 3 and b"metadata:" in c.data for c in cases)  # Claude Code's shape
    assert any(b"visibility:" not in c.data for c in cases)  # Pi's entry files


@pytest.mark.integration
def test_a_real_consolidation_of_the_data_set_meets_every_target(tmp_path: Path) -> None:
    figures = run_eval(tmp_path)
    assert figures["mergePrecision"] >= TARGETS["mergePrecision"], figures["wrongMerges"]
    assert figures["mergeRecall"] >= TARGETS["mergeRecall"], figures["missedMerges"]
    assert figures["supersessionRecall"] >= TARGETS["supersessionRecall"], figures["missedSupersessions"]
    assert figures["distinctFactsLost"] == 0, figures["lost"]
    assert figures["visibilityFlips"] == 0, figures["flips"]
    assert figures["duplicateTitles"] == 0 and figures["met"] is True
    assert "over capacity" in figures["capacityNote"]
    assert "targets met" in format_eval(figures)


def test_the_score_counts_a_wrong_merge_a_lost_fact_and_a_flip() -> None:
    _, cases = load_cases()
    twins = [c for c in cases if c.kind == "distinct-host-twins"][:2]
    a, b = twins
    plan = {"staleness": [{"name": a.file, "verdict": "SUBSUMED"}, {"name": b.file, "verdict": "KEEP"}],
            "operations": [{"name": a.file, "kind": "delete", "into": b.file}]}
    after = {b.file: b.data.replace(b"visibility: private", b"visibility: safe")}
    figures = score(twins, plan, after)
    assert figures["mergePrecision"] == 0.0 and figures["wrongMerges"] == [f"{a.file} + {b.file}"]
    assert figures["distinctFactsLost"] == 2 and figures["visibilityFlips"] == 2 and figures["met"] is False
