"""Text normalisation shared by the planner stages: fact lines, tokens, values and masks."""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import compress

from ..store.memory import TYPES, Memory
from ..store.search import ASCII_WORDS
from .lazyre import Lazy

_MARKER = re.compile(r"^\s*(?:[-*+]\s+\[[ xX]\]\s+|[-*+]\s+|\d+[.)]\s+|>\s*)+")
# _MARKER after every line break of a text: ``\s`` without the line break is what ``\s`` matches
# within one line, so no match runs into the next line. The leading "\n" (not a multi-line "^") lets
# the search jump from line break to line break instead of trying every offset.
_BODY_MARKERS = re.compile("\n" + _MARKER.pattern.removeprefix("^").replace("\\s", "[^\\S\n]"))
_PUNCT = Lazy(r"[^\w\s]|_")
_WORD = Lazy(r"[a-z0-9]+")
_LINK = Lazy(r"\[\[[^\]\n]*\]\]")
# Values are what two statements of the same subject can disagree on: commands in
# backticks, URLs, paths, versions and numbers (ports, sizes, dates). One alternation, in this order.
_EXTENSIONS = "py|sh|js|ts|tsx|jsx|go|rs|rb|java|toml|ya?ml|json|cfg|ini|lock|txt|sql|env|conf"
_VALUE_PARTS = (
    r"`[^`\n]+`",
    r"[a-z][a-z0-9+.-]*://\S+",
    r"[\w.~-]*/[\w./-]+",
    r"[\w-]+\.(?:" + _EXTENSIONS + r")\b",
    # Letters, the first digit, then alphanumerics and separated runs: each character has one place
    # to go, so a failed match backtracks linearly (``\d+(?:[.:_-]?[a-z0-9]+)*``, the same language,
    # backtracked exponentially on a long word that ends in "_").
    r"\b[a-z]*\d[a-z0-9]*(?:[.:_-][a-z0-9]+)*\b",
)
_VALUE_EXT = re.compile(r"\.(?:" + _EXTENSIONS + r")\b")
_DIGIT = Lazy(r"\d")
_NOT_DIGIT_BYTES = bytes(b for b in range(256) if b not in b"0123456789")
_VALUE_BY_PARTS: dict[tuple[bool, ...], re.Pattern[str]] = {}
# _PUNCT as a byte table for ASCII text (nearly every line): the same spaces, several times faster.
_PUNCT_BYTES = bytes(b if chr(b).isalnum() or chr(b).isspace() else 32 for b in range(128)) + bytes(range(128, 256))
# Lowering, _PUNCT_BYTES and the whitespace ``split`` sees in one table for ASCII lines: letters
# lowered, digits kept, "\n" kept, everything else a space (runs of spaces are then made one).
_FOLD_LINES = bytes(ord(chr(b).lower()) if chr(b).isalnum() else b if b == 10 else 32 for b in range(128)) \
    + bytes(range(128, 256))
VALUE_MARK = "zvalz"
STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from into onto via as is are was were be
    been being it its this that these those there here we you i our your my me us they them he she his her
    do does did done not no never always should must can could would will shall may might just also only
    very so than too use uses used using when where which who what how all any each
    every some such via per about after before over under up down out off again more most other same own
    please note remember dont don t s""".split()
)
# Words are _WORD runs of the casefolded text; one letter or digit alone is no token.
_NOT_TOKENS = STOPWORDS | frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def fact_key(line: str) -> str:
    """Compare lines after normalising list markers, case, punctuation and whitespace."""
    return _spaced(_unmarked(line).casefold())


def _unmarked(line: str) -> str:
    """The line without its list or quote markers (_MARKER is anchored: it matches once, at the start)."""
    # A marker starts with a bullet, ">", a digit (\d: isdecimal) or a space (\s: isspace).
    first = line[:1]
    if first not in "-*+>" and not first.isspace() and not first.isdecimal():
        return line
    match = _MARKER.match(line)
    return line[match.end():] if match else line


def _spaced(text: str) -> str:
    """``text`` with punctuation and ``_`` turned into spaces and runs of whitespace into one space."""
    if text.isascii():
        return " ".join(text.encode("ascii").translate(_PUNCT_BYTES).decode("ascii").split())
    return " ".join(_PUNCT().sub(" ", text).split())


def _value_pattern(text: str) -> re.Pattern[str] | None:
    """The value alternation without the parts that cannot match ``text``; None when none can.

    Each part needs a literal (a backtick, "://", "/", an extension, a digit): without it, the part
    fails at every offset, so leaving it out changes no match and spares trying it at each offset
    (the whole alternation costs ~40 µs a line).
    """
    if text.isascii():
        digit = bool(text.encode("ascii").translate(None, _NOT_DIGIT_BYTES))
    else:
        digit = _DIGIT().search(text) is not None
    # An extension follows a dot: a line without one skips the search.
    parts = ("`" in text, "://" in text, "/" in text, "." in text and _VALUE_EXT.search(text) is not None, digit)
    if not any(parts):
        return None
    pattern = _VALUE_BY_PARTS.get(parts)
    if pattern is None:
        pattern = re.compile("|".join(part for part, on in zip(_VALUE_PARTS, parts, strict=False) if on))
        _VALUE_BY_PARTS[parts] = pattern
    return pattern


@lru_cache(maxsize=1 << 20)
def body_facts(body: str) -> tuple[tuple[str, str], ...]:
    """(raw line, key) for every body line that carries text, in order."""
    out: list[tuple[str, str]] = []
    lines = body.split("\n")
    if not body.isascii():
        for raw in lines:
            key = fact_key(raw)
            if key:
                out.append((raw.rstrip(), key))
        return tuple(out)
    # ``fact_key`` of every line at once: ASCII case folding is lowering, and _FOLD_LINES maps "\n"
    # to itself and nothing else to it, so the folded body splits into the folded lines. Markers go
    # in one pass too (_BODY_MARKERS is _MARKER after each line break), and the keys and the lines
    # that have one are taken without a Python step per line.
    unmarked = _BODY_MARKERS.sub("\n", "\n" + body)[1:]
    folded = unmarked.encode("ascii").translate(_FOLD_LINES).decode("ascii")
    while "  " in folded:
        folded = folded.replace("  ", " ")
    keys = list(map(str.strip, folded.split("\n")))
    return tuple(compress(zip(map(str.rstrip, lines), keys, strict=True), keys))


def fact_lines(memory: Memory) -> tuple[tuple[str, str], ...]:
    """A memory's facts: its body lines, or its description when the body says nothing."""
    facts = body_facts(memory.body)
    if facts:
        return facts
    key = fact_key(memory.description)
    return ((memory.description, key),) if key else ()


def fact_keys(memory: Memory) -> frozenset[str]:
    return _fact_keys(memory.body, memory.description)


@lru_cache(maxsize=1 << 20)
def _fact_keys(body: str, description: str) -> frozenset[str]:
    facts = body_facts(body)
    return frozenset(key for _, key in facts) if facts else frozenset({fact_key(description)} - {""})


def known_keys(memory: Memory) -> frozenset[str]:
    """Every key a memory states, its description included."""
    return _known_keys(memory.body, memory.description)


@lru_cache(maxsize=1 << 20)
def _known_keys(body: str, description: str) -> frozenset[str]:
    return _fact_keys(body, description) | {fact_key(description)}


# Everyday synonyms notes are paraphrased with; mapping them keeps a reworded note close to its original.
_SYNONYMS = {
    "reply": "answer", "replies": "answer", "response": "answer", "responses": "answer", "answers": "answer",
    "terse": "short", "brief": "short", "concise": "short", "shorter": "short",
    "db": "database", "repo": "repository", "config": "configuration", "docs": "documentation",
    "prod": "production", "dev": "development", "env": "environment", "deps": "dependencies",
}


def _stem(word: str) -> str:
    word = _SYNONYMS.get(word, word)
    # A crude suffix strip is enough to make "pushing"/"push" and "tests"/"test" meet.
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


class _Stems(dict[str, str]):
    """Each word's stem, worked out the first time it is asked for.

    ``tokens`` maps a text's words through ``__getitem__``: a dict lookup a word, in C, where an
    ``lru_cache`` call costs half as much again.
    """

    __slots__ = ()

    def __missing__(self, word: str) -> str:
        stem = self[word] = _stem(word)
        return stem


_STEMS = _Stems()


@lru_cache(maxsize=1 << 20)
def tokens(text: str) -> frozenset[str]:
    if text.isascii() and "[[" not in text:
        words = set(text.encode("ascii").translate(ASCII_WORDS).decode("ascii").split())
    else:
        folded = text.casefold()
        if "[[" in folded:
            folded = _LINK().sub(" ", folded)
        words = set(_WORD().findall(folded))
    # Each distinct word is stemmed once.
    words -= _NOT_TOKENS
    return frozenset(map(_STEMS.__getitem__, words))


@lru_cache(maxsize=1 << 20)
def name_stem(name: str) -> str:
    """The file name without extension and type prefix: ``project_api-port.md`` → ``api-port``."""
    stem = name[:-3] if name.lower().endswith(".md") else name
    for kind in TYPES:
        for sep in ("_", "-"):
            if stem.lower().startswith(kind + sep):
                return stem[len(kind) + 1 :]
    return stem


_VERSIONISH = re.compile(r"^(?:v?\d+|old|new|copy|bak|backup|updated|latest|final|draft|\d{4}|\d{2})$")


@lru_cache(maxsize=1 << 20)
def subject_stem(name: str) -> str:
    """The name stem without trailing version-like parts, so ``api-port-v2`` meets ``api-port``."""
    parts = [p for p in re.split(r"[-_]+", name_stem(name).lower()) if p]
    while len(parts) > 1 and _VERSIONISH.match(parts[-1]):
        parts.pop()
    return "-".join(parts)


@lru_cache(maxsize=1 << 20)
def title_words(title: str) -> str:
    """A title's fact key with single spaces: what two memories with one title share."""
    return " ".join(fact_key(title).split())


def memory_tokens(name: str, memory: Memory) -> frozenset[str]:
    return _memory_tokens(name, memory.description, memory.body)


@lru_cache(maxsize=1 << 20)
def _memory_tokens(name: str, description: str, body: str) -> frozenset[str]:
    # The body's own set is not kept: only this union is asked for again (a body's set is the largest
    # of a memory's; keeping each one held ~60 MB at 20,000 memories).
    return tokens(name_stem(name)) | tokens(description) | tokens.__wrapped__(body)


def subject_tokens(name: str, memory: Memory) -> frozenset[str]:
    """Words both the file name and the description use: what the memory is about."""
    return tokens(name_stem(name)) & tokens(memory.description)


# What a line says about its subject starts at its first predicate: a value before it (``web01``,
# ``app2``, ``Node 18`` in "Node 18 reaches end of life") names the subject, a value after it
# (``8080`` in "web01 uses port 8080") is what can change.
_PREDICATE = re.compile(
    r"[:=]|\b(?:is|are|was|were|uses?|used|requires?|required|needs?|runs?|listens?|lives?|points?|defaults?"
    r"|has|have|should|must|moved|goes|takes|expires?|serves?|binds?|means|equals|stores?|keeps?|sends?"
    r"|reaches|returns?|sits|calls?|deploys?|builds?|pins?|targets?|costs?|holds?|ships?)\b"
)
# A word of letters then digits (web01, app2, db3) names a thing wherever it stands; a bare number,
# a date or a version (v2, 3.11) is a value unless it stands before the predicate.
_NAMED = re.compile(r"^[a-z][a-z-]*[a-z]-?\d+[a-z0-9]*$|^[a-z]\d+[a-z]+[a-z0-9]*$")
_VERSION = re.compile(r"^v\d")
ENVIRONMENTS = frozenset({"staging", "production", "prod", "dev", "development", "qa", "test", "testing",
                          "sandbox", "preview", "canary", "local", "uat", "demo", "integration"})


def _identifying(value: str, start: int, subject_end: int) -> bool:
    if start < subject_end:
        return True
    return bool(_NAMED.match(value)) and not _VERSION.match(value)


@lru_cache(maxsize=1 << 20)
def masked(line: str) -> tuple[str, tuple[str, ...]]:
    """(the line's key with every value replaced by one marker, the values in order).

    Identifying values (see ``_identifying``) stay in the key: "web01 uses port 8080" and
    "web02 uses port 9090" are two subjects, not one subject with two values.
    """
    text = _unmarked(line).casefold()
    pattern = _value_pattern(text)
    if pattern is None:
        return _spaced(text), ()  # no value can match: where the predicate stands changes nothing
    values: list[str] = []
    predicate = _PREDICATE.search(text)
    subject_end = predicate.start() if predicate is not None else 0

    def keep(match: re.Match[str]) -> str:
        value = match.group(0).strip("`").strip().rstrip(".,;:")
        if _identifying(value, match.start(), subject_end):
            return match.group(0)
        values.append(value)
        return f" {VALUE_MARK} "

    return _spaced(pattern.sub(keep, text)), tuple(values)


@lru_cache(maxsize=1 << 20)
def identifiers(text: str) -> frozenset[str]:
    """The tokens of ``text`` that name what it is about: named values, environments, subject values."""
    out: set[str] = set()
    for raw in text.split("\n"):
        key, _ = masked(raw)
        out.update(word for word in key.split() if word != VALUE_MARK and (word in ENVIRONMENTS or _has_digit(word)))
    return frozenset(out)


def _has_digit(word: str) -> bool:
    """Whether a word of a key holds a digit (``str.isdigit``). A key's ASCII words are runs of
    lower-case letters and digits only (``_spaced`` left nothing else), so there it is "not all
    letters", answered in C instead of a generator over every character."""
    if word.isascii():
        return not word.isalpha()
    return any(ch.isdigit() for ch in word)


def memory_identifiers(memory: Memory) -> frozenset[str]:
    """What a memory's title and description name: host, app, environment, versions in subject position.

    The body holds the details (several hosts may appear in one note); the subject is what the
    title and the one-line description say the memory is about.
    """
    return identifiers(memory.name) | identifiers(memory.description)


def distinct_subjects(a: Memory, b: Memory) -> bool:
    """Each names something the other does not: two facts about two things, never one to merge."""
    ia, ib = memory_identifiers(a), memory_identifiers(b)
    return bool(ia - ib) and bool(ib - ia)


def value_lines(memory: Memory) -> dict[str, frozenset[tuple[str, ...]]]:
    """Masked key → the value tuples it is stated with, for lines (and description) with values."""
    return _value_lines(memory.description, memory.body)


@lru_cache(maxsize=1 << 20)
def _value_lines(description: str, body: str) -> dict[str, frozenset[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {}
    for raw in [description, *(r for r, _ in body_facts(body))]:
        key, values = masked(raw)
        if values and key.replace(VALUE_MARK, "").strip():
            out.setdefault(key, set()).add(values)
    return {k: frozenset(v) for k, v in out.items()}


def newness(memory: Memory, name: str) -> tuple[str, str, str]:
    """Sort key: later ``modified``, then later ``created``, then the name."""
    return (memory.modified or memory.created or "", memory.created or "", name)


def short_list(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def clear_caches() -> None:
    """Drop memoised results so one plan's inputs do not hold memory (or speed) into the next."""
    for cached in (body_facts, _fact_keys, _known_keys, tokens, name_stem, subject_stem, _memory_tokens, masked,
                   _value_lines, identifiers, title_words):
        cached.cache_clear()
    _STEMS.clear()
