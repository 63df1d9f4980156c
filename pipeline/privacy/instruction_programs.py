"""The RE2 programs of the instruction rules, compiled together once a process, and the chunked search
that keeps their matches linear in the text (see ``instructions`` for the mechanisms that read them)."""

from __future__ import annotations

from collections.abc import Iterator

from . import instruction_patterns as P

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CHUNK = 2048  # characters handed to RE2 at a time (see ``finditer``)


def _fragment(entry: str) -> str:
    return f"{entry[:-1]}[^\\x00-\\x40\\x5b-\\x60\\x7b-\\x7f\\s]{{0,12}}" if entry.endswith("*") else entry


def _words(entries: tuple[str, ...]) -> str:
    return "(?i)(?:" + "|".join(_fragment(e) for e in sorted(set(entries), key=len, reverse=True)) + ")"


def _any(patterns: tuple[str, ...]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


# The fixed phrasings, by group name: the rule they report and their patterns.
PHRASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "override": ("instructions.override", tuple(f"(?i){p}" for p in P.OVERRIDE_PHRASES)),
    "role": ("instructions.role", P.ROLE_PATTERNS),
    "leak": ("instructions.prompt-leak", P.LEAK_PATTERNS),
    "safeguards": ("instructions.safeguards", P.SAFEGUARD_PATTERNS),
    "exfiltrate": ("instructions.exfiltrate", P.EXFIL_PATTERNS),
    "conceal": ("instructions.hidden-directive", P.CONCEAL_PATTERNS),
    "decode": ("instructions.encoded", P.DECODE_AND_OBEY),
}


class Programs:
    """The RE2 programs, compiled together on the first scan of a process (tens of ms, once)."""

    def __init__(self) -> None:
        import re2

        options = re2.Options()
        options.log_errors = False

        def compile_(pattern: str) -> Any:
            return re2.compile(pattern, options)

        self.verbs = compile_(_words(P.OVERRIDE_VERBS))
        self.strong_nouns = compile_(_words(P.STRONG_NOUNS))
        self.weak_nouns = compile_(_words(P.WEAK_NOUNS))
        self.strong_marks = compile_(_words(P.STRONG_MARKS))
        self.marks = compile_(_words(P.STRONG_MARKS + P.WEAK_MARKS))
        # One program per rule: RE2's DFA for all of them at once outgrows its memory and falls back to the NFA.
        self.phrases = {group: compile_(_any(patterns)) for group, (_, patterns) in PHRASES.items()}
        self.exfil_verbs = compile_(P.EXFIL_VERBS)
        self.send_verbs = compile_(P.SEND_VERBS)
        self.sensitive = compile_(f"(?i)(?:{P.SENSITIVE})")
        self.secret_words = compile_(f"(?i)(?:{P.SECRET_WORDS})")
        self.destination = compile_(f"(?i)(?:{P.DESTINATION})")
        self.addressed = compile_(P.ADDRESSED_TO_MODEL)
        self.markdown_comment = compile_(P.MARKDOWN_COMMENT)
        self.base64 = compile_(P.BASE64)
        self.negation = compile_(P.NEGATION)


_PROGRAMS: list[Programs] = []


def programs() -> Programs:
    if not _PROGRAMS:
        _PROGRAMS.append(Programs())
    return _PROGRAMS[0]


def finditer(program: Any, text: str) -> Iterator[tuple[int, int]]:
    """Spans of ``program``'s matches, found a few lines at a time.

    The binding copies the whole subject into RE2 for every match it returns, so one call over a
    text with thousands of hits is quadratic; pieces of at most ``CHUNK`` characters, cut after a
    newline where there is one, keep it linear. A match does not cross a cut: the patterns that may
    span lines (comments, transcript turns) lose at most the one that a cut splits.
    """
    for start, end in _chunks(text):
        for match in program.finditer(text[start:end] if end - start < len(text) else text):
            yield match.start() + start, match.end() + start


def _chunks(text: str) -> Iterator[tuple[int, int]]:
    """``text`` cut into pieces of at most ``CHUNK`` characters, after a newline where one is near."""
    start = 0
    while True:
        end = min(len(text), start + CHUNK)
        if end < len(text):
            cut = text.rfind("\n", start + CHUNK // 2, end)
            end = cut + 1 if cut != -1 else end
        yield start, end
        if end >= len(text):
            return
        start = end
