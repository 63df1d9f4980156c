"""The rules' match call (``span_finder``) finds what the binding's ``finditer`` finds, span for span."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.privacy import load_ruleset
from pipeline.privacy.patterns import NO_SPAN, compile_pattern, span_finder

CORPUS = Path(__file__).parent / "data" / "privacy" / "corpus"


def _texts(size: int = 8000) -> list[bytes]:
    """Every positive and one benign row in eight, packed into texts of ``size`` bytes."""
    rows = [json.loads(line)["text"] for line in (CORPUS / "positives.jsonl").read_text("utf-8").splitlines()]
    benign = [json.loads(line)["text"] for line in (CORPUS / "benign.jsonl").read_text("utf-8").splitlines()]
    texts: list[bytes] = []
    chunk: list[str] = []
    for row in rows + benign[::8]:
        chunk.append(row)
        if sum(len(c) for c in chunk) > size:
            texts.append("\n".join(chunk).encode("utf-8"))
            chunk = []
    return [*texts, "\n".join(chunk).encode("utf-8")]


def _stepped(pattern: Any, data: bytes) -> list[list[tuple[int, int]]]:
    """Every match through ``span_finder``, stepping on as ``finditer`` does (one byte past an empty one)."""
    find = span_finder(pattern)
    out: list[list[tuple[int, int]]] = []
    pos = 0
    while True:
        spans = find(data, pos, len(data))
        if spans[0] == NO_SPAN:
            return out
        out.append([tuple(s) for s in spans])  # type: ignore[misc]
        if pos == len(data):
            return out
        pos = pos + 1 if pos == spans[0][1] else spans[0][1]


def _listed(pattern: Any, data: bytes) -> list[list[tuple[int, int]]]:
    compiled = getattr(pattern, "compiled", pattern)
    return [[match.span(g) for g in range(compiled.groups + 1)] for match in compiled.finditer(data)]


def test_every_shipped_rule_finds_the_same_matches_and_groups_as_finditer() -> None:
    texts = _texts()
    compared = 0
    for rule in load_ruleset().rules:
        for data in texts:
            expected = _listed(rule.pattern, data)
            assert _stepped(rule.pattern, data) == expected, rule.id
            compared += len(expected)
    assert compared > 3000  # the corpus gives most rules many matches to compare


def test_empty_matches_step_one_byte_on_as_finditer_does() -> None:
    pattern = compile_pattern("(x*)(y)?", "test")
    data = "axxbyé".encode()
    assert _stepped(pattern, data) == _listed(pattern, data)
    assert [spans[0] for spans in _stepped(pattern, data)] == [(0, 0), (1, 3), (3, 3), (4, 5), (5, 5), (6, 6),
                                                                     (7, 7)]


def test_a_program_of_another_binding_is_searched_through_its_own_search() -> None:
    pattern = re.compile(rb"(a)(b)?")
    assert _stepped(pattern, b"abaab") == [[(0, 2), (0, 1), (1, 2)], [(2, 3), (2, 3), (-1, -1)],
                                          [(3, 5), (3, 4), (4, 5)]]
