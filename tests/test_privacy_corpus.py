"""Recall and false-positive rate of the shipped privacy rules on the labelled corpora."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.privacy import load_ruleset

DATA = Path(__file__).parent / "data" / "privacy"
CORPUS = DATA / "corpus"
FAMILIES = ("vendor-tokens", "generic-secrets", "command-line-credentials", "prose-passwords", "connection-strings",
            "private-keys", "cards", "ibans", "national-ids", "phones", "addresses", "dates-of-birth", "home-paths")
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
    ruleset = load_ruleset()
    rule_ids = {rule.id for rule in ruleset.rules}
    labelled = {s["rule"] for s in positives()}
    assert labelled <= rule_ids
    # The generated corpus is labelled by family and kind, not by rule: a rule's sample is a text it fires on.
    fired = {f.rule_id for row in corpus_rows("positives.jsonl") for f in ruleset.scan(row["text"])}
    assert rule_ids - labelled - fired == set(), "rules without a positive sample"


def corpus_rows(name: str) -> list[dict[str, Any]]:
    with open(CORPUS / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


# The test split: sources the rules were never tuned on. Changing a row of it changes this hash, and
# this test fails: the split is frozen so its figures stay comparable from one rule change to the next.
TEST_SPLIT_SHA256 = "24479669a106823d650772292a056dd0f30e888e24c4c6127d67314dccae0f88"
TEST_SPLIT_ROWS = 2157


def test_the_test_split_is_frozen() -> None:
    rows = [json.dumps(r, sort_keys=True, ensure_ascii=False)
            for name in ("positives.jsonl", "benign.jsonl") for r in corpus_rows(name) if r["split"] == "test"]
    assert len(rows) == TEST_SPLIT_ROWS
    assert hashlib.sha256("\n".join(rows).encode()).hexdigest() == TEST_SPLIT_SHA256


def test_the_corpus_is_split_by_source_never_by_item() -> None:
    splits: dict[str, set[str]] = {}
    for row in corpus_rows("positives.jsonl") + corpus_rows("benign.jsonl"):
        source = row["source"].split("@", 1)[0] if "@" in row["source"] else row["source"]
        splits.setdefault(source, set()).add(row["split"])
    assert {s for found in splits.values() for s in found} == {"train", "test"}
    assert [source for source, found in splits.items() if len(found) > 1] == []


OUTSIDE_BENIGN_KINDS = ("memory-file", "scanner-ok", "credential-reference", "variable-reference", "external-secret",
                        "documentation-placeholder", "hashed-asset", "jwt-package")


def test_outside_sources_are_named_with_their_commit() -> None:
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    outside = {r["source"].split(":", 1)[0] for r in corpus_rows("positives.jsonl") + corpus_rows("benign.jsonl")
               if r.get("variant") == "fixture" or r.get("kind") in OUTSIDE_BENIGN_KINDS}
    assert len({o.split("@")[0] for o in outside}) >= 12
    assert all(o in sources for o in outside), outside - {o for o in outside if o in sources}


def test_generated_corpus_is_large_varied_and_written_three_ways() -> None:
    rows = [r for r in corpus_rows("positives.jsonl") if r.get("variant") != "fixture"]
    benign = corpus_rows("benign.jsonl")
    assert len(rows) >= 1000 and len(benign) >= 1000
    assert len({(r["family"], r["kind"]) for r in rows}) >= 200
    assert set(Counter(r["family"] for r in rows)) == set(FAMILIES)
    # Every value is there raw, in a sentence without a credential word and in one with it.
    assert Counter(r["variant"] for r in rows) == {v: len(rows) // 3 for v in ("raw", "sentence", "keyword")}
    assert all(r["source"] for r in rows + benign)
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    assert all(r["source"] in sources for r in rows)


def test_the_training_split_keeps_the_figures_measured_when_the_test_split_was_frozen() -> None:
    from pipeline.bench.privacy import measure

    figures = measure(CORPUS)["splits"]["train"]
    # Measured when ripsecrets' and Trivy's tests joined training (88 more positives, 39 benign lines:
    # 92.5 % recall, 3.05 % false positives) and after the mechanisms they led to (93.7 %, 2.92 %):
    # several of the scanners' "must not find" texts are well-formed keys of another vendor, published
    # samples or test passwords (justForTesting), and several "must find" ones are placeholders (abc123…,
    # xxxx, 0123456789, EXAMPLE). leaky-repo's files joined after (42 positives, 2 benign texts: 93.9 %,
    # 2.95 %): its authors call a file of high-entropy strings informative, and the rules read them as tokens.
    # KICS' tests joined after (63 positives, 46 benign texts: 93.6 %, 3.00 %): a third of what KICS expects
    # is none by this gate's reading (the passwords root and postgres, AWS' sample key, webhooks of zeros,
    # a client id, a secrets-manager reference), and two of its negatives hold personal data. Names with a
    # qualifier after the secret's word (DB_PASSWORD_PROD) and the mechanisms after it: 93.7 %, 3.00 %.
    # See docs/privacy-evaluation.md.
    assert figures["recall"] >= 0.937, figures["recall"]
    assert figures["fpRate"] <= 0.0300, figures["fpRate"]


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


def test_bench_privacy_prints_recall_per_family_and_false_positives_for_any_corpus(tmp_path: Path) -> None:
    import io
    from contextlib import redirect_stdout

    from pipeline.cli import main

    rows = [{"family": "vendor-tokens", "kind": "databricks", "split": "train",
             "text": "the deploy uses dapi9f3c1b7e2a5d4c8f0b6e1a3d9c7f2b4e for it"},
            {"family": "phones", "kind": "nl", "split": "test", "text": "call me on 555 at noon"}]
    (tmp_path / "positives.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "benign.jsonl").write_text(json.dumps({"text": "run make test before pushing"}) + "\n" +
                                           json.dumps({"text": "ping me at jan@acme-corp.io"}) + "\n", encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["bench", "--privacy", "--corpus", str(tmp_path), "--json"])
    report = json.loads(out.getvalue())
    assert code == 0
    assert report["splits"]["all"]["families"]["vendor-tokens"] == {"found": 1, "total": 1, "recall": 1.0}
    assert report["splits"]["all"]["families"]["phones"]["found"] == 0
    assert report["splits"]["train"]["recall"] == 1.0 and report["splits"]["test"]["recall"] == 0.0
    assert (report["splits"]["all"]["falsePositives"], report["splits"]["all"]["benign"]) == (1, 2)
    assert report["missed"] == [{"family": "phones", "kind": "nl", "variant": ""}]
    speed = report["throughput"]
    # The figure is the median of the steady passes, shown between the slowest and the fastest of them.
    assert speed["passes"] == 5 and speed["megabytes"] > 0
    assert 0 < speed["slowestMbPerS"] <= speed["mbPerS"] <= speed["fastestMbPerS"]
    assert abs(speed["mbPerS"] - speed["megabytes"] / speed["seconds"]) < 0.05 * speed["mbPerS"]  # both rounded


def test_bench_privacy_without_a_corpus_is_a_usage_error(tmp_path: Path) -> None:
    import io
    from contextlib import redirect_stderr

    from pipeline.cli import main

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["bench", "--privacy", "--corpus", str(tmp_path / "missing")])
    assert code == 2
    assert "positives.jsonl" in err.getvalue()
