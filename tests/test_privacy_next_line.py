"""A label on one line and its value alone on the next, as notes and Markdown lists write them."""

from __future__ import annotations

import pytest

from pipeline.privacy import load_ruleset

NEXT_LINE_FINDINGS = [
    ("datadog api key:\n  4460fb04bd685a7e984498849fed7f1f", 2),
    ("weather api key:\n    ik0oco5xwzhagmknehebjch5189hncok", 2),
    ("## Accounts\n\nSendgrid key:\n- q8Zt3vLx9PmR2wKd7sYbN4cF\n", 4),
    ("la clave API de staging:\n  Hk3mQ9pLx7vT2bN8", 2),
]
NEXT_LINE_LOOK_ALIKES = [
    "token:\n  name: db-credentials-production",
    "api key:\n  stored in the vault under ops/billing",
    "secret:\n  secretKeyRef:\n    name: database-password",
    "datadog api key:\n  see the team wiki page for rotation-schedule-2026",
    "auth:\n  commit 3f9c2a1b8d4e5f60718293a4b5c6d7e8f9012345 added it",
]


@pytest.mark.parametrize(("text", "line"), NEXT_LINE_FINDINGS)
def test_a_value_alone_on_the_line_after_its_label_is_found_there(text: str, line: int) -> None:
    findings = load_ruleset().scan(text)
    assert line in [f.line for f in findings if f.category == "credential"], text


@pytest.mark.parametrize("text", NEXT_LINE_LOOK_ALIKES)
def test_words_a_reference_or_a_digest_on_the_next_line_is_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text
