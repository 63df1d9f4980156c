"""The other readings of a text the credential rules also scan, and the cheap tests that skip them."""

from __future__ import annotations

import base64
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.privacy import load_ruleset
from pipeline.privacy.views import _values, decoded_runs, joined_lines, nfkc, views

TOKEN = "ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9"


def test_cjk_prose_with_full_width_punctuation_is_not_folded() -> None:
    # A line of an outside memory file: full-width brackets and commas fold to ASCII punctuation only.
    text = "独立仓库位于 `/srv/avatar`（私密 repo），基线要求 IDF 6.0.1、L2 cache 256KB。"
    assert nfkc(text) is None
    assert views(text) == []


def test_the_compatibility_class_reads_the_same_in_re2_as_in_the_standard_engine() -> None:
    # nfkc() asks RE2 over the UTF-8 bytes; the class is written for the standard engine over characters.
    from pipeline.privacy.views import _COMPATIBLE

    points = {cp + d for cp in (0xAA, 0xB2, 0xBC, 0x2B0, 0x1D2C, 0x2070, 0x2100, 0x2460, 0x3250, 0x3380, 0xFB00,
                                0xFF10, 0xFF21, 0xFF41, 0x1D400, 0x1F100) for d in range(-2, 300)}
    points |= set(range(0, 0x110000, 37))
    for cp in sorted(p for p in points if not 0xD800 <= p <= 0xDFFF):
        text = f"ab {chr(cp)} cd"
        assert (nfkc(text) is not None) == (_COMPATIBLE.search(text) is not None and not text.isascii()), hex(cp)


def test_a_token_in_full_width_letters_is_folded_and_found() -> None:
    wide = "".join(chr(ord(c) + 0xFEE0) for c in TOKEN)
    folded = nfkc(f"说明：{wide}，见上。")
    assert folded is not None and TOKEN in folded.text
    assert [f.rule_id for f in load_ruleset().scan(f"说明：{wide}，见上。")] == ["github-classic-token"]


def test_identifiers_paths_and_digests_are_not_decoded() -> None:
    text = ("see tests/privacy_corpus_build and pipeline_privacy_views_module; commit "
            "4f2c9a1e0b7d3c5a8e6f1d2b9c0a7e3f5d1b8c6a, build HEAD_OF_LINE_BLOCKING_TIMEOUT")
    assert decoded_runs(text) is None


def test_a_base64_or_percent_encoded_token_is_decoded() -> None:
    encoded = base64.b64encode(f"token={TOKEN}".encode()).decode()
    view = decoded_runs(f"the value was {encoded} in the log")
    assert view is not None and TOKEN in view.text
    percent = decoded_runs("q=" + "".join(f"%{b:02X}" for b in TOKEN.encode()))
    assert percent is not None and TOKEN in percent.text


def test_an_encoded_run_after_non_ascii_text_maps_back_to_its_characters() -> None:
    encoded = base64.b64encode(f"token={TOKEN}".encode()).decode()
    head = "密钥（生产）— ünïcode \U0001d4d0 "
    text = f"{head}{encoded}\ud800 fin"  # a lone surrogate after the run
    view = decoded_runs(text)
    assert view is not None and TOKEN in view.text
    assert view.spans == [(len(head), len(head) + len(encoded))]
    assert text[slice(*view.original(0, len(view.text)))] == encoded


def test_prose_lines_are_not_read_joined() -> None:
    text = "Run the tests before pushing.\nThe release notes live in docs/releases.\n- bump the version (2.4.1)"
    assert joined_lines(text) is None


def test_a_token_cut_at_a_line_end_is_read_joined_and_found() -> None:
    text = f"---\nname: deploy\ndescription: the token is {TOKEN[:20]}\n---\n{TOKEN[20:]}\n"
    view = joined_lines(text)
    assert view is not None and TOKEN in view.text.replace("\n", "")
    assert {f.rule_id for f in load_ruleset().scan(text)} == {"github-classic-token"}


def test_a_quoted_frontmatter_value_with_blanks_inside_its_quotes_is_read() -> None:
    # The value inside the quotes starts with a blank: it was read as a word that is none (a crash).
    text = f"---\nname: deploy with {TOKEN[:20]}\ndescription: ' {TOKEN[20:]} '\n---\n"
    view = joined_lines(text)
    assert view is not None
    start = text.index(TOKEN[20:])
    assert (TOKEN[20:], start, start + len(TOKEN[20:])) in [
        (view.text[at:at + end - begin], begin, end) for at, (begin, end) in zip(view.starts, view.spans, strict=True)]
    assert joined_lines("---\nname: x1\ndescription: '   '\n---\nabc\n") is None
    assert [f.rule_id for f in load_ruleset().scan(text)] == ["github-classic-token"]


def _values_line_by_line(text: str) -> list[tuple[str, int, int, int]]:
    """What ``_values`` means, read one line at a time: a body line's value follows its indent and its
    list, quote or heading mark; a frontmatter line's follows ``name:`` or ``description:`` and its quotes."""
    out = []
    lines = text.split("\n")
    front = lines[0].strip() == "---"
    at = 0
    for index, line in enumerate(lines):
        start, at = at, at + len(line) + 1
        if front:
            if index == 0:
                continue
            if line.strip() == "---":
                front = False
                continue
            key = re.match(r"\s*(name|description)\s*:\s*", line)
            if key is None:
                continue
            value = line[key.end():].rstrip()
            value_start = start + key.end()
            if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
                inner = value[1:-1]
                value, value_start = inner.strip(), value_start + 1 + len(inner) - len(inner.lstrip())
        else:
            mark = re.match(r"\s*(?:[-*+>]\s+|#+\s+|[0-9]{1,3}[.)]\s+)?", line)
            assert mark is not None
            value, value_start = line[mark.end():].rstrip(), start + mark.end()
        if value:
            words = value.split()
            out.append((value, value_start, len(words[0]), len(words[-1])))
    return out


_PIECES = st.sampled_from(["-", "*", "+", ">", "#", "##", "1.", "12)", " ", "  ", "\t", "\r", "\x0b", "\u2028",
                           "\u00a0", "\u3000", "---", "name:", "description:", "\"", "'", "x", "ab9", "\n", "\n",
                           "ghp_AAAA1111", "é"])


@given(st.lists(_PIECES, max_size=40).map("".join))
@settings(max_examples=400, deadline=None)
def test_values_are_read_as_line_by_line_reading_reads_them(text: str) -> None:
    assert _values(text) == _values_line_by_line(text)
    assert _values("---\n" + text) == _values_line_by_line("---\n" + text)
