"""The JSON memfold writes: RFC 8785 canonical bytes for digests, a stable indented form for files.

It imports nothing from memfold, so ``fsutil`` (the digest helper) can build on it without a cycle.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _encode_str  # json's C escaper

# The per-prompt path imports this through ``fsutil``: typing only for the checker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SAFE_INT = 2**53 - 1
_STR = {str}


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
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              check_circular=False).encode("utf-8")
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
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


class _Unplain(Exception):
    """A value the fast writer leaves to json.dumps (floats, non-str keys, other types)."""


def _indented(value: Any, newline: str, out: list[str]) -> None:
    """Exactly ``json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)``, several times faster.

    json.dumps falls back to its pure-Python encoder whenever ``indent`` is set; plans and receipts
    of large stores have hundreds of thousands of entries. Strings go through json's C escaper.
    """
    kind = type(value)
    if kind is str:
        out.append(_encode_str(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        if set(map(type, value)) == _STR and set(map(type, value.values())) == _STR:
            # A hash map: one join instead of a call per entry.
            sep = "," + inner
            out.append("{" + inner + sep.join(_encode_str(k) + ": " + _encode_str(value[k]) for k in sorted(value))
                       + newline + "}")
            return
        first = True
        for key in sorted(value):
            if type(key) is not str:
                raise _Unplain
            out.append(("{" if first else ",") + inner + _encode_str(key) + ": ")
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
    else:
        raise _Unplain
