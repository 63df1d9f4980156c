"""Recall and false-positive rate of the shipped privacy rules on the labelled corpora."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.privacy import load_ruleset

DATA = Path(__file__).parent / "data" / "privacy"
MIN_RECALL = 0.95
MAX_FP_RATE = 0.02


def positives() -> list[dict[str, Any]]:
    with open(DATA / "positives.yaml", encoding="utf-8") as fh:
        samples: list[dict[str, Any]] = yaml.safe_load(fh)
    return samples


def benign_notes() -> list[str]:
    text = (DATA / "benign.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_corpora_are_large_and_cover_every_category() -> None:
    samples = positives()
    assert len(samples) >= 90
    assert len(benign_notes()) >= 320
    assert set(Counter(s["category"] for s in samples)) == {"credential", "pii", "path"}


def test_every_labelled_rule_exists_and_every_rule_has_a_positive() -> None:
    rule_ids = {rule.id for rule in load_ruleset().rules}
    labelled = {s["rule"] for s in positives()}
    assert labelled <= rule_ids
    assert rule_ids - labelled == set(), "rules without a positive sample"


def test_recall_and_false_positive_rate() -> None:
    ruleset = load_ruleset()
    samples = positives()
    missed = []
    exact = 0
    for sample in samples:
        findings = ruleset.scan(sample["text"], file="positives.yaml")
        if sample["category"] not in {f.category for f in findings}:
            missed.append(sample["rule"])
        if sample["rule"] in {f.rule_id for f in findings}:
            exact += 1
    recall = 1 - len(missed) / len(samples)

    notes = benign_notes()
    flagged = [(n, [f.rule_id for f in ruleset.scan(n)]) for n in notes]
    flagged = [(n, ids) for n, ids in flagged if ids]
    fp_rate = len(flagged) / len(notes)

    print(f"\nrecall {recall:.1%} ({len(samples) - len(missed)}/{len(samples)}), "
          f"exact rule {exact}/{len(samples)}; missed: {missed}")
    print(f"false-positive rate {fp_rate:.2%} ({len(flagged)}/{len(notes)})")
    for _, ids in flagged:
        print(f"  benign note flagged by {ids}")
    assert recall >= MIN_RECALL
    assert fp_rate <= MAX_FP_RATE


@pytest.mark.parametrize("sample", positives(), ids=lambda s: s["rule"])
def test_preview_never_shows_more_than_a_public_prefix(sample: dict[str, Any]) -> None:
    for finding in load_ruleset().scan(sample["text"]):
        shown = finding.preview.split("…", 1)[0]
        assert len(shown) <= 4
        assert finding.preview.endswith(" chars]")
