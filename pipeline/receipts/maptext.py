"""The text of a run's hash maps, made once and spliced into every document of the run that carries them.

A direct edit writes the store's ``sourceHashes`` into its snapshot, manifest and both receipts, and
``finalHashes`` into both receipts, then hashes the post receipt's RFC 8785 form: at 2,000 memories
that was six encodings of a 3,200-entry map plus a seventh, canonical one, about 25 ms. Both forms
compose: a top-level member's value is written the same way wherever the rest of the document is,
in the indented form one level deeper (a JSON text holds a newline only between tokens, never in a
string), in the canonical form as it is. So each map is encoded once per form, and each document is
encoded with a unique marker in its place that is then replaced by those bytes.

A write's final maps differ from its source maps in a few files: their text is the source maps' entries
with those entries replaced, inserted or removed (0.3 ms instead of 12 ms for both forms at 2,000
memories), so a warm server encodes no whole map at all.
"""

from __future__ import annotations

import os
from _json import encode_basestring  # the escaper the writers use (see store/jsontext.py)

from ..fsutil import sha256_bytes
from ..store.jsontext import canonical_json, dump_json, dumps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..state.maps import HashMaps

MAP_KEYS = ("sourceHashes", "finalHashes")


class MapText:
    """Encodings of the values a run's documents share, for one run whose maps are built once.

    Values are keyed by identity and held, so an id is never reused while this object lives; a map
    must not change after its first encoding (commit builds them once, before any document).
    """

    __slots__ = ("_held", "_indented", "_canonical", "_entries", "_token")

    def __init__(self) -> None:
        self._held: list[Any] = []
        self._indented: dict[int, bytes] = {}
        self._canonical: dict[int, bytes] = {}
        self._entries: dict[int, _Entry | None] = {}  # each map copied and looked up once per run
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

    def hash_map(self, value: Any) -> bool:
        """Whether ``value`` is a hash map ({root: {file: sha256}}, strings only), checked once per run."""
        return type(value) is dict and self._entry(value) is not None

    def _marks(self, doc: dict[str, Any], keys: tuple[str, ...]) -> dict[str, str]:
        return {key: f"{self._token}:{key}" for key in keys if type(doc.get(key)) is dict}

    def _indented_of(self, value: dict[str, Any]) -> bytes:
        text = self._indented.get(id(value))
        if text is None:
            text = self._indented[id(value)] = _text_of(self._entry(value), value, 0)
        return text

    def _canonical_of(self, value: dict[str, Any]) -> bytes:
        text = self._canonical.get(id(value))
        if text is None:
            text = self._canonical[id(value)] = _text_of(self._entry(value), value, 1)
        return text

    def _entry(self, value: dict[str, Any]) -> _Entry | None:
        if id(value) not in self._entries:
            self._held.append(value)
            self._entries[id(value)] = _entry_of(value)
        return self._entries[id(value)]


# Each root of a map, in key order: (root, its file names sorted, each file's entry ``"name": "sha"``).
# The lists are never changed once made: a derived layout copies those it changes.
_Layout = list[tuple[str, list[str], list[bytes]]]

# The maps of the last runs of this process with their encodings ([indented, canonical], each made on
# first use), held as copies and found by value: a long-lived server's next write starts from the state
# its previous one left, so its source maps are the final maps just encoded. A map that is not one of
# them but differs from one in a few files (a write's final maps from its source maps) is spelled from
# that one's entries with those files' entries replaced, inserted or removed.
_Entry = tuple[dict[str, dict[str, str]], _Layout | None, list[bytes | None]]
_RECENT: list[_Entry] = []
_RECENT_KEPT = 2
_STR = {str}
# Between two entries of a root in the indented text one level deeper. A JSON string never holds a raw
# newline, so splitting the writer's output on it yields exactly the entries.
_ENTRY_SEP = ",\n      "
_ENTRY_SEP_BYTES = _ENTRY_SEP.encode("ascii")
# Derive from a kept map only when few files differ: otherwise one whole encoding is as cheap.
_DERIVE_MAX = 256


def _encoded(value: dict[str, Any], form: int) -> bytes:
    return _text_of(_entry_of(value), value, form)


def _entry_of(value: dict[str, Any]) -> _Entry | None:
    """The kept entry of a hash map equal to ``value`` (made, and kept, if there is none); None for a
    value that is not a hash map of strings."""
    held = _held_copy(value)
    if held is None:
        return None
    for kept in tuple(_RECENT):
        if kept[0] == held:
            return kept
    layout = None
    for kept_held, kept_layout, _texts in tuple(_RECENT):
        if kept_layout is not None:
            layout = _derived(kept_layout, kept_held, held)
            if layout is not None:
                break
    entry: _Entry = (held, _layout_of(held) if layout is None else layout, [None, None])
    _RECENT[:] = [entry, *_RECENT[:_RECENT_KEPT - 1]]
    return entry


def _text_of(entry: _Entry | None, value: dict[str, Any], form: int) -> bytes:
    if entry is None:
        return _whole(value, form)
    held, layout, texts = entry
    text = texts[form]
    if text is None:
        text = texts[form] = (None if layout is None else _spelled(layout, form)) or _whole(held, form)
    return text


def _whole(value: dict[str, Any], form: int) -> bytes:
    return dump_json(value).rstrip(b"\n").replace(b"\n", b"\n  ") if form == 0 else canonical_json(value)


def _layout_of(held: dict[str, dict[str, str]]) -> _Layout | None:
    """The entries of each root as the indented writer spells them, split from its own output; None
    when a name is not ASCII (RFC 8785 orders such keys by UTF-16 code units, Python by code points)."""
    if not "".join(held).isascii():
        return None
    layout: _Layout = []
    for root in sorted(held):
        files = held[root]
        if not "".join(files).isascii():
            return None
        frags: list[bytes] = []
        if files:
            flat = dumps(files, sort_keys=True, ensure_ascii=False, separators=(_ENTRY_SEP, ": "))
            try:
                frags = flat[1:-1].encode("utf-8").split(_ENTRY_SEP_BYTES)
            except UnicodeEncodeError:
                return None  # a lone surrogate: the whole encoders say what is wrong
        keys = sorted(files)
        if len(frags) != len(keys):
            return None
        layout.append((root, keys, frags))
    return layout


def _derived(base: _Layout, base_held: dict[str, dict[str, str]], held: dict[str, dict[str, str]]) -> _Layout | None:
    """``held``'s layout from a kept map's: the entries of the files whose hash differs are replaced,
    inserted or removed in place (found by bisection). None when the roots differ or too many files do."""
    from bisect import bisect_left

    if base_held.keys() != held.keys():
        return None
    layout: _Layout = []
    for root, keys, frags in base:
        old, new = base_held[root], held[root]
        if old == new:
            layout.append((root, keys, frags))
            continue
        changed = {name for name, _digest in old.items() ^ new.items()}
        if len(changed) > _DERIVE_MAX or not "".join(changed).isascii():
            return None
        keys, frags = list(keys), list(frags)
        for name in sorted(changed):
            at = bisect_left(keys, name)
            here = at < len(keys) and keys[at] == name
            if name in new:
                try:
                    frag = f"{encode_basestring(name)}: {encode_basestring(new[name])}".encode()
                except UnicodeEncodeError:
                    return None
                if here:
                    frags[at] = frag
                else:
                    keys.insert(at, name)
                    frags.insert(at, frag)
            elif here:
                del keys[at], frags[at]
        layout.append((root, keys, frags))
    return layout


def _spelled(layout: _Layout, form: int) -> bytes | None:
    """The map's text from its entries: the indented form one level deeper, or the RFC 8785 form (the
    same entries with ``": "`` as ``":"`` and no indentation). None where that rewrite could reach inside
    a string (an escaped quote next to ``": "``): the whole encoder then writes it."""
    if not layout:
        return b"{}"
    if form == 0:
        parts = [encode_basestring(root).encode("ascii") + b": "
                 + (b"{\n      " + _ENTRY_SEP_BYTES.join(frags) + b"\n    }" if frags else b"{}")
                 for root, _keys, frags in layout]
        return b"{\n    " + b",\n    ".join(parts) + b"\n  }"
    out = []
    for root, _keys, frags in layout:
        joined = b",".join(frags)
        if b'\\"' in joined:
            return None
        out.append(encode_basestring(root).encode("ascii") + b":{" + joined.replace(b'": "', b'":"') + b"}")
    return b"{" + b",".join(out) + b"}"


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


def maps_digest(texts: MapText, maps: HashMaps) -> str:
    """The digest a proof record binds: of both roots' hash maps, through the run's own encodings."""
    return texts.digest({"maps": maps}, keys=("maps",))
