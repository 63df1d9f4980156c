"""The per-prompt JSON reader and writer: the same values and the same bytes as ``json``, without it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.store import jsontext

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.booleans(), st.booleans())
def test_dumps_writes_exactly_the_bytes_json_writes(value: object, sort_keys: bool, ensure_ascii: bool) -> None:
    assert jsontext.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == \
        json.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from(["", " ", "\n", " \t\r\n"]))
def test_loads_reads_back_what_json_reads(value: object, space: str) -> None:
    text = space + json.dumps(value, ensure_ascii=False) + space
    expected = json.loads(text)
    # NaN is never equal to itself: compare the canonical text of both results.
    assert json.dumps(jsontext.loads(text)) == json.dumps(expected)
    assert json.dumps(jsontext.loads(text.encode("utf-8"))) == json.dumps(expected)


@pytest.mark.parametrize("bad", ["", "   ", "{", "[1] x", '{"a":}', "[1,]", b"\xff\xfe\x00", b"\xc3("])
def test_malformed_json_is_a_value_error_as_with_json(bad: str | bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(bad)
    with pytest.raises(ValueError):
        jsontext.loads(bad)


def test_a_bom_or_utf16_input_is_read_the_way_json_reads_it() -> None:
    for data in ('{"a": "ü"}'.encode("utf-8-sig"), '{"a": "ü"}'.encode("utf-16")):
        assert jsontext.loads(data) == json.loads(data) == {"a": "ü"}


def test_a_value_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    with pytest.raises(TypeError):
        jsontext.dumps({"a": {1, 2}})


def test_importing_it_loads_neither_json_nor_re() -> None:
    code = ("import sys\nfrom pipeline.store import jsontext\n"
            "jsontext.loads(jsontext.dumps({'a': [1, 'x']}))\n"
            "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(REPO)}, check=True).stdout
    assert out.strip() == "[]"


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_dump_json_writes_exactly_the_indented_bytes_json_writes(value: object) -> None:
    assert jsontext.dump_json(value) == (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
                                         + "\n").encode("utf-8")


def test_a_finite_float_stays_in_the_fast_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    # A run manifest names the worker's timeout (300.0): one float used to send it to json's slow writer.
    def no_fallback() -> object:
        raise AssertionError("fell back to json.dumps")

    monkeypatch.setattr(jsontext, "_stdlib", no_fallback)
    value = {"worker": {"timeout": 300.0, "ratio": -0.0, "tiny": 5e-324}, "hashes": {"a.md": "00"}}
    assert jsontext.dump_json(value) == (json.dumps(value, indent=2, sort_keys=True) + "\n").encode()


@pytest.mark.parametrize("depth", [65, 999, 2_000, 200_000])
@pytest.mark.parametrize("kind", [str, bytes])
def test_a_text_nested_past_the_bound_is_too_deep_never_a_recursion_error(depth: int, kind: type) -> None:
    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
        with pytest.raises(jsontext.TooDeep):
            jsontext.loads_bounded(text.encode() if kind is bytes else text)
    with pytest.raises(ValueError):  # cut short as well: whichever it is found to be first
        jsontext.loads_bounded("[" * depth)


def test_a_text_within_the_bound_reads_as_json_reads_it() -> None:
    value = {"finalHashes": {"harness": {f"f{i}.md": "ab" * 32 for i in range(3000)}}, "deep": [[[[1]]]] * 80}
    text = json.dumps(value)
    assert jsontext.loads_bounded(text) == json.loads(text)
    assert jsontext.loads_bounded("[" * 64 + "]" * 64) == json.loads("[" * 64 + "]" * 64)
    with pytest.raises(jsontext.TooDeep):
        jsontext.loads_bounded("[" * 65 + "]" * 65)
    with pytest.raises(ValueError):
        jsontext.loads_bounded("[1,")  # bad JSON is still a ValueError, as for loads


def test_shared_containers_count_every_time_they_appear_when_items_are_bounded() -> None:
    inner = ["x"] * 10
    value: list[object] = inner
    for _ in range(6):
        value = [value] * 10  # one list, referenced ten times a level: ten million strings unfolded
    assert not jsontext.nests_deeper(value, 64)
    assert jsontext.nests_deeper(value, 64, max_items=100_000)
    assert jsontext.nests_deeper(value, 5)
