"""The privacy gate of the mirror: each distinct file is scanned once per rule set, and new bytes are scanned anew."""

from __future__ import annotations

from pipeline.engine import PostState
from pipeline.mirror import privacy_issues
from pipeline.privacy import load_ruleset

CLEAN = b"---\nname: ci\ndescription: the ci token\ntype: reference\nvisibility: safe\n---\nAsk ops.\n"
LEAKY = CLEAN.replace(b"Ask ops.", b"GITHUB_TOKEN=ghp_" + b"Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9")


def _issues(data: bytes, ruleset: object) -> list[str]:
    post = PostState(harness={}, public={"reference_ci.md": data}, memories={})
    return [issue.code for issue in privacy_issues(post, ruleset)]  # type: ignore[arg-type]


def test_the_same_name_with_new_bytes_is_scanned_again() -> None:
    ruleset = load_ruleset()
    assert _issues(CLEAN, ruleset) == []
    assert _issues(LEAKY, ruleset) and all(code.startswith("privacy.") for code in _issues(LEAKY, ruleset))
    assert _issues(CLEAN, ruleset) == []


def test_findings_are_the_same_from_the_cache_and_from_a_fresh_rule_set() -> None:
    first = _issues(LEAKY, load_ruleset())
    assert first == _issues(LEAKY, load_ruleset()) == _issues(LEAKY, load_ruleset())
