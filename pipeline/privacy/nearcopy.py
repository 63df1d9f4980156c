"""Near-copies: how much of a private memory's distinctive wording a safe memory carries.

Each field of a private memory (name, description, body) is cut into overlapping features after
folding case and collapsing everything but letters and digits to single spaces: a long field into
word shingles (runs of ``SHINGLE_WORDS`` words), a short one into character grams (a short field has
so few shingles that one changed character would leave none), a very short one is kept whole: it is
generic ("use the staging db") and counts only when a safe field equals it. A written safe memory
carries a field when it holds at least ``THRESHOLD`` of the field's features (containment) and at
least ``MIN_CARRIED`` of them; features it shares with the field that the mirror already shows are
left out of both counts, since this write does not publish them. The figures come from the
measurement over ``tests/data/nearcopy/`` that the README reports.
"""

from __future__ import annotations

import re

from ..frozen import FrozenValue

# A direct edit imports this module: no dataclasses (which pulls in inspect) and no typing at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from ..state.model import PreState
    from ..store.memory import Memory

SHINGLE_WORDS = 4
CHAR_GRAM = 10
# A field with this many words or more is compared by word shingles, a shorter one by character grams.
LONG_WORDS = 16
# A normalised field shorter than this counts only as a whole field.
MIN_CHARS = 24
THRESHOLD = 0.5
MIN_CARRIED = 3
# Private fields are screened on every SAMPLE-th feature; the sample may fall SAMPLE_SLACK short.
SAMPLE = 2
SAMPLE_SLACK = 0.2
FIELDS = ("name", "description", "body")
MODES = ("words", "chars", "whole")

_NON_WORD = re.compile(r"[\W_]+")
_SEPARATOR = "\x1e"
# ASCII text (nearly all of it) is folded by a byte table: the pattern costs ~40 ms per 600 KB.
_ASCII = bytes(c + 32 if 65 <= c <= 90 else c if chr(c).isalnum() else 32 for c in range(256))
_ASCII_KEEPING_SEPARATOR = _ASCII[:0x1e] + b"\x1e" + _ASCII[0x1f:]

NEAR_COPY = "privacy.publish-near-copy"
if TYPE_CHECKING:
    Texts = tuple[str, str, str]  # a memory's (name, description, body)


def normalize(text: str) -> str:
    if text.isascii():
        return " ".join(text.encode("ascii").translate(_ASCII).decode("ascii").split())
    return _NON_WORD.sub(" ", text.casefold()).strip()


def _normalize_all(texts: list[str]) -> list[str]:
    """``normalize`` of each text, in one pass of the pattern over all of them (it dominates the cost)."""
    joined = _SEPARATOR.join(texts)
    if not joined.isascii() or joined.count(_SEPARATOR) != max(len(texts) - 1, 0):
        return [normalize(t) for t in texts]  # the separator inside a text would shift every field
    parts = joined.encode("ascii").translate(_ASCII_KEEPING_SEPARATOR).decode("ascii").split(_SEPARATOR)
    return [" ".join(part.split()) for part in parts]


def _shingles(text: str) -> set[str]:
    words = text.split()
    return set(map(" ".join, zip(*(words[i:] for i in range(SHINGLE_WORDS)), strict=False)))


def _grams(text: str) -> set[str]:
    n = CHAR_GRAM
    return set(map(text.__getitem__, map(slice, range(len(text) - n + 1), range(n, len(text) + 1))))


class Carried(FrozenValue):
    """A safe text holds ``share`` of the distinctive features of ``private``'s ``field`` (immutable)."""

    __slots__ = ("private", "field", "share")
    private: str
    field: str
    share: float

    def __init__(self, private: str, field: str, share: float) -> None:
        self._set(private=private, field=field, share=share)


class _Features:
    """The feature sets of one memory's texts in each mode, computed on demand."""

    def __init__(self, texts: Texts) -> None:
        self.normal = [normalize(t) for t in texts]
        self._sets: dict[str, set[str]] = {}

    def of(self, mode: str) -> set[str]:
        found = self._sets.get(mode)
        if found is None:
            if mode == "whole":
                found = {t for t in self.normal[1:] if t}
            else:
                cut = _shingles if mode == "words" else _grams
                found = set().union(*(cut(t) for t in self.normal))
            self._sets[mode] = found
        return found


def carried(private: Iterable[tuple[str, Texts]], written: Mapping[str, Texts],
            public: Iterable[Texts] = ()) -> dict[str, Carried]:
    """For each written safe memory that carries a private field: the field it carries most.

    ``private`` are (file, texts) of the private memories, ``written`` the safe memories being
    written by file, ``public`` the safe memories already published (their wording is not
    distinctive). A private memory is not compared with a written memory of its own file name:
    publishing a memory by name is a different decision, taken elsewhere.
    """
    safe = {name: _Features(texts) for name, texts in written.items()}
    if not safe:
        return {}
    owners: list[str] = []
    texts: list[str] = []
    for owner, fields in private:
        owners.extend((owner,) * len(FIELDS))
        texts.extend(fields)
    holders: dict[str, dict[str, list[str]]] = {mode: {} for mode in MODES}
    for name, target in safe.items():
        for mode in MODES:
            for feature in target.of(mode):
                holders[mode].setdefault(feature, []).append(name)
    candidates = [(owners[i], FIELDS[i % len(FIELDS)], mode, features)
                  for i, mode, features in _candidates(_normalize_all(texts), holders)]
    if not candidates:
        return {}
    shown = _Published([t for texts in public for t in texts])
    best: dict[str, Carried] = {}
    for owner, field, mode, features in candidates:
        counts: dict[str, int] = {}
        already: dict[str, int] = {}
        for feature in features:
            names = holders[mode].get(feature, ())
            for name in names:
                counts[name] = counts.get(name, 0) + 1
            if names and shown.holds(mode, feature):
                for name in names:
                    already[name] = already.get(name, 0) + 1
        for name, count in counts.items():
            # What the written memory shares with the private field but the mirror already shows
            # is not carried out by this write: it leaves both the count and the field's size.
            count, size = count - already.get(name, 0), len(features) - already.get(name, 0)
            if name == owner or not size or count / size < THRESHOLD or count < min(MIN_CARRIED, size):
                continue
            found = best.get(name)
            if found is None or (count / size, found.private) > (found.share, owner):
                best[name] = Carried(owner, field, count / size)
    return best


class _Published:
    """Whether a feature occurs in the published texts: a substring search, built once per call."""

    def __init__(self, texts: list[str]) -> None:
        norms = [t for t in _normalize_all(texts) if t]
        # Words are matched between spaces; the separator keeps a match inside one text.
        self._words = " " + f" {_SEPARATOR} ".join(norms) + " "
        self._chars = _SEPARATOR.join(norms)
        self._whole = set(norms)

    def holds(self, mode: str, feature: str) -> bool:
        if mode == "words":
            return f" {feature} " in self._words
        if mode == "chars":
            return feature in self._chars
        return feature in self._whole


def _candidates(norms: list[str], holders: dict[str, dict[str, list[str]]]
                ) -> Iterator[tuple[int, str, set[str]]]:
    """(position, mode, features) of the fields the written texts may carry.

    Every private field is looked at on every write, so this pass samples: every ``SAMPLE``-th
    feature, looked up in C (map), must be held at ``THRESHOLD - SAMPLE_SLACK``. Only the few
    fields that pass are cut whole and measured exactly.
    """
    words, chars, whole = holders["words"], holders["chars"], holders["whole"]
    floor = THRESHOLD - SAMPLE_SLACK
    for position, norm in enumerate(norms):
        if not norm:
            continue
        if norm.count(" ") + 1 >= LONG_WORDS:
            if words:
                units = norm.split()
                # Item j of the i-th strided slice is word i + SAMPLE*j: zipped, the shingle at SAMPLE*j.
                cut = list(map(" ".join, zip(*(units[i::SAMPLE] for i in range(SHINGLE_WORDS)), strict=False)))
                if sum(map(words.__contains__, cut)) >= max(floor * len(cut), 1):
                    yield position, "words", _shingles(norm)
        elif len(norm) >= MIN_CHARS:
            if chars:
                n = CHAR_GRAM
                cut = list(map(norm.__getitem__, map(slice, range(0, len(norm) - n + 1, SAMPLE),
                                                     range(n, len(norm) + 1, SAMPLE))))
                if sum(map(chars.__contains__, cut)) >= max(floor * len(cut), 1):
                    yield position, "chars", _grams(norm)
        elif position % len(FIELDS) and norm in whole:
            yield position, "whole", {norm}  # a title equal to a private one is no leak


def near_copies(pre: PreState, written: Mapping[str, Memory]) -> dict[str, Carried]:
    """The written safe memories that carry a private memory of ``pre``, each with what it carries."""
    if not written:
        return {}
    private = [(n, _texts(m)) for n, m in sorted(pre.memories.items()) if not m.is_safe]
    public = [_texts(m) for _, m in sorted(pre.memories.items()) if m.is_safe]
    return carried(private, {n: _texts(m) for n, m in written.items()}, public)


def near_copy_message(found: Carried, label: Callable[[str], str] = str) -> str:
    """Names the private memory and the field, never their words."""
    return (f"carries {found.share:.0%} of the distinctive wording of the {found.field} of the private "
            f"memory {label(found.private)}")


def _texts(memory: Memory) -> Texts:
    return memory.name, memory.description, memory.body
