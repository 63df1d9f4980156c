"""Screens: rules that rarely match, searched as one program first.

Most rules a note's gates let through match nowhere in it, and each such search still reads the whole
note. A screen is one RE2 program, the alternation of a few such rules' patterns: it matches somewhere
in a text exactly when one of them does, so a text it does not match is answered for all of them in
one search, and a text it matches is searched by each rule as before. Findings never change.

The groups are measured, not derived: an alternation of some patterns stays a small automaton and
costs about one of them (twelve national-number rules: 24 ms apart, 2.7 ms together on the bench's
training notes), while others multiply their states and cost more than all apart (the comparison
rules with the named-birth-date rule), so only groups measured cheap are listed. A group is chosen
greedily on the notes of the training split's benign lines: a rule joins the group whose cost it
raises least, when that is under a quarter of its own.

A screen costs its compile (10 to 20 ms for the larger ones), so a rule set uses screens only once it
has scanned ``SCREEN_AFTER_CHARS`` of text: a command that screens one memory compiles just the rules
it runs; a consolidation or a bench, which scan megabytes, earn the compile back many times.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .model import Rule

SCREEN_AFTER_CHARS = 1 << 20

SCREENS: tuple[tuple[str, ...], ...] = (
    ("discord-bot-token", "postal-address-compound", "postal-address-street-first", "secret-comparison",
     "postal-address"),
    ("secret-comparison-reversed", "config-line-word-password", "cli-secret-flag", "npmrc-auth"),
    ("it-codice-fiscale", "ipv4-address", "ipv6-address", "secret-call-argument", "iban", "secret-named-argument",
     "in-pan", "se-personnummer", "twilio-api-key", "es-dni", "fr-nir", "url-query-secret"),
    ("date-of-birth-named", "uk-nino", "mx-curp", "fi-hetu", "cl-rut", "phone-number-labelled",
     "phone-number-international", "airtable-token", "cli-attached-password", "ca-sin", "us-ssn", "dk-cpr"),
    ("date-of-birth-labelled", "br-cpf", "be-national-number", "eleven-digit-national-id", "yandex-key"),
)


class Screen:
    """The alternation of some rules' patterns (``members``: their places in the rule set)."""

    __slots__ = ("members", "_source", "_match")

    def __init__(self, members: frozenset[int], sources: list[str]) -> None:
        self.members = members
        self._source = "|".join(f"(?:{source})" for source in sources)
        self._match: Any = None

    def matches(self, data: bytes) -> bool:
        """Whether any member's pattern matches somewhere in ``data``."""
        if self._match is None:
            self._match = _compile(self._source)
        return bool(self._match(data))


def _compile(source: str) -> Any:
    import re2

    options = re2.Options()
    options.never_capture = True  # only "is there a match" is asked: no group is tracked
    options.max_mem = 32 << 20  # room for the union's states: past RE2's default 8 MB, some thrash on CJK notes
    options.log_errors = False
    try:
        program = re2.compile(source, options)
    except re2.error:
        return lambda data: True  # a program RE2 refuses (past its size limit): each member searches alone
    regexp, anchors = getattr(program, "_regexp", None), getattr(re2, "_Anchor", None)
    if regexp is not None and anchors is not None:
        def match(data: bytes) -> bool:
            return bool(regexp.Match(anchors.UNANCHORED, data, 0, len(data))[0][1] >= 0)

        return match
    return lambda data: program.search(data) is not None


def screens(rules: tuple[Rule, ...]) -> list[Screen]:
    """The screens of ``SCREENS`` over the rules as loaded (a user's rule under a shipped id brings its
    own pattern), each with two members at least."""
    place = {rule.id: index for index, rule in enumerate(rules)}
    out = []
    for group in SCREENS:
        members = [place[rule_id] for rule_id in group if rule_id in place]
        sources = [_source(rules[index].pattern) for index in members]
        if len(members) >= 2 and all(source is not None for source in sources):
            out.append(Screen(frozenset(members), [source for source in sources if source is not None]))
    return out


def _source(pattern: Any) -> str | None:
    """A rule's pattern text: a shipped rule's lazy pattern holds it, a compiled one names it."""
    source = getattr(pattern, "source", None)
    if source is None:
        source = getattr(pattern, "pattern", None)
    return source if isinstance(source, str) else None
