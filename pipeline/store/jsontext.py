"""The JSON memfold reads and writes, on CPython's JSON accelerator without importing the ``json`` package.

- ``loads`` / ``dumps``: exactly ``json.loads`` / ``json.dumps`` (default separators). Importing ``json``
  imports ``re`` (its decoder and encoder compile patterns at import), which with ``enum`` costs about a
  third of the interpreter's own start, and the prompt hook runs before every prompt. The C scanner and
  encoder that ``json`` itself uses give the same values and bytes; whatever they do not cover (bytes
  that are not UTF-8 text, error messages) goes to ``json`` unchanged.
- ``loads_bounded``: ``loads`` with a nesting bound, for every file memfold reads from a repository, the
  store, a run dir or a cache: a text nested deeper than the bound is ``TooDeep`` (a ValueError, which each
  reader answers with its own error code), never a RecursionError from the parser or a later walk.
- ``canonical_json``: RFC 8785 bytes for digests (``digest_json``: their sha256); ``dump_json``: the
  stable indented form of files; ``read_json``: a file read with ``fsutil``'s bounds, then
  ``loads_bounded``.

The file helpers it builds on (``fsutil``) are imported where they are used: the prompt hook imports
this module for ``loads`` alone.
"""

from __future__ import annotations

# CPython's accelerator (as ``_sqlite3`` is used for ``sqlite3``); ``json`` uses exactly these.
from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """The attributes the C scanner reads from ``json.JSONDecoder`` (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_CONSTANTS.__getitem__)


_scan = make_scanner(_Context())  # type: ignore[arg-type]  # any object with the decoder's attributes


def _stdlib() -> Any:
    import json

    return json


def loads(text: str | bytes | bytearray) -> Any:
    """Exactly ``json.loads(text)``; malformed input raises ValueError (``json.JSONDecodeError``)."""
    if not isinstance(text, str):
        head = bytes(text[:4])
        if not head or head[:1] in (b"\xef", b"\xfe", b"\xff") or 0 in head:
            return _stdlib().loads(text)  # a BOM or UTF-16/32: json's own detection
        text = bytes(text).decode("utf-8", "surrogatepass")
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        return _stdlib().loads(text)  # raises json's own error, with its position
    if text[end:].strip(_WHITESPACE):
        return _stdlib().loads(text)
    return value


# What memfold writes nests a handful of levels (a receipt's hash maps are three deep); a plan or a context
# has bounds of its own. Far below the parser's own recursion limit and any walk's.
MAX_DEPTH = 64


class TooDeep(ValueError):
    """A JSON text (or a parsed value) nests deeper than its reader's bound."""


def nests_deeper(value: Any, limit: int, max_items: int | None = None) -> bool:
    """True if ``value`` (plain dicts and lists, as ``loads`` gives them) nests deeper than ``limit``, or
    (with ``max_items``) holds more than that many items in all its containers together.

    One level of containers at a time, no recursion; a container holding strings only (a hash map) is
    passed over in C. JSON never shares a container between two places; YAML does through aliases, and
    ``max_items`` bounds what such sharing unfolds to (a "billion laughs" document) for whoever walks it.
    """
    level = [value] if type(value) is dict or type(value) is list else []
    depth = items_seen = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            if max_items is not None:
                items_seen += len(items)
                if items_seen > max_items:
                    return True
            if set(map(type, items)) <= _STR:
                continue
            below += [item for item in items if type(item) is dict or type(item) is list]
        level = below
    return False


def loads_bounded(text: str | bytes | bytearray, max_depth: int = MAX_DEPTH) -> Any:
    """``loads`` for files from outside this process: nested deeper than ``max_depth`` is ``TooDeep``.

    The parser's own recursion limit (about a thousand levels) raises RecursionError, which is turned
    into TooDeep; below it the parsed value is measured, unless the text holds too few brackets to be
    that deep (a chain head, a settings file: one count in C, no walk).
    """
    try:
        value = loads(text)
    except RecursionError:
        raise TooDeep(f"nested deeper than {max_depth} levels") from None
    if _brackets(text) > max_depth and nests_deeper(value, max_depth):
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return value


def _brackets(text: str | bytes | bytearray) -> int:
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")


def _default(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: Any, *, sort_keys: bool = False, ensure_ascii: bool = True,
          separators: tuple[str, str] = (", ", ": ")) -> str:
    """Exactly ``json.dumps(value, sort_keys=..., ensure_ascii=..., separators=...)`` (no indent)."""
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(value, str):
        return str(encode(value))
    item, key = separators
    encoder = make_encoder({}, _default, encode, None, key, item, sort_keys, False, True)
    return "".join(encoder(value, 0))


_SAFE_INT = 2**53 - 1
_STR = {str}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain_json(value: Any) -> bool:
    """True when RFC 8785 and sorted compact ``json.dumps`` give the same bytes for ``value``.

    That holds without floats (JCS has its own number format), with integers in the safe range and
    with ASCII keys (JCS orders keys by UTF-16 code units, Python by code points). String escaping is
    the same in both: only ``"``, ``\\`` and control characters, everything else as UTF-8.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or item is None or kind is bool:
            continue
        if kind is int:
            if -_SAFE_INT <= item <= _SAFE_INT:
                continue
            return False
        if kind is dict:
            try:
                if not "".join(item).isascii():
                    return False
            except TypeError:
                return False  # a key that is not a string
            values = item.values()
            if not set(map(type, values)) <= _STR:  # hash maps hold strings only: checked in C
                stack.extend(values)
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return True


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical bytes of a JSON value."""
    if _plain_json(value):
        try:
            # The C encoder: the pure-Python rfc8785 costs seconds on a 20,000-file receipt.
            return dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            pass  # lone surrogates: rfc8785 reports them
    import rfc8785

    return rfc8785.dumps(value)


def dump_json(value: Any) -> bytes:
    """The stable, human-readable JSON every memfold file is written in."""
    try:
        parts: list[str] = []
        _indented(value, "\n", parts)
        text = "".join(parts)
    except (_Unplain, TypeError, RecursionError):
        text = _stdlib().dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def digest_json(value: Any) -> str:
    from ..fsutil import sha256_bytes

    return sha256_bytes(canonical_json(value))


def read_json(path: Path | str, limit: int, *, dir_fd: int | None = None, settings: str | None = None
              ) -> Any:
    """A JSON file read with ``fsutil.read_bounded`` and parsed with ``loads_bounded``.

    Bad JSON, and JSON nested too deep, is a ValueError for the caller to answer with its own code.
    """
    from ..fsutil import read_bounded

    return loads_bounded(read_bounded(path, limit, dir_fd=dir_fd, settings=settings))


class _Unplain(Exception):
    """A value the fast writer leaves to json.dumps (floats, non-str keys, other types)."""


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Exactly ``json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)``, several times faster.

    json.dumps falls back to its pure-Python encoder whenever ``indent`` is set; plans and receipts
    of large stores have hundreds of thousands of entries. Strings go through json's C escaper.
    """
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        if set(map(type, value)) == _STR and set(map(type, value.values())) <= _SCALARS:
            # A hash map, a journal entry, an operation's summary: no value holds a container, so the
            # C encoder writes it whole, the indentation being its item separator.
            flat = dumps(value, sort_keys=True, ensure_ascii=False, separators=("," + inner, ": "))
            out.append("{" + inner + flat[1:-1] + newline + "}")
            return
        first = True
        for key in sorted(value):
            if type(key) is not str:
                raise _Unplain
            out.append(("{" if first else ",") + inner + encode_basestring(key) + ": ")
            first = False
            _indented(value[key], inner, out)
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        first = True
        for item in value:
            out.append(("[" if first else ",") + inner)
            first = False
            _indented(item, inner, out)
        out.append(newline + "]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float and value - value == 0:  # finite (json.dumps spells the others NaN, Infinity)
        out.append(float.__repr__(value))  # json.dumps' own float text (a run's timeout, a duration)
    else:
        raise _Unplain
