"""Other readings of a text that the credential rules also scan: what a reader would see in it.

A token can reach the mirror in a form the rules do not match as written: in full-width letters
(NFKC folds them to ASCII), hex-, percent- or base64-encoded, or cut into pieces across a memory's
name, description and body lines. Each reading here is a text built from pieces of the original,
with a map from its offsets back to the original's, so a finding in it points at (and a mask
covers) the original characters. Only the specific credential rules read them (see
``RuleSet._view_hits``): vendor formats and checksums, whose false alarms stay rare on any text.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ..frozen import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Runs worth decoding, found in one pass: base64 (standard or URL-safe), hex (plain or ``\\x``-escaped)
# and percent-encoded text all stay inside this class. 20 characters carry a 15-byte token at least.
_RUN = re.compile(r"[A-Za-z0-9+/_%\\-]{20,}={0,2}")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_FRONT_KEY = re.compile(r"\s*(name|description)\s*:\s*")
# A body line: its indent and list, quote or heading mark, then its value (``[^\S\n]``: a blank within the line).
_BODY_LINE = re.compile(r"^[^\S\n]*(?:[-*+>][^\S\n]+|#+[^\S\n]+|[0-9]{1,3}[.)][^\S\n]+)?(.*)$", re.MULTILINE)
MAX_DECODED = 1 << 16  # a decoded run longer than this is data, not a token written down


class View(Frozen):
    """A reading of a text: ``text`` and, per piece, where it starts in ``text`` and which original
    character span it stands for. An ``opaque`` piece (decoded bytes) maps any offset to its whole span."""

    __slots__ = ("how", "text", "starts", "spans", "opaque")
    how: str
    text: str
    starts: list[int]
    spans: list[tuple[int, int]]
    opaque: bool

    def __init__(self, how: str, pieces: list[tuple[str, int, int]], opaque: bool = False,
                 glue: str = "") -> None:
        starts: list[int] = []
        spans: list[tuple[int, int]] = []
        parts: list[str] = []
        at = 0
        for text, start, end in pieces:
            starts.append(at)
            spans.append((start, end))
            parts.append(text)
            at += len(text) + len(glue)
        self._set(how=how, text=glue.join(parts), starts=starts, spans=spans, opaque=opaque)

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The original character span that ``text[start:end]`` came from."""
        first = max(bisect_right(self.starts, start) - 1, 0)
        last = max(bisect_right(self.starts, max(end - 1, start)) - 1, 0)
        a, b = self.spans[first], self.spans[last]
        if self.opaque:
            return a[0], b[1]
        return (min(a[0] + start - self.starts[first], a[1]),
                max(min(b[0] + end - self.starts[last], b[1]), a[0]))


def views(text: str, data: bytes | None = None) -> list[View]:
    """Every reading of ``text`` (whose UTF-8 bytes are ``data``, when the caller has them) that differs
    from it."""
    out = []
    folded = nfkc(text, data)
    if folded is not None:
        out.append(folded)
    decoded = decoded_runs(text)
    if decoded is not None:
        out.append(decoded)
    joined = joined_lines(text, data)
    if joined is not None:
        out.append(joined)
    return out


# Characters whose NFKC form holds an ASCII letter or digit: full-width forms, ligatures, superscripts
# and subscripts, letterlike and number forms, enclosed and mathematical alphanumerics, modifier
# letters. A token written in them reads as ASCII once folded; a line without one (CJK prose with
# full-width punctuation) folds to nothing a credential rule could match, so it is not folded.
_COMPATIBLE = re.compile("[\u00aa\u00b2\u00b3\u00b9\u00ba\u00bc-\u00be\u02b0-\u02b8\u1d2c-\u1d6a\u2070-\u209c"
                         "\u2100-\u218f\u2460-\u24ff\u3250-\u32ff\u3380-\u33ff\ufb00-\ufb06\uff10-\uff19"
                         "\uff21-\uff3a\uff41-\uff5a\U0001d400-\U0001d7ff\U0001f100-\U0001f1ff]")


_COMPATIBLE_PROGRAM: list[Any] = []  # _COMPATIBLE in RE2, over the text's UTF-8 bytes


def nfkc(text: str, data: bytes | None = None) -> View | None:
    """The NFKC form of each line that has another with ASCII letters or digits in it (full-width
    letters, ligatures, compatibility digits)."""
    if text.isascii():
        return None
    if not _COMPATIBLE_PROGRAM:
        from .patterns import LazyPattern

        # RE2 reads the class from the bytes at a quarter of the standard engine's cost on a note.
        _COMPATIBLE_PROGRAM.append(LazyPattern(_COMPATIBLE.pattern, "compatibility-characters reading"))
    if not _COMPATIBLE_PROGRAM[0].found(data if data is not None else text.encode("utf-8", "replace")):
        return None
    import unicodedata

    pieces = []
    at = 0
    for line in text.split("\n"):
        if not line.isascii() and _COMPATIBLE.search(line) is not None:
            pieces.append((unicodedata.normalize("NFKC", line), at, at + len(line)))
        at += len(line) + 1
    return View("NFKC-folded", pieces, glue="\n") if pieces else None


def _printable(data: bytes) -> str | None:
    """``data`` as text when it reads as text: UTF-8, no control characters but tab and line ends."""
    if not data or len(data) > MAX_DECODED:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.isprintable() and any(not ch.isprintable() and ch not in "\t\r\n" for ch in text):
        return None
    return text if any(ch.isalnum() for ch in text) else None


def _unhex(run: str) -> str | None:
    digits = run.replace("\\x", "")
    try:
        return _printable(bytes.fromhex(digits))
    except ValueError:
        return None


def _unbase64(run: str) -> str | None:
    import base64
    import binascii

    body = run.rstrip("=")
    if len(body) % 4 == 1:
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            data = base64.urlsafe_b64decode(padded)
        else:
            data = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(data)


def _unpercent(run: str) -> str | None:
    from urllib.parse import unquote

    decoded = unquote(run, errors="strict") if "%" in run else run
    return decoded if decoded != run else None


_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# Base64 of text mixes capitals, small letters and digits within a few characters; an identifier or a
# path of words (privacy_corpus_build, src/pipeline/views) does not, and is not decoded.
_MIXED = re.compile(r"[A-Z][^A-Z]{0,12}[0-9]|[0-9][^0-9]{0,12}[A-Z]")
MIN_HEX_RUN = 32  # a 16-byte token, hex-encoded


def _decode(run: str) -> str | None:
    """The text an encoded run stands for; None for a run that is not worth decoding (the cheap tests
    come first: most runs in notes are identifiers, paths and digests)."""
    if "%" in run:
        return _unpercent(run) if _PERCENT.search(run) else None
    if "\\" in run:
        return _unhex(run) if run.startswith("\\x") else None
    if _HEX_DIGITS.issuperset(run):
        return _unhex(run) if len(run) % 2 == 0 and len(run) >= MIN_HEX_RUN else None
    if len(run) < 24 or _MIXED.search(run) is None or not any(ch.islower() for ch in run):
        return None
    return _unbase64(run)


def decoded_runs(text: str) -> View | None:
    """Hex, base64 and percent-encoded runs that decode to text, each as one opaque piece."""
    pieces: list[tuple[str, int, int]] = []
    for start, end in _run_spans(text):
        try:
            decoded = _decode(text[start:end])
        except (UnicodeDecodeError, ValueError):
            decoded = None
        if decoded is not None:
            pieces.append((decoded, start, end))
    return View("decoded", pieces, opaque=True, glue="\n") if pieces else None


_RUN_PROGRAM: list[Any] = []  # _RUN's match call in RE2


def _run_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``_RUN`` in ``text``, found by RE2 (the standard engine tried the class at every
    position: a third of this reading). It reads the text with each non-ASCII character as one "?",
    so its byte offsets are the text's character offsets; the class holds neither."""
    if not _RUN_PROGRAM:
        from .patterns import compile_pattern, span_finder

        _RUN_PROGRAM.append(span_finder(compile_pattern(_RUN.pattern, "encoded-runs reading")))
    find = _RUN_PROGRAM[0]
    data = text.encode("ascii", "replace")
    out: list[tuple[int, int]] = []
    pos, size = 0, len(data)
    while True:  # a run is never empty, so each search starts where the last run ended
        span = find(data, pos, size)[0]
        if span[0] < 0:
            return out
        out.append(span)
        pos = span[1]


def _values(text: str) -> list[tuple[str, int, int, int]]:
    """The name, the description and the body lines of a memory (every line of any other text), each
    stripped of its frontmatter key, list mark or quotes: the value, where it starts, and the lengths of
    its first and its last word."""
    pieces: list[tuple[str, int, int, int]] = []
    head = text.split("\n", 1)
    body = 0
    if head[0].strip() == "---":
        body = len(text)  # a frontmatter that never closes holds every line
        at = len(head[0]) + 1
        for line in head[1].split("\n") if len(head) > 1 else ():
            start = at
            at += len(line) + 1
            if line.strip() == "---":
                body = min(at, len(text))
                break
            key = _FRONT_KEY.match(line)
            if key is None:
                continue
            value_start = start + key.end()
            value = text[value_start:start + len(line)].rstrip()
            if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
                inner = value[1:-1]
                value = inner.strip()  # blanks inside the quotes (name: " x") belong to no word either
                value_start += 1 + len(inner) - len(inner.lstrip())
            if value:
                pieces.append((value, value_start, len(value.split(None, 1)[0]), len(value.rsplit(None, 1)[-1])))
    for row in _BODY_LINE.finditer(text, body):  # one search over the body, not one per line
        value = row.group(1).rstrip()
        if value:
            pieces.append((value, row.start(1), len(value.split(None, 1)[0]), len(value.rsplit(None, 1)[-1])))
    return pieces


_DIGIT = re.compile(r"[0-9]")
# A token cut at a line end: a run of token characters holding a digit ends a line and another starts the
# next (after a list mark, a heading mark, a frontmatter key or quotes), or the other way round. A text
# with neither is not read joined: prose lines end in words and punctuation.
_TOKEN_CHARS = "A-Za-z0-9_+/=~.-"
_LEAD = r"[ \t]*(?:[-*+>][ \t]+|#+[ \t]+|[0-9]{1,3}[.)][ \t]+|(?:name|description)[ \t]*:[ \t]*[\"']?)?"
_CUT = (f"[{_TOKEN_CHARS}]*[0-9][{_TOKEN_CHARS}]*[\"']?[ \t]*\n{_LEAD}[{_TOKEN_CHARS}]{{2}}"
        f"|[{_TOKEN_CHARS}]{{2}}[\"']?[ \t]*\n{_LEAD}[{_TOKEN_CHARS}]*[0-9]")
_COMPILED: list[Any] = []  # _CUT in RE2 (linear in the text; the standard engine backtracks on long runs)
_TOKENISH = re.compile(f"[{_TOKEN_CHARS}]+")
MAX_CHAIN = 400
MIN_CHAIN = 20  # the shortest token the specific rules know carries 16 characters after its prefix


def joined_lines(text: str, data: bytes | None = None) -> View | None:
    """Pieces of words cut at line ends, read whole again: from the last word of each value (see
    ``_values``), through the values that are one word, to the first word of the next value.

    A token cut into pieces on several lines (the description's end, a line of the body, the start of
    the next) is one such chain. Prose gives short chains (a line's last word and the next line's
    first), so this reading stays a fraction of the text's size.
    """
    if "\n" not in text.strip():
        return None
    if not _COMPILED:
        from .patterns import LazyPattern

        _COMPILED.append(LazyPattern(_CUT, "joined-lines prefilter"))
    if not _COMPILED[0].found(data if data is not None else text.encode("utf-8", "replace")):
        return None
    values = _values(text)
    pieces: list[tuple[str, int, int]] = []
    count = len(values)
    for index in range(count - 1):
        value, start, _, last = values[index]
        # The chain's length first: most chains are a word of prose and the next line's first, too short
        # for a token, and need no pieces built.
        size, later = last, index + 1
        while later < count:
            following, _, first, _ = values[later]
            size += first
            later += 1
            if first < len(following) or size > MAX_CHAIN:
                break
        if size < MIN_CHAIN:
            continue
        end = start + len(value)
        chain = [(value[-last:], end - last, end)]
        for following, next_start, first, _ in values[index + 1:later]:
            chain.append((following[:first], next_start, next_start + first))
        joined = "".join([word for word, _, _ in chain])
        if _DIGIT.search(joined) is None or _TOKENISH.fullmatch(joined) is None:
            continue  # words of prose, not a machine-made token cut at a line end
        pieces.extend(chain)
        pieces.append(("\n", start, start))  # chains are read apart
    return View("joined across lines", pieces) if pieces else None


_NAME_SEPARATORS = re.compile(r"[_.\-]")
# What a name holding a credential shows: a digit (tokens are letters and digits), or a word that
# introduces one. A name with neither is words, and is answered without reading the rules.
_NAME_HINTS = re.compile(r"[0-9]|(?i:pass|pwd|token|secret|key|auth|bearer|://|@)")


def plain_name(name: str) -> bool:
    return name.isascii() and _NAME_HINTS.search(name) is None


def name_readings(name: str) -> list[str]:
    """A file or memory name, and each tail of it after a separator: ``project_AKIA…`` holds no word
    boundary before the key, so the key's rule reads it only from the tail ``AKIA…``."""
    stem = name[:-3] if name.lower().endswith(".md") else name
    if not stem.isascii():
        import unicodedata

        folded = unicodedata.normalize("NFKC", stem)
        return list(dict.fromkeys([stem, *name_readings(folded)])) if folded != stem else [stem]
    out = [stem]
    for match in _NAME_SEPARATORS.finditer(stem):
        tail = stem[match.end():]
        if len(tail) >= 8:
            out.append(tail)
    return out
