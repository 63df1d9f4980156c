"""JSON parsing with a nesting bound and no NaN or Infinity.

The C parser's own recursion is bounded by the interpreter's recursion limit (it raises
RecursionError, never overflows the stack), so a text is parsed first and the bound checked on the
value it gave, one level of containers at a time (``store.jsontext.nests_deeper``, which every other
reader of JSON files uses too). Only a text that does not parse is scanned for its
brackets, so that one nested too deep is refused as such whatever else is wrong with it.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..store.jsontext import TooDeep as TooDeep
from ..store.jsontext import nests_deeper

# Strings cannot span lines in JSON (a raw newline inside one is invalid), so a
# string that is still open at a line end is cut there; this keeps one broken
# JSONL line from flipping the string state of every line after it.
_JSON_STRING = re.compile(r'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACES = str.maketrans("{}", "[]")


def json_depth_exceeds(text: str, limit: int) -> bool:
    """True if brackets outside strings may nest deeper than ``limit``; linear, no recursion.

    The running sum is not floored at zero: json.loads stops at the first character
    that breaks a valid prefix, and inside a valid prefix the sum is the true depth.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).translate(_BRACES)
    step = max(limit, 1)
    depth = 0
    for start in range(0, len(brackets), step):
        chunk = brackets[start : start + step]
        opens = chunk.count("[")
        if depth + opens <= limit:
            # Even if every opener came first, this chunk stays within the bound.
            depth += 2 * opens - len(chunk)
            continue
        for char in chunk:
            depth += 1 if char == "[" else -1
            if depth > limit:
                return True
    return False


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def _reject_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")


def loads_bounded(text: str, max_depth: int) -> Any:
    """json.loads with a nesting bound and without NaN/Infinity; raises ValueError (TooDeep).

    A text nested deeper than ``max_depth`` is TooDeep even where it is also invalid JSON.
    """
    try:
        value = json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)
    except RecursionError as exc:
        raise TooDeep("nested too deep") from exc
    except ValueError:
        if json_depth_exceeds(text, max_depth):
            raise TooDeep(f"nested deeper than {max_depth}") from None
        raise
    if nests_deeper(value, max_depth):
        raise TooDeep(f"nested deeper than {max_depth}")
    return value
