"""The other readings of a text the credential rules also scan, and the cheap tests that skip them."""

from __future__ import annotations

import base64

from pipeline.privacy import load_ruleset
from pipeline.privacy.views import decoded_runs, joined_lines, nfkc, views

TOKEN = "ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9"


def test_cjk_prose_with_full_width_punctuation_is_not_folded() -> None:
    # A line of an outside memory file: full-width brackets and commas fold to ASCII punctuation only.
    text = "独立仓库位于 `/srv/avatar`（私密 repo），基线要求 IDF 6.0.1、L2 cache 256KB。"
    assert nfkc(text) is None
    assert views(text) == []


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
        (view.text[at:at + end - begin], begin, end) for at, (begin, end) in zip(view.starts, view.spans)]
    assert joined_lines("---\nname: x1\ndescription: '   '\n---\nabc\n") is None
    assert [f.rule_id for f in load_ruleset().scan(text)] == ["github-classic-token"]
