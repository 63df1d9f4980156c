"""Text planted in a memory to steer the model: overrides, forged roles, hidden or exfiltrating directives.

Memories are notes for coding agents, so imperative sentences are their normal content ("always run
the tests", "ignore vendor/"); what this module looks for is text aimed at the model's instructions
or identity, or hidden from the human who reads the file. Each mechanism is a small function that
yields the offsets where its rule fires:

- ``override``: a verb of disregarding, a word for instructions and a marker of "previous / all /
  your" in one sentence, close together, from lexicons of about 30 languages (word order does not matter);
  and a few English phrasings without an instruction word ("ignore the above");
- ``role``: chat-template tokens, forged speaker labels, identity swaps ("you are now", "pretend to
  be"), jailbreak personas and modes;
- ``prompt-leak``: asking the model to reveal its own instructions;
- ``safeguards``: text releasing the model from its rules or switching safety checks off;
- ``exfiltrate``: a verb of sending, a secret or private data and an outside address in one sentence;
  a link whose URL has a slot for data; fetched code to run without telling;
- ``hidden-directive``: telling the model to keep something from the user; comments (HTML or
  Markdown) that carry a directive for the model;
- ``invisible``: tag characters, bidi controls and zero-width characters that hide text;
- ``encoded``: base64 that decodes to text flagged above, or a directive to decode and obey.

The text mechanisms read a *view* of the text: format characters dropped, styled letters (full-width,
mathematical) folded, Cyrillic/Greek lookalikes inside Latin words read as Latin, with a map back to
the original offsets. Every pattern is RE2 (linear time) and compiled on first use; each mechanism
runs each pattern once over the text and then looks only at a bounded window around each hit, so the
work grows linearly with the input.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator

from ..frozen import FrozenValue
from . import instruction_patterns as P
from .instruction_programs import PHRASES, Programs, finditer, programs
from .instruction_view import View

MAX_FINDINGS = 50  # past this many the verdict is clear
WINDOW = 64  # characters around an instruction word within which its verb and marker must stand
MIN_HIDDEN = 8  # characters a comment or decoded blob must hold to be read as text (a directive needs words)
COMMON_WORDS = frozenset({"marks", "strong_marks"})  # programs searched for in windows only (see ``_Scan.near``)

DESCRIPTIONS = {
    "instructions.override": "text telling the model to disregard its instructions or to take new ones",
    "instructions.role": "a forged system/assistant role or an attempt to change the model's identity",
    "instructions.prompt-leak": "text asking the model to reveal its own instructions or system prompt",
    "instructions.safeguards": "text releasing the model from its rules or switching safety checks off",
    "instructions.exfiltrate": "a directive to send secrets or private data out, or to run fetched code unseen",
    "instructions.hidden-directive": "a directive for the model hidden from the human reader",
    "instructions.invisible": "invisible characters (tags, bidi controls, zero-width) that can hide text",
    "instructions.encoded": "encoded text (base64, escapes) that decodes to instructions, or an order to decode one",
}


class InstructionFinding(FrozenValue):
    """Where instruction-like text starts: 1-based line and column (characters) and the rule (immutable)."""

    __slots__ = ("line", "column", "rule", "description")
    line: int
    column: int
    rule: str
    description: str

    def __init__(self, line: int, column: int, rule: str, description: str) -> None:
        self._set(line=line, column=column, rule=rule, description=description)


# -- compiled programs ---------------------------------------------------------------------------

# -- where words stand ---------------------------------------------------------------------------

def _whole_word(text: str, start: int, end: int) -> bool:
    """A hit in a script written with spaces must not be part of a longer word."""
    first, last = text[start], text[end - 1]
    if not (first.isascii() or "\u00c0" <= first <= "\u06ff" or "\u0900" <= first <= "\u09ff"):
        return True  # CJK, Thai, Hangul: words are not separated by spaces
    if start and first.isalnum() and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return False
    return end >= len(text) or not last.isalnum() or not (text[end].isalnum() or text[end] == "_")


def _one_sentence(text: str, start: int, end: int) -> bool:
    span = text[start:end]
    return "\n" not in span and ". " not in span and "。" not in span and "? " not in span and "! " not in span


class _Scan:
    """One text under scan: its view, the hits of each lexicon (found once) and the lines already flagged."""

    def __init__(self, text: str, programs: Programs) -> None:
        self.view = View(text)
        self.text = self.view.text
        self.p = programs
        self._hits: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
        self._newlines: list[int] | None = None
        self._flagged: set[tuple[str, int]] = set()

    def _line(self, index: int) -> int:
        if self._newlines is None:
            table, find = [], self.text.find
            at = find("\n")
            while at != -1:
                table.append(at)
                at = find("\n", at + 1)
            self._newlines = table
        return bisect_left(self._newlines, index)

    def fresh(self, rule: str, index: int) -> bool:
        """False when ``rule`` already fired on this line: a finding is reported once per rule and line."""
        return (rule, self._line(index)) not in self._flagged

    def flag(self, rule: str, index: int) -> int:
        self._flagged.add((rule, self._line(index)))
        return index

    def words(self, name: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Whole-word matches of the named program, as sorted starts and spans."""
        if name not in self._hits:
            spans = [(s, e) for s, e in finditer(getattr(self.p, name), self.text) if _whole_word(self.text, s, e)]
            self._hits[name] = ([s for s, _ in spans], spans)
        return self._hits[name]

    def near(self, name: str, start: int, end: int, before: int = WINDOW, after: int = WINDOW) -> int | None:
        """Where a word of the named program stands near ``[start, end)`` (not on it), in the same sentence.

        Rare words are found once over the whole text and looked up; common ones ("all", "your") are
        searched for in the window only, since over the text each occurrence would cost a match.
        """
        lo, hi = max(0, start - before), min(len(self.text), end + after)
        if name in COMMON_WORDS:
            spans: Iterable[tuple[int, int]] = (
                (m.start() + lo, m.end() + lo) for m in getattr(self.p, name).finditer(self.text[lo:hi]))
        else:
            starts, all_spans = self.words(name)
            spans = all_spans[bisect_left(starts, lo):bisect_right(starts, hi)]
        for s, e in spans:
            if (s >= end or e <= start) and e <= hi and _whole_word(self.text, s, e) \
                    and _one_sentence(self.text, min(s, start), max(e, end)):
                return int(s)
        return None

    def negated(self, index: int) -> bool:
        """An English "never / do not / must not" just before ``index``: a note warning against the act."""
        return self.p.negation.search(self.text[max(0, index - 24):index]) is not None  # RE2's $ ignores endpos


# -- mechanisms over the view --------------------------------------------------------------------

Hit = tuple[int, str]


def _phrases(scan: _Scan) -> Iterator[Hit]:
    """The fixed phrasings of every rule."""
    for group, program in scan.p.phrases.items():
        rule = PHRASES[group][0]
        for start, end in finditer(program, scan.text):
            while start < end - 1 and scan.text[start] == "\n":
                start += 1  # a pattern anchored at a line start begins with the newline before it
            if scan.fresh(rule, start):
                yield scan.flag(rule, start), rule


def _override(scan: _Scan) -> Iterator[Hit]:
    """A verb of disregarding and a "previous / all / your" marker close to a word for instructions."""
    rule = "instructions.override"
    for nouns, marks in (("strong_nouns", "marks"), ("weak_nouns", "strong_marks")):
        for s, e in scan.words(nouns)[1]:
            verb = scan.near("verbs", s, e) if scan.fresh(rule, s) else None  # verbs are the rarer words
            if verb is not None and not scan.negated(verb) and scan.near(marks, s, e) is not None:
                yield scan.flag(rule, min(s, verb)), rule


def _exfiltrate(scan: _Scan) -> Iterator[Hit]:
    """A verb of sending, then a secret and an outside address in the same sentence."""
    rule = "instructions.exfiltrate"
    for verbs, secrets in (("exfil_verbs", "sensitive"), ("send_verbs", "secret_words")):
        for s, e in scan.words(verbs)[1]:
            if scan.fresh(rule, s) and scan.near(secrets, s, e, 0, 2 * WINDOW) is not None \
                    and scan.near("destination", s, e, 0, 3 * WINDOW) is not None and not scan.negated(s):
                yield scan.flag(rule, s), rule


TEXT_MECHANISMS: tuple[Callable[[_Scan], Iterator[Hit]], ...] = (_phrases, _override, _exfiltrate)


def _text_hits(text: str, programs: Programs) -> list[Hit]:
    scan = _Scan(text, programs)
    return [(scan.view.offset(at), rule) for mechanism in TEXT_MECHANISMS for at, rule in mechanism(scan)]


# -- mechanisms over the raw text ----------------------------------------------------------------

def _comment_spans(text: str, p: Programs) -> Iterator[tuple[int, int]]:
    """HTML comments (an unclosed one hides the rest of the file) and Markdown link-reference comments."""
    at = text.find("<!--")
    while at != -1:
        end = text.find("-->", at + 4)
        stop = len(text) if end == -1 else end + 3
        yield at, stop
        at = text.find("<!--", stop)
    if "]: #" in text:
        yield from finditer(p.markdown_comment, text)


def _comments(text: str, p: Programs) -> Iterator[tuple[int, str]]:
    """Comments a Markdown reader never sees, holding a directive for the model.

    Comments do not overlap, so reading each one again costs no more than reading the text once more.
    """
    for start, end in _comment_spans(text, p):
        body = text[start:end]
        if len(body.strip("<!->[]:#/ \n()'\"")) >= MIN_HIDDEN and (p.addressed.search(body) or _text_hits(body, p)):
            yield start, "instructions.hidden-directive"


def _invisible(text: str, p: Programs) -> Iterator[tuple[int, str]]:
    """Characters that hide text: Unicode tags (outside flag emoji), bidi controls, zero-width marks."""
    if text.isascii():
        return
    import re

    next_line = 0  # one finding per line is all a reader needs
    for match in re.finditer(P.HIDING, text):
        index = match.start()
        if index < next_line:
            continue
        ch, previous = text[index], text[index - 1] if index else ""
        code = ord(ch)
        if 0xE0000 <= code <= 0xE007F:
            # a subdivision flag is U+1F3F4 followed by tags; any other run of tags spells hidden ASCII
            hidden = previous != "\U0001f3f4" and not 0xE0000 <= ord(previous or " ") <= 0xE007F
        elif ch in P.JOINERS or 0xFE00 <= code <= 0xFE0F:
            # emoji and joining scripts take joiners and variation selectors; a Latin letter does not
            hidden = previous.isascii() and previous.isalpha()
        else:
            hidden = ch != "\ufeff" or index > 0
        if hidden:
            yield index, "instructions.invisible"
            next_line = text.find("\n", index) % (len(text) + 1)


def _encoded(text: str, p: Programs) -> Iterator[tuple[int, str]]:
    """Base64 blobs that decode to text the other mechanisms flag."""
    import base64
    import binascii

    for start, end in finditer(p.base64, text):  # blobs do not overlap: decoding all of them stays linear
        blob = text[start:end]
        url_safe = "-" in blob or "_" in blob
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), altchars=b"-_" if url_safe else None)
            decoded = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if len(decoded) >= MIN_HIDDEN and decoded.replace("\n", " ").replace("\t", " ").isprintable() \
                and _text_hits(decoded, p):
            yield start, "instructions.encoded"
    yield from _escaped(text, p)


def _escaped(text: str, p: Programs) -> Iterator[tuple[int, str]]:
    """Lines written in percent-escapes or HTML entities that, unescaped, read as instructions."""
    if "%" not in text and "&" not in text:
        return
    import html
    import re
    from urllib.parse import unquote

    escape = re.compile(r"%[0-9A-Fa-f]{2}|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,8});")
    start = 0
    for line in text.split("\n"):
        if escape.search(line):
            plain = html.unescape(unquote(line))
            if _text_hits(plain, p) and not _text_hits(line, p):
                yield start, "instructions.encoded"
        start += len(line) + 1


RAW_MECHANISMS: tuple[Callable[[str, Programs], Iterator[tuple[int, str]]], ...] = (_comments, _invisible, _encoded)


def instruction_findings(text: str) -> list[InstructionFinding]:
    """Where ``text`` carries instruction-like or hidden text aimed at the model; [] when none.

    At most one finding per rule and line, ``MAX_FINDINGS`` in all, sorted by line and column. Never
    raises on a ``str``; the findings never hold the text itself.
    """
    if not text:
        return []
    p = programs()
    hits = _text_hits(text, p)
    for mechanism in RAW_MECHANISMS:
        hits.extend(mechanism(text, p))
    if not hits:
        return []
    newlines: list[int] = []
    at = text.find("\n")
    while at != -1:
        newlines.append(at)
        at = text.find("\n", at + 1)
    seen: set[tuple[int, str]] = set()
    findings: list[InstructionFinding] = []
    for offset, rule in sorted(set(hits)):
        line = bisect_right(newlines, offset - 1)
        if (line, rule) not in seen:
            seen.add((line, rule))
            column = offset - (newlines[line - 1] + 1 if line else 0) + 1
            findings.append(InstructionFinding(line + 1, column, rule, DESCRIPTIONS[rule]))
    findings.sort(key=lambda f: (f.line, f.column, f.rule))
    return findings[:MAX_FINDINGS]
