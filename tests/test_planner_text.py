"""Planner text normalisation: the fast paths give exactly what the plain regular expressions define."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.planner import text
from pipeline.planner.grounding import _LINK, _PATH_HINT, _PATHISH, _TICKS, _URL, extract
from pipeline.planner.staleness import _REMINDER, _reminder_date
from pipeline.store.memory import Memory

_VALUE = re.compile("|".join(text._VALUE_PARTS))
_PIECES = ["`", "/", "://", ".py", ".json", ".yml", "a", "Zq", "7", "42", "_", "-", ".", ":", " ", "  ", "~", "\n",
           "\t", "\x0b", "\x1c", "\x00", "é", "ß", "\u0663", "\u2028", "[[x]]", "[a](http://h/p)", "- ", "1. ", "> ",
           "[x] ", "s3", "v1.2", "src/app.py", "Makefile", "remind me on ", "todo by ", "2025-01-02", "#", ",", "!"]
pieces = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=3)), max_size=16).map("".join)


def _fact_key(line: str) -> str:
    return " ".join(text._PUNCT().sub(" ", text._MARKER.sub("", line).casefold()).split())


def _masked(line: str) -> tuple[str, tuple[str, ...]]:
    values: list[str] = []
    folded = text._MARKER.sub("", line).casefold()
    predicate = text._PREDICATE.search(folded)
    subject_end = predicate.start() if predicate else 0

    def keep(match: re.Match[str]) -> str:
        value = match.group(0).strip("`").strip().rstrip(".,;:")
        if text._identifying(value, match.start(), subject_end):
            return match.group(0)
        values.append(value)
        return f" {text.VALUE_MARK} "

    replaced = _VALUE.sub(keep, folded)
    return " ".join(text._PUNCT().sub(" ", replaced).split()), tuple(values)


def _tokens(value: str) -> frozenset[str]:
    words = text._WORD().findall(text._LINK().sub(" ", value.casefold()).replace("_", " "))
    return frozenset(text._stem(w) for w in words if w not in text.STOPWORDS and len(w) > 1)


@settings(max_examples=3000, deadline=None)
@given(line=pieces)
def test_keys_masks_and_tokens_match_their_regular_expressions(line: str) -> None:
    assert text.fact_key(line) == _fact_key(line)
    assert text.masked.__wrapped__(line) == _masked(line)
    assert text.tokens.__wrapped__(line) == _tokens(line)


_LINE_PIECES = ["- ", "* [ ] ", "  - [x] ", "1. ", "12) ", "> > ", "-", "*", "+", ">", "[x]", " ", "\t", "\r",
                "\x0b", "\x1c", "\x1f", "A", "b", "Zq", "7", "_", ".", ",", "`", "\n", "\n", "é"]


@settings(max_examples=3000, deadline=None)
@given(body=st.lists(st.sampled_from(_LINE_PIECES), max_size=24).map("".join))
def test_a_body_s_facts_are_its_lines_with_their_fact_keys(body: str) -> None:
    """Markers, case, punctuation and whitespace handled for the whole body at once, as line by line."""
    lines = body.split("\n")
    assert text.body_facts.__wrapped__(body) == tuple((raw.rstrip(), _fact_key(raw)) for raw in lines
                                                      if _fact_key(raw))


def test_a_value_before_the_predicate_or_a_named_thing_stays_in_the_key() -> None:
    assert text.masked.__wrapped__("Host web01 uses port 8080 behind nginx") == (
        "host web01 uses port zvalz behind nginx", ("8080",))
    assert text.masked.__wrapped__("app2 requires Node 20") == ("app2 requires node zvalz", ("20",))
    assert text.masked.__wrapped__("Node 18 reaches end of life on 2025-04-30") == (
        "node 18 reaches end of life on zvalz", ("2025-04-30",))
    assert text.masked.__wrapped__("API port is 9090") == ("api port is zvalz", ("9090",))
    assert text.identifiers("the staging db of app1 uses 5432") == {"staging", "app1"}


def test_two_memories_about_two_hosts_are_distinct_subjects_and_one_host_twice_is_not() -> None:
    web01 = Memory(name="Web01 port", description="Host web01 uses port 8080 behind nginx")
    web02 = Memory(name="Web02 port", description="Host web02 uses port 9090 behind nginx")
    again = Memory(name="web01", description="web01 listens on 8081 behind nginx, see ops/nginx.conf")
    assert text.distinct_subjects(web01, web02)
    assert not text.distinct_subjects(web01, again)


def test_every_ascii_character_is_spaced_as_the_punctuation_pattern_spaces_it() -> None:
    line = "".join(chr(c) for c in range(128)) + " - 8080 `make test` ops/deploy.sh v2"
    assert text.fact_key(line) == _fact_key(line)
    assert text.masked.__wrapped__(line) == _masked(line)
    assert text.tokens.__wrapped__(line) == _tokens(line)


@settings(max_examples=2000, deadline=None)
@given(line=pieces)
def test_a_reminder_date_is_what_the_reminder_pattern_finds(line: str) -> None:
    match = _REMINDER().search(line)
    assert _reminder_date(line) == (next(g for g in match.groups() if g) if match else None)


@settings(max_examples=3000, deadline=None)
@given(prose=pieces)
def test_the_literal_checks_before_the_claim_patterns_never_skip_a_match(prose: str) -> None:
    assert _PATHISH().search(prose) is None or _PATH_HINT.search(prose) is not None
    assert _URL().search(prose) is None or "://" in prose
    assert _LINK().search(prose) is None or "[" in prose
    assert _TICKS().search(prose) is None or "`" in prose


def test_claims_in_prose_backticks_and_links_are_all_found() -> None:
    memory = Memory(name="m", description="See [the guide](https://x.io/a/b.py) and `ops/deploy.sh`",
                    body="- Run src/app/main.py via the Makefile; `load_config()` reads config/app.yaml\n")
    claims = extract(memory)
    assert claims.paths == ("ops/deploy.sh", "src/app/main.py", "Makefile", "config/app.yaml")
    assert claims.symbols == ("load_config",)


# The numeric part of the value alternation as it was first written: the same language, but with
# exponential backtracking on a long word that ends in "_" (1.7 s for 26 characters, x3.5 per 2 more).
_OLD_NUMBER = re.compile(r"\b[a-z]*\d+(?:[.:_-]?[a-z0-9]+)*\b")
_NUMBER = re.compile(text._VALUE_PARTS[-1])


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="abz019_.:- /", max_size=14))
def test_the_number_part_matches_what_it_always_matched(line: str) -> None:
    assert [m.span() for m in _NUMBER.finditer(line)] == [m.span() for m in _OLD_NUMBER.finditer(line)]


def test_a_long_word_ending_in_an_underscore_is_no_denial_of_service() -> None:
    """Each of these took longer than the worker's timeout with the ambiguous pattern."""
    import subprocess
    import sys

    lines = ["v1" + "a" * 60 + "_", "1" + "a1" * 40 + "_", "7" * 5000 + "_", "1" + ".a1" * 2000 + "_"]
    code = ("import sys\nfrom pipeline.planner import text\n"
            f"for line in {lines!r}:\n    text.masked(line)\nprint('done')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "done", proc.stderr
