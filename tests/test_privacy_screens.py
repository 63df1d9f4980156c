"""Screens: a group of rules searched as one program first never changes what a scan finds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import re2

from pipeline.privacy import RuleSet, load_ruleset, loader
from pipeline.privacy.screens import SCREENS, Screen, screens
from pipeline.resources import data_dir

CORPUS = Path(__file__).parent / "data" / "privacy" / "corpus"


def _corpus_texts() -> list[str]:
    return [json.loads(line)["text"] for name in ("positives.jsonl", "benign.jsonl")
            for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_screened_rule_is_a_shipped_rule_and_in_one_screen_only() -> None:
    ids = {rule.id for rule in load_ruleset().rules}
    listed = [rule_id for group in SCREENS for rule_id in group]
    assert set(listed) <= ids, sorted(set(listed) - ids)
    assert len(listed) == len(set(listed))
    assert len(screens(load_ruleset().rules)) == len(SCREENS)


def test_a_screen_matches_a_text_exactly_when_one_of_its_rules_does() -> None:
    ruleset = load_ruleset()
    built = screens(ruleset.rules)
    texts = _corpus_texts()
    matched = 0
    for screen in built:
        programs = [re2.compile(ruleset.rules[index].pattern.source) for index in sorted(screen.members)]
        for text in texts:
            data = text.encode("utf-8", "replace")
            expected = any(program.search(data) is not None for program in programs)
            assert screen.matches(data) == expected, (sorted(screen.members), text[:60])
            matched += expected
    assert matched > 100  # the corpus holds the screened families: both answers were asked


def _fresh_ruleset() -> RuleSet:
    """A rule set of its own (``load_ruleset()`` shares one per process, with the text it has scanned)."""
    document = loader._parse_rules_file(data_dir("schemas") / loader.RULES_FILE)
    rules = list(document["rules"])
    return loader._build(rules, [loader.RULES_FILE] * len(rules), list(document.get("allowlist", [])),
                         shipped_allowlist=True, benign=list(document.get("benign", [])))


def test_findings_are_the_same_with_screens_from_the_first_text_and_without(
        monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _corpus_texts()
    notes = ["\n".join(texts[start:start + 25]) for start in range(0, len(texts), 25)]
    monkeypatch.setattr("pipeline.privacy.engine.SCREEN_AFTER_CHARS", 1 << 60)
    plain = _fresh_ruleset()
    expected = [[(f.rule_id, f.line, f.column, f.preview) for f in plain.scan(text)] for text in texts + notes]
    assert plain._screens is None  # never screened: the threshold was not reached
    monkeypatch.setattr("pipeline.privacy.engine.SCREEN_AFTER_CHARS", 0)
    screened = _fresh_ruleset()
    found = [[(f.rule_id, f.line, f.column, f.preview) for f in screened.scan(text)] for text in texts + notes]
    assert screened._screens is not None and len(screened._screens) == len(SCREENS)
    assert found == expected
    assert sum(map(bool, expected)) > 1000


def test_a_user_rule_under_a_screened_rules_id_is_screened_with_its_own_pattern() -> None:
    rules = load_ruleset().rules
    place = next(index for index, rule in enumerate(rules) if rule.id == "us-ssn")
    mine = re2.compile(r"\bZZ-[0-9]{4}\b")
    replaced = tuple(rule if index != place else type(rule)(
        id=rule.id, category=rule.category, description=rule.description, source="user privacy rules",
        pattern=mine, keywords=(), check=None, check_params={}, secret_group=0, allowlist=None,
        preview_prefix=0, fallback=False) for index, rule in enumerate(rules))
    screen = next(s for s in screens(replaced) if place in s.members)
    assert screen.matches(b"ticket ZZ-1234 closed")
    assert not screen.matches(b"078-05-1120 is no longer read by this rule")  # the shipped SSN shape


def test_a_screen_past_re2s_size_limit_lets_every_member_search() -> None:
    screen = Screen(frozenset({0, 1}), ["a{1000}{1000}", "b"])
    assert screen.matches(b"nothing here")
