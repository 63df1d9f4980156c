"""The JSON nesting bound: a parsed value's depth is checked on the value, an unparsable text on its brackets,
and both decide exactly as the text's bracket depth outside strings does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.context.boundedjson import TooDeep, json_depth_exceeds, loads_bounded

# Strings full of what a bracket scan must skip: brackets, quotes, backslashes, and a newline escape.
TEXT = st.text(alphabet=st.sampled_from('ab[]{}"\\\n é'), max_size=8)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=40,
)


def _outcome(text: str, limit: int) -> tuple[str, Any]:
    try:
        return "value", loads_bounded(text, limit)
    except TooDeep:
        return "too-deep", None
    except ValueError:
        return "invalid", None


@settings(max_examples=400, deadline=None)
@given(VALUES, st.integers(min_value=0, max_value=6), st.sampled_from([None, 1]))
def test_a_valid_text_is_refused_exactly_when_its_brackets_nest_deeper_than_the_bound(
    value: Any, limit: int, indent: int | None
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    kind, parsed = _outcome(text, limit)
    if json_depth_exceeds(text, limit):
        assert kind == "too-deep"
    else:
        assert kind == "value" and parsed == json.loads(text)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.integers(min_value=0, max_value=6), st.data())
def test_a_cut_text_is_too_deep_where_its_brackets_say_so_and_invalid_otherwise(
    value: Any, limit: int, data: st.DataObject
) -> None:
    text = json.dumps(value, ensure_ascii=False)
    cut = text[: data.draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))]
    try:
        json.loads(cut)
    except ValueError:
        pass
    else:
        return  # a prefix that is itself a document (a number cut short)
    kind, _ = _outcome(cut, limit)
    assert kind == ("too-deep" if json_depth_exceeds(cut, limit) else "invalid")


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 50_000, "[" * 100_000 + "]" * 100_000])
def test_nesting_past_the_interpreters_recursion_limit_is_too_deep_not_a_crash(text: str) -> None:
    with pytest.raises(TooDeep):
        loads_bounded(text, 128)


def test_the_bound_is_inclusive_and_strings_do_not_count() -> None:
    assert loads_bounded("[" * 128 + "]" * 128, 128) is not None
    with pytest.raises(TooDeep):
        loads_bounded("[" * 129 + "]" * 129, 128)
    assert loads_bounded('[["[[[[", "]]]]"]]', 2) == [["[[[[", "]]]]"]]
    assert loads_bounded('{"k": "{{{{"}', 1) == {"k": "{{{{"}
    with pytest.raises(TooDeep):
        loads_bounded('{"k": [{}]}', 2)
    with pytest.raises(ValueError, match="NaN is not JSON"):
        loads_bounded("[NaN]", 8)
    with pytest.raises(ValueError, match="out of range"):
        loads_bounded("[1e999]", 8)
