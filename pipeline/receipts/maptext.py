"""The text of a run's hash maps, made once and spliced into every document of the run that carries them.

A direct edit writes the store's ``sourceHashes`` into its snapshot, manifest and both receipts, and
``finalHashes`` into both receipts, then hashes the post receipt's RFC 8785 form: at 2,000 memories
that was six encodings of a 3,200-entry map plus a seventh, canonical one, about 25 ms. Both forms
compose: a top-level member's value is written the same way wherever the rest of the document is,
in the indented form one level deeper (a JSON text holds a newline only between tokens, never in a
string), in the canonical form as it is. So each map is encoded once per form, and each document is
encoded with a unique marker in its place that is then replaced by those bytes.
"""

from __future__ import annotations

import os
from typing import Any

from ..fsutil import canonical_json, dump_json, sha256_bytes

MAP_KEYS = ("sourceHashes", "finalHashes")


class MapText:
    """Encodings of the values a run's documents share, for one run whose maps are built once.

    Values are keyed by identity and held, so an id is never reused while this object lives; a map
    must not change after its first encoding (commit builds them once, before any document).
    """

    __slots__ = ("_held", "_indented", "_canonical", "_token")

    def __init__(self) -> None:
        self._held: list[Any] = []
        self._indented: dict[int, bytes] = {}
        self._canonical: dict[int, bytes] = {}
        self._token = os.urandom(8).hex()  # no document of the run can hold it by chance

    def dump(self, doc: dict[str, Any], keys: tuple[str, ...] = MAP_KEYS) -> bytes:
        """Exactly ``dump_json(doc)``."""
        marks = self._marks(doc, keys)
        if not marks:
            return dump_json(doc)
        text = _splice(dump_json({**doc, **marks}), {mark: self._indented_of(doc[key]) for key, mark in marks.items()})
        return dump_json(doc) if text is None else text

    def digest(self, doc: dict[str, Any], keys: tuple[str, ...] = MAP_KEYS) -> str:
        """Exactly ``digest_json(doc)``: the sha256 of its RFC 8785 bytes."""
        marks = self._marks(doc, keys)
        text = _splice(canonical_json({**doc, **marks}),
                       {mark: self._canonical_of(doc[key]) for key, mark in marks.items()})
        return sha256_bytes(canonical_json(doc) if text is None else text)

    def _marks(self, doc: dict[str, Any], keys: tuple[str, ...]) -> dict[str, str]:
        return {key: f"{self._token}:{key}" for key in keys if type(doc.get(key)) is dict}

    def _indented_of(self, value: dict[str, Any]) -> bytes:
        text = self._indented.get(id(value))
        if text is None:
            self._held.append(value)
            text = self._indented[id(value)] = _encoded(value, 0)
        return text

    def _canonical_of(self, value: dict[str, Any]) -> bytes:
        text = self._canonical.get(id(value))
        if text is None:
            self._held.append(value)
            text = self._canonical[id(value)] = _encoded(value, 1)
        return text


# The maps of the last runs of this process with their encodings ([indented, canonical], each made on
# first use), held as copies and found by value: a long-lived server's next write starts from the state
# its previous one left, so its source maps are the final maps just encoded.
_RECENT: list[tuple[dict[str, dict[str, str]], list[bytes | None]]] = []
_RECENT_KEPT = 2
_STR = {str}


def _encoded(value: dict[str, Any], form: int) -> bytes:
    held = _held_copy(value)
    texts: list[bytes | None] | None = None
    if held is not None:
        for kept, kept_texts in tuple(_RECENT):
            if kept == held:
                texts = kept_texts
                break
        else:
            texts = [None, None]
            _RECENT[:] = [(held, texts), *_RECENT[:_RECENT_KEPT - 1]]
    text = None if texts is None else texts[form]
    if text is None:
        text = dump_json(value).rstrip(b"\n").replace(b"\n", b"\n  ") if form == 0 else canonical_json(value)
        if texts is not None:
            texts[form] = text
    return text


def _held_copy(value: dict[str, Any]) -> dict[str, dict[str, str]] | None:
    """A copy of a hash map ({root: {file: sha256}}, strings only, checked in C) that no later change to
    ``value`` can reach; None for any other value, which is encoded without being kept."""
    copy: dict[str, dict[str, str]] = {}
    for root, files in value.items():
        if type(root) is not str or type(files) is not dict or not set(map(type, files)) <= _STR \
                or not set(map(type, files.values())) <= _STR:
            return None
        copy[root] = dict(files)
    return copy


def _splice(text: bytes, values: dict[str, bytes]) -> bytes | None:
    """``text`` with each marker (a JSON string) replaced by its value, joined once; None unless each
    marker is there exactly once."""
    cuts = []
    for mark, value in values.items():
        quoted = f'"{mark}"'.encode("ascii")
        at = text.find(quoted)
        if at < 0 or text.find(quoted, at + len(quoted)) >= 0:
            return None
        cuts.append((at, at + len(quoted), value))
    parts: list[bytes] = []
    last = 0
    for start, end, value in sorted(cuts, key=lambda cut: cut[0]):
        parts += (text[last:start], value)
        last = end
    parts.append(text[last:])
    return b"".join(parts)
