"""Near-copies: how much of a private memory's distinctive wording a safe memory carries.

Each field of a private memory (name, description, body) is cut into overlapping features after
folding case and collapsing everything but letters and digits to single spaces: a long field into
word shingles (runs of ``SHINGLE_WORDS`` words), a short one into character grams (a short field has
so few shingles that one changed character would leave none), a very short one is kept whole: it is
generic ("use the staging db") and counts only when a safe field equals it. Features that already
occur in a safe memory are public, not distinctive. A safe text carries a field when it holds at
least ``THRESHOLD`` of the field's distinctive features (containment), and at least ``MIN_CARRIED``
of them. The figures come from the measurement over ``tests/data/nearcopy/`` in the README.
"""

from __future__ import annotations

import re

from ..frozen import FrozenValue

# A direct edit imports this module: no dataclasses (which pulls in inspect) and no typing at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from ..engine import PreState
    from ..store.memory import Memory

SHINGLE_WORDS = 4
CHAR_GRAM = 10
# A field with this many words or more is compared by word shingles, a shorter one by character grams.
LONG_WORDS = 16
# A normalised field shorter than this counts only as a whole field.
MIN_CHARS = 24
THRESHOLD = 0.5
MIN_CARRIED = 3
# A private field is measured only if this share of its distinct words occurs in the written text:
# a lower bound of any containment at THRESHOLD, so it only saves work.
PREFILTER = 0.3
PREFILTER_LETTERS = 5
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
    return set(map(" ".join, zip(*(words[i:] for i in range(SHINGLE_WORDS)))))


def _grams(text: str) -> set[str]:
    n = CHAR_GRAM
    return set(map(text.__getitem__, map(slice, range(len(text) - n + 1), range(n, len(text) + 1))))


def _field_features(field: str, text: str) -> tuple[str, set[str]]:
    if text.count(" ") + 1 >= LONG_WORDS:
        return "words", _shingles(text)
    if len(text) >= MIN_CHARS:
        return "chars", _grams(text)
    # A title equal to a private one is no leak: names are short and generic.
    return "whole", {text} if text and field != "name" else set()


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
        self.vocabulary = set(" ".join(self.normal).split())
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
    vocabulary = set().union(*(f.vocabulary for f in safe.values()))
    owners: list[str] = []
    fields: list[str] = []
    for owner, texts in private:
        owners.extend((owner,) * len(FIELDS))
        fields.extend(texts)
    candidates: list[tuple[str, str, str, set[str]]] = []
    for position, norm in enumerate(_normalize_all(fields)):
        # Most private fields share few long words with what is written: skip them before cutting
        # features. Short words ("with", "the") are in every text and prove nothing.
        words = {w for w in norm.split() if len(w) >= PREFILTER_LETTERS}
        if words and len(words & vocabulary) < PREFILTER * len(words):
            continue
        field = FIELDS[position % len(FIELDS)]
        mode, features = _field_features(field, norm)
        if features:
            candidates.append((owners[position], field, mode, features))
    if not candidates:
        return {}
    known = [_Features(texts) for texts in public]
    published: dict[str, set[str]] = {}
    holders: dict[str, dict[str, list[str]]] = {}
    best: dict[str, Carried] = {}
    for owner, field, mode, features in candidates:
        if mode not in holders:
            holders[mode] = {}
            for name, target in safe.items():
                for feature in target.of(mode):
                    holders[mode].setdefault(feature, []).append(name)
        shared = features & holders[mode].keys()
        # What no written memory holds cannot be carried: the shared part bounds every single share.
        if len(shared) < THRESHOLD * len(features):
            continue
        if known:
            if mode not in published:
                published[mode] = set().union(*(f.of(mode) for f in known))
            features = features - published[mode]
            shared -= published[mode]
        size = len(features)
        counts: dict[str, int] = {}
        for feature in shared:
            for name in holders[mode][feature]:
                counts[name] = counts.get(name, 0) + 1
        for name, count in counts.items():
            share = count / size
            if name == owner:
                continue
            if share < THRESHOLD or count < min(MIN_CARRIED, size):
                continue
            found = best.get(name)
            if found is None or (share, found.private) > (found.share, owner):
                best[name] = Carried(owner, field, share)
    return best


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
