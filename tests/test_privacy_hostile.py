"""Hostile inputs: RE2 keeps scans linear; random text never breaks the scanner."""

from __future__ import annotations

import time

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.privacy import load_ruleset, scan_bytes

SIZE = 64 * 1024


def _fill(unit: str) -> str:
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


ADVERSARIAL = {
    "ghp-prefix-run": _fill("ghp_"),
    "ghp-near-miss": _fill("ghp_" + "a" * 35 + " "),
    "at-signs": _fill("aaaa@"),
    "at-pairs": _fill("a@"),
    "pem-header-without-body": _fill("-----BEGIN RSA PRIVATE KEY-----\n"),
    "pem-begin-no-end": "-----BEGIN" + "A" * SIZE,
    "digit-run": _fill("4"),
    "card-like-groups": _fill("4242 "),
    "equals-run": _fill("="),
    "assignment-run": _fill("password="),
    "secret-word-run": _fill("secret token key auth "),
    "dotted-digits": _fill("1."),
    "hex-colons": _fill("2a00:"),
    "jwt-fragments": _fill("eyJ" + "a" * 20 + "."),
    "url-userinfo": _fill("postgres://a:"),
    "home-run": _fill("/home/"),
    "plus-digits": _fill("+1 "),
    "mixed-prefixes": _fill("sk-ant-api03-AAAA xoxb-1234567 AKIA glpat- hf_ @x. "),
}


def test_engine_uses_re2_for_every_pattern() -> None:
    ruleset = load_ruleset()
    assert all(isinstance(rule.pattern.compiled, re2._Regexp) for rule in ruleset.rules)
    assert all(rule.allowlist is None or isinstance(rule.allowlist.compiled, re2._Regexp) for rule in ruleset.rules)


def test_adversarial_inputs_scan_without_error() -> None:
    ruleset = load_ruleset()
    total = 0.0
    print()
    for name, text in ADVERSARIAL.items():
        start = time.perf_counter()
        findings = ruleset.scan(text, file=name)
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"  {name:26s} {len(text) // 1024} KB {elapsed * 1000:7.1f} ms  findings={len(findings)}")
        assert all(f.line >= 1 and f.column >= 1 for f in findings)
    print(f"  all adversarial inputs: {total:.3f} s")


def _check_within(text: str, findings: list) -> None:  # type: ignore[type-arg]
    lines = text.split("\n")
    for finding in findings:
        assert 1 <= finding.line <= len(lines)
        assert 1 <= finding.column <= len(lines[finding.line - 1]) + 1


TOKENS = st.sampled_from(
    [
        "ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9",
        "jane.roe@acmecorp.io",
        "34.201.17.88",
        "/home/mkowalski/",
        "4111 1111 1111 1112",
        "PASSWORD=Tr0ub4dor&3",
        "\n",
        "é",
        "\ud800",
        "-----BEGIN",
        "://u:p@h",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_random_text_never_raises(text: str) -> None:
    _check_within(text, load_ruleset().scan(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TOKENS, st.text(max_size=12)), max_size=30).map("".join))
def test_mixed_text_findings_lie_within_the_text(text: str) -> None:
    _check_within(text, load_ruleset().scan(text))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    _check_within(text, scan_bytes(load_ruleset(), data, "blob"))
