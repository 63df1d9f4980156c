"""``loads`` and ``dumps`` for the per-prompt path, on CPython's JSON accelerator without the ``json`` package.

Importing ``json`` imports ``re`` (its decoder and encoder compile patterns at import), which with
``enum`` costs about as much as a third of the interpreter's own start; the hook runs before every
prompt. The C scanner and encoder that ``json`` itself uses give the same values and the same bytes;
whatever they do not cover (bytes that are not UTF-8 text, indentation, custom separators, error
messages) goes to ``json`` unchanged.
"""

from __future__ import annotations

# CPython's accelerator (as ``_sqlite3`` is used for ``sqlite3``); ``json`` uses exactly these.
from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

TYPE_CHECKING = False
if TYPE_CHECKING:
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


def _default(value: object) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: Any, *, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """Exactly ``json.dumps(value, sort_keys=..., ensure_ascii=...)`` (default separators, no indent)."""
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    if isinstance(value, str):
        return str(encode(value))
    encoder = make_encoder({}, _default, encode, None, ": ", ", ", sort_keys, False, True)
    return "".join(encoder(value, 0))
