"""Screens: rules searched together first. A text a screen does not match skips its members, so the
findings with screens are the findings without them, on every text."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import ConfigError
from pipeline.privacy import RuleSet, load_ruleset, loader
from pipeline.privacy.screens import Screens, _everywhere
from pipeline.resources import data_dir

DATA = Path(__file__).parent / "data" / "privacy"


def _shipped(*, screened: bool) -> RuleSet:
    document = loader._parse_rules_file(data_dir("schemas") / loader.RULES_FILE)
    rules = list(document["rules"])
    built = loader._build(rules, [loader.RULES_FILE] * len(rules), list(document.get("allowlist", [])),
                          shipped_allowlist=True, benign=list(document.get("benign", [])))
    if not screened:
        built.screens = Screens(())  # every rule its gates let through is searched on its own
    return built


SCREENED = _shipped(screened=True)
PLAIN = _shipped(screened=False)
EXAMPLES = [row["text"] for row in yaml.safe_load((DATA / "positives.yaml").read_text("utf-8"))]


def _corpus(name: str) -> list[str]:
    with open(DATA / "corpus" / name, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


POSITIVES = _corpus("positives.jsonl")
BENIGN = _corpus("benign.jsonl")


def _same(ruleset: RuleSet, plain: RuleSet, text: str) -> list[Any]:
    ruleset.forget()
    plain.forget()
    found = ruleset.scan(text)
    assert found == plain.scan(text), text[:120]
    every = ("credential", "pii", "path")
    assert ruleset.spans(text, every) == plain.spans(text, every), text[:120]
    return found


def _index(ruleset: RuleSet, rule_id: str) -> int:
    return next(i for i, rule in enumerate(ruleset.rules) if rule.id == rule_id)


def test_the_shipped_rules_have_a_screen_and_each_compiles_as_one_program() -> None:
    assert SCREENED.screens, "the shipped rules file names no screen"
    members = {SCREENED.rules[i].id for screen in SCREENED.screens.members for i in screen}
    assert {"payment-card-number", "iban", "it-codice-fiscale"} <= members
    for screen in range(len(SCREENED.screens.members)):
        assert SCREENED.screens.finder(screen, SCREENED._rule_needs()) is not _everywhere


def test_members_of_a_screen_that_matches_nowhere_are_never_searched() -> None:
    ruleset = _shipped(screened=True)
    note = ("---\nname: deploy order\ndescription: how releases go out\n---\n"
            "Run the migrations before the web tier; the queue drains in about 40 seconds.\n")
    assert ruleset.scan(note) == []
    # Two members whose gates every such note passes: one with no needs, one that needs a full stop.
    fiscal, discord = _index(ruleset, "it-codice-fiscale"), _index(ruleset, "discord-bot-token")
    assert ruleset._finders[fiscal] is None and ruleset._finders[discord] is None  # never searched
    plain = _shipped(screened=False)
    assert plain.scan(note) == []
    assert plain._finders[fiscal] is not None and plain._finders[discord] is not None
    found = ruleset.scan(note + "Refunds go to DE35 3704 0044 0532 0130 99, card 4539 1488 0343 6467.\n")
    assert {"iban", "payment-card-number"} <= {f.rule_id for f in found}


def test_every_rules_own_examples_get_the_same_findings() -> None:
    found = sum(bool(_same(SCREENED, PLAIN, text)) for text in EXAMPLES)
    assert found == len(EXAMPLES)


def test_a_sample_of_the_corpus_gets_the_same_findings() -> None:
    rng = random.Random(7)
    texts = rng.sample(POSITIVES, 600) + rng.sample(BENIGN, 600)
    found = sum(bool(_same(SCREENED, PLAIN, text)) for text in texts)
    assert found > 450  # most sampled positives are found: the comparison covers real findings


@pytest.mark.stress
def test_the_whole_corpus_gets_the_same_findings() -> None:
    found = sum(bool(_same(SCREENED, PLAIN, text)) for text in POSITIVES + BENIGN)
    assert found > 4500  # most positives are found: the comparison covers real findings


_FILLER = st.text(alphabet=st.sampled_from([*"abcXYZ019 -./:_=+@,\n\t", "é", "Ł", "日"]), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_FILLER, st.integers(0, len(EXAMPLES) - 1), st.integers(0, 3)), min_size=1, max_size=5),
       _FILLER)
def test_rule_examples_cut_joined_and_wrapped_in_noise_get_the_same_findings(
        pieces: list[tuple[str, int, int]], tail: str) -> None:
    """Several members' examples in one text, cut at either end: where a later member matches before an
    earlier one, or a partial match sits ahead of a real one, a screen that started a search too late
    would show."""
    parts = []
    for filler, pick, cut in pieces:
        text = EXAMPLES[pick]
        parts += [filler, text[cut:len(text) - cut]]
    _same(SCREENED, PLAIN, "".join(parts) + tail)


def _user(rules: list[dict[str, Any]], *, screened: bool = True) -> RuleSet:
    built = load_ruleset(extra_rules=rules)
    if not screened:
        built.screens = Screens(())
    return built


_TICKETS = [
    {"id": "ticket-a", "category": "pii", "description": "A ticket", "pattern": r"\bAAA-([0-9]{4})\b",
     "secret_group": 1, "screen": "tickets"},
    {"id": "ticket-b", "category": "pii", "description": "B ticket", "pattern": r"(?i)\bbbb-([0-9]{4})\b",
     "secret_group": 1, "screen": "tickets"},
]


def test_a_later_member_matching_first_does_not_hide_an_earlier_members_matches() -> None:
    text = "bbb-1234 came first, then AAA-9876, then BBB-5555 and aaa-0000 (not a ticket: lower case)"
    found = _same(_user(_TICKETS), _user(_TICKETS, screened=False), text)
    assert [(f.rule_id, f.column) for f in found] == [
        ("ticket-b", text.index("1234") + 1), ("ticket-a", text.index("9876") + 1), ("ticket-b", text.index("5555") + 1)]


def test_a_screen_re2_refuses_leaves_each_member_searched_on_its_own(monkeypatch: Any) -> None:
    from pipeline.privacy import patterns

    compile_pattern = patterns.compile_pattern

    def refuse_screens(pattern: str, where: str, *, capture: bool = True) -> Any:
        if not capture:  # only a screen is compiled without captures
            raise ConfigError(f"{where}: pattern too large - compile failed")
        return compile_pattern(pattern, where)

    monkeypatch.setattr(patterns, "compile_pattern", refuse_screens)
    screened = _user(_TICKETS)
    found = _same(screened, _user(_TICKETS, screened=False), "see AAA-1234 and bbb-9876")
    assert [f.rule_id for f in found] == ["ticket-a", "ticket-b"]
    screen = screened.screens.of[_index(screened, "ticket-a")]
    assert screened.screens.finder(screen, screened._rule_needs()) is _everywhere


def test_a_user_rule_may_join_a_shipped_screen() -> None:
    rule = {"id": "staff-number", "category": "pii", "description": "Staff number",
            "pattern": r"\bSTF([0-9]{6})\b", "secret_group": 1, "screen": "rare-shapes"}
    ruleset = _user([rule])
    assert _index(ruleset, "staff-number") in ruleset.screens.members[ruleset.screens.of[_index(ruleset, "iban")]]
    assert [f.rule_id for f in _same(ruleset, _user([rule], screened=False), "badge STF123456, desk 4")] == [
        "staff-number"]


@pytest.mark.parametrize("name", ["Rare Shapes", "", "x" * 65, "-lead"])
def test_a_screen_name_must_be_a_lowercase_slug(name: str) -> None:
    rule = dict(_TICKETS[0], screen=name)
    with pytest.raises(ConfigError, match="ticket-a"):
        load_ruleset(extra_rules=[rule])
