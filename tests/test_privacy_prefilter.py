"""The prefilter: a rule skipped on a text could never have matched it, so findings never change."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.privacy import RuleSet, loader, prefilter
from pipeline.privacy.prefilter import Features, Needs, needs
from pipeline.resources import data_dir

DATA = Path(__file__).parent / "data" / "privacy"


def _document() -> dict[str, Any]:
    return loader._parse_rules_file(data_dir("schemas") / loader.RULES_FILE)


def _ruleset(*, prefiltered: bool) -> RuleSet:
    document = _document()
    rules = list(document["rules"])
    built = loader._build(rules, [loader.RULES_FILE] * len(rules), list(document.get("allowlist", [])),
                          shipped_allowlist=True, benign=list(document.get("benign", [])))
    if not prefiltered:
        built._needs_source = None  # every woken rule runs on every text, as before the prefilter
    return built


WITH = _ruleset(prefiltered=True)
WITHOUT = _ruleset(prefiltered=False)


def _texts() -> list[str]:
    positives = [row["text"] for row in yaml.safe_load((DATA / "positives.yaml").read_text("utf-8"))]
    corpus = []
    for name in ("positives.jsonl", "benign.jsonl"):
        with open(DATA / "corpus" / name, encoding="utf-8") as fh:
            corpus += [json.loads(line)["text"] for line in fh if line.strip()]
    return positives + corpus


TEXTS = _texts()
POSITIVES = [row for row in yaml.safe_load((DATA / "positives.yaml").read_text("utf-8"))]


def _same(text: str) -> None:
    WITH.forget()
    WITHOUT.forget()
    assert WITH.scan(text) == WITHOUT.scan(text)
    assert WITH.spans(text, ("credential", "pii", "path")) == WITHOUT.spans(text, ("credential", "pii", "path"))


@pytest.mark.stress
def test_the_labelled_corpus_gets_the_same_findings_with_and_without_the_prefilter() -> None:
    found = 0
    for text in TEXTS:
        WITH.forget()
        WITHOUT.forget()
        expected = WITHOUT.scan(text)
        assert WITH.scan(text) == expected, text[:80]
        found += bool(expected)
    assert found > 2000  # the corpus is mostly positives: the comparison covers real findings


def test_every_rules_own_examples_are_still_found_through_the_prefilter() -> None:
    for row in POSITIVES:
        WITH.forget()
        assert row["category"] in {f.category for f in WITH.scan(row["text"])}, row["rule"]


_FILLER = st.text(alphabet=st.sampled_from([*"abcXYZ019 -./:_=+@\n\t", "é", "ü", "日"]), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_FILLER, st.integers(0, len(TEXTS) + len(POSITIVES) - 1), st.integers(0, 3)),
                min_size=1, max_size=4), _FILLER)
def test_random_texts_seeded_with_rule_examples_get_the_same_findings(pieces: list[tuple[str, int, int]],
                                                                      tail: str) -> None:
    """Examples cut, joined and wrapped in noise: partial matches are where an unsound bound would show."""
    parts = []
    for filler, pick, cut in pieces:
        source = POSITIVES[pick - len(TEXTS)]["text"] if pick >= len(TEXTS) else TEXTS[pick]
        parts += [filler, source[cut:len(source) - cut]]
    _same("".join(parts) + tail)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789 -./()+:abcAKIZ\n")), max_size=120))
def test_digit_heavy_noise_gets_the_same_findings(text: str) -> None:
    _same(text)


def test_the_shipped_needs_table_is_what_the_patterns_say() -> None:
    """The table spares each process reading ~190 patterns; it must say exactly what they say."""
    patterns = [str(rule["pattern"]) for rule in _document()["rules"]]
    stored = json.loads((data_dir("schemas") / prefilter.NEEDS_FILE).read_text("utf-8"))
    assert stored == prefilter.table(patterns)


def test_a_rule_without_a_keyword_is_not_compiled_for_a_text_that_cannot_hold_it() -> None:
    ruleset = _ruleset(prefiltered=True)
    card = next(i for i, r in enumerate(ruleset.rules) if r.id == "payment-card-number")
    ruleset.scan("released 2026-07-17, see step 12 of 40")
    assert ruleset.rules[card].pattern._compiled is None
    findings = ruleset.scan("card on file: 4539 1488 0343 6467")
    assert "payment-card-number" in {f.rule_id for f in findings}
    assert ruleset.rules[card].pattern._compiled is not None


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"\b[0-9]{13}\b", Needs(b"", 13, (13, 13, 13))),
    (r"(?:4[0-9]{3})(?:[ -]?[0-9]){8,15}", Needs(b"", 12, (4, 12, 12))),
    (r"[0-9]{4}[ -]*[0-9]{4}", Needs(b"", 8, (4, 4, 4))),  # two separators side by side end a cluster
    (r"[0-9]{2}\.[0-9]{3}/[0-9]{4}", Needs(b"./", 9, (4, 4, 9))),
    (r"(?i:ab|cd)[0-9]?x", Needs(b"", 0, (0, 0, 0))),
    (r"ghp_[A-Za-z0-9]{36}", Needs(b"_", 0, (0, 0, 0))),
    (r"(?:[0-9]|x){5}", Needs(b"", 0, (0, 0, 0))),
    (r"[[:digit:]]{9}", prefilter.NONE),  # POSIX classes are read differently by RE2: no needs
    (r"\p{N}{9}", Needs(b"", 0, (0, 0, 0))),
    (r"a(?=b)", prefilter.NONE),
])
def test_needs_are_lower_bounds_read_from_the_pattern(pattern: str, expected: Needs) -> None:
    assert needs(pattern) == expected


def test_each_glue_set_holds_the_one_before_it() -> None:
    # cluster_needs leaves needs out on this: a longer glue set never shortens the longest cluster.
    for smaller, larger in zip(prefilter.GLUES, prefilter.GLUES[1:], strict=False):
        assert set(smaller) <= set(larger)


@given(st.binary(max_size=80) | st.text(alphabet="0123456789 -./x\n", max_size=80).map(str.encode))
@settings(max_examples=500, deadline=None)
def test_the_longest_cluster_never_shrinks_along_the_glue_sets(data: bytes) -> None:
    features = Features(data)
    longest = [features.cluster(i) for i in range(len(prefilter.GLUES))]
    assert longest == sorted(longest)
    for clusters in [(1, 1, 1), (4, 4, 4), (3, 5, 11), (4, 12, 12), (2, 6, 6), (16, 16, 17), (0, 3, 3), (5, 4, 9)]:
        decided = all(longest[glue] >= count for glue, count in prefilter.cluster_needs(clusters))
        assert decided == all(have >= need for have, need in zip(longest, clusters, strict=True))


def test_cluster_needs_keep_only_the_needs_no_earlier_one_meets() -> None:
    assert prefilter.cluster_needs((4, 4, 4)) == ((0, 4),)
    assert prefilter.cluster_needs((4, 12, 12)) == ((0, 4), (1, 12))
    assert prefilter.cluster_needs((0, 3, 11)) == ((1, 3), (2, 11))
    assert prefilter.cluster_needs((0, 0, 0)) == ()


def test_features_count_digits_and_clusters_of_a_text() -> None:
    features = Features(b"call 0612-34 56 78, 2026-07-17T10:00 or 1.2.3")
    assert features.digits() == 25
    assert [features.cluster(i) for i in range(len(prefilter.GLUES))] == [4, 10, 10]
    assert features.meets(Needs(b",:", 25, (4, 10, 10)))
    assert not features.meets(Needs(b"", 0, (0, 11, 0)))
    assert not features.meets(Needs(b"@", 0, (0, 0, 0)))


def test_random_noise_against_every_rule_alone_keeps_each_rules_findings() -> None:
    """Each rule's own examples mutated digit by digit: the bound must hold for near misses too."""
    rng = random.Random(21)
    for row in POSITIVES:
        text = row["text"]
        for _ in range(5):
            chars = list(text)
            for _ in range(3):
                at = rng.randrange(len(chars))
                chars[at] = rng.choice("0123456789 -.")
            _same("".join(chars))


@pytest.mark.parametrize(("pattern", "widened"), [
    (r"\p{Lu}\p{Ll}+", r"[A-Z\x{80}-\x{10FFFF}][a-z\x{80}-\x{10FFFF}]+"),
    (r"[\p{L}'.-]{2}\pN", r"[A-Za-z\x{80}-\x{10FFFF}'.-]{2}[\x{0}-\x{10FFFF}]"),
    (r"\P{L}x", ""),  # widened to everything: no outline worth a search
    (r"[\]\p{Ll}]", r"[\]a-z\x{80}-\x{10FFFF}]"),
    (r"[^\p{L}]", ""),  # widening inside a negated class would narrow it
    (r"\\p{L}", ""),  # an escaped backslash, then letters
    (r"ghp_[A-Za-z0-9]{36}", ""),
])
def test_an_outline_widens_each_unicode_class(pattern: str, widened: str) -> None:
    assert prefilter.outline(pattern) == widened


def test_an_outline_matches_wherever_its_pattern_does() -> None:
    import re2

    texts = [t.encode("utf-8") for t in TEXTS] + [
        "Zoë O'Brien-Łukasiewicz, 12.03.1987".encode(), "Ångström Straße 12, 10115 Berlin".encode()]
    for rule in _document()["rules"]:
        widened = prefilter.outline(str(rule["pattern"]))
        if not widened:
            continue
        pattern, wide = re2.compile(str(rule["pattern"])), re2.compile(widened)
        for data in texts:
            if pattern.search(data) is not None:
                assert wide.search(data) is not None, (rule["id"], data[:80])


def test_a_unicode_rule_is_compiled_only_once_its_outline_matches() -> None:
    ruleset = _ruleset(prefiltered=True)
    named = next(i for i, r in enumerate(ruleset.rules) if r.id == "date-of-birth-named")
    ruleset.scan("created: 2026-07-17\nthe deploy runs after review; see src/m12.py.")
    assert ruleset.rules[named].pattern._compiled is None
    findings = ruleset.scan("Maria Gonzalez Ruiz, 14.03.1986 is on the guest list")
    assert "date-of-birth-named" in {f.rule_id for f in findings}
    assert ruleset.rules[named].pattern._compiled is not None


def test_a_user_rule_gets_the_needs_its_own_pattern_says() -> None:
    ruleset = loader.load_ruleset([{"id": "ticket-code", "category": "credential", "description": "a ticket code",
                                    "pattern": r"\bTK-[0-9]{9}\b"}])
    gate = ruleset._rule_needs()[-1]
    assert gate is not None and gate.needs == Needs(b"-", 9, (9, 9, 9))
    assert ruleset.scan("see TK-12345 and TK-987654321 today")[0].rule_id == "ticket-code"


def test_a_stored_row_that_is_not_this_versions_shape_is_read_from_the_pattern(monkeypatch: Any) -> None:
    document = _document()
    card = next(str(r["pattern"]) for r in document["rules"] if r["id"] == "payment-card-number")
    monkeypatch.setitem(loader._MEMO, "needs", {card: ["", 99]})  # too short: not a row this version wrote
    ruleset = _ruleset(prefiltered=True)
    index = next(i for i, r in enumerate(ruleset.rules) if r.id == "payment-card-number")
    gate = ruleset._rule_needs()[index]
    assert gate is not None and gate.needs == needs(card)
    assert "payment-card-number" in {f.rule_id for f in ruleset.scan("card on file: 4539 1488 0343 6467")}


def test_the_rule_sets_digest_follows_the_stored_needs(tmp_path: Path, monkeypatch: Any) -> None:
    """Verdicts kept under the digest are dropped when the needs table changes."""
    document = _document()
    rules = list(document["rules"])
    before = loader._digest(rules, [], [])
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    stored = json.loads((data_dir("schemas") / prefilter.NEEDS_FILE).read_text("utf-8"))
    stored[next(iter(stored))][1] += 1
    (schemas / prefilter.NEEDS_FILE).write_text(json.dumps(stored), "utf-8")
    monkeypatch.setattr(loader, "data_dir", lambda kind: schemas)
    assert loader._digest(rules, [], []) != before
