"""Quotes inside a secret: a literal holding a quote of another kind, a prose password with an
apostrophe, and masks that cover the whole secret when two rules read it to different ends."""

from __future__ import annotations

import pytest

from pipeline.privacy import load_ruleset

ALL = ("credential", "pii", "path")

# (the text, the secret it holds)
QUOTED_FINDINGS = [
    ('"password": "Wq7v\'R2nLp9x#k3",', "Wq7v'R2nLp9x#k3"),
    ('"password": "`-08iOR~zZik6ko^\\JPBy4r",', "`-08iOR~zZik6ko^\\JPBy4r"),
    ("token = 'ab\"cd7Xk29LmQ'", 'ab"cd7Xk29LmQ'),
    ('DB_PASSWORD="Wq7v\'R2nLp9x#k3"', "Wq7v'R2nLp9x#k3"),
    ("the password is Wq7v'R2nLp9x#k3 for now", "Wq7v'R2nLp9x#k3"),
    ("das Passwort ist 'Kq8#mZ2v'!", "Kq8#mZ2v"),
]


@pytest.mark.parametrize(("text", "secret"), QUOTED_FINDINGS)
def test_a_secret_holding_a_quote_is_found_and_masked_whole(text: str, secret: str) -> None:
    ruleset = load_ruleset()
    assert any(f.category == "credential" for f in ruleset.scan(text)), text
    masked = text
    for start, end, _rule in reversed(ruleset.spans(text, ALL)):
        masked = masked[:start] + "#" + masked[end:]
    assert not any(secret[i:i + 4] in masked for i in range(len(secret) - 3)), masked


QUOTE_LOOK_ALIKES = [
    "the password: it's in vault",
    "the password isn't set yet",
    "password wasn't changed since March",
    "the password's length is 12",
    "Command line arguments to pass to :py:func:`pytest.main`.",
    "        :param extra: the keyword arguments to pass to :meth:`main`.",
    "password = 'it''s fine'",
    'password: "it\'s in vault"',
]


def test_a_mask_covers_what_a_generic_rule_reads_past_a_specific_one() -> None:
    """The finding is named by the specific rule; the mask is the union of every rule's span."""
    ruleset = load_ruleset()
    text = 'DB_PASSWORD="Wq7v\'R2nLp9x#k3"'
    findings = ruleset.scan(text)
    assert [f.rule_id for f in findings] == ["prose-password"]
    (start, end, _rule), = ruleset.spans(text, ALL)
    assert text[start:end] == "Wq7v'R2nLp9x#k3"


# Format strings, subscripts, types and attributes: code, not a literal; and names of what describes a
# secret (its hash, its rules, its type).
CODE_LOOK_ALIKES = [
    'password = secrets["password"]',
    'format_password = "prefix_{}".format(dynamic_value)',
    'token = "{0}-{1}".format(user, stamp)',
    # types, attributes and variables passed on in typed code
    "    def __init__(self, token_verifier: TokenVerifier, *, resource_server_url: str | None = None):",
    "    _token_cache: TokenCache | None",
    "def f(token: TokenVerifier):",
    "    token.map = listLines = [startLine, 0]",
    "        await self._add_client_authentication_jwt(token_data=token_data)",
    "          token_lifetime_seconds: Lifetime in seconds for access tokens minted via this rule",
    # a name that says what the value describes
    'password_hash = "Wq7vR2nLp9x#k3"',
    'password_regex: "^[a-zA-Z0-9]{8,}$"',
    'token_type: "Bearer"',
    'secret_name: "db-prod-2"',
    "password_min_length: 12",
]
# Kept as findings on purpose: a password equal to its user's name still opens the host, and a value
# that repeats its setting's name (IRC_PASS=irc_pass) or joins words (blue-sky) may be a weak one.
STILL_FOUND = [
    "https://deploy:Wq7vR2nLp9x@git.acme.io/",
    "mongodb://mongodb:Wq7vR2nLp9x@db01:27017/app",
    'const MONGO = "mongodb://mongodb:mongodb@db01.acme.internal:27017/database";',
    "DB_PASSWORD=Wq7vR2nLp9x",
    "password: hunter2x",
    "self.key_password = 'Wq7vR2nLp9x'",
    "IRC_PASS=irc_pass",
    "the wifi password is correct-horse-battery",
    # a qualifier after the secret's word, C arrays and verbatim strings, comparisons either way
    "GITHUB_TOKEN_READONLY=ghx_Wq7vR2nLp9xk3Zt8mQ",
    'API_KEY_STAGING="Wq7vR2nLp9xk3Zt8"',
    "DB_PASSWORD_PROD=Wq7vR2nLp9x#k3",
    'my_password_secure = @"Wq7vR2nLp9x#k3";',
    'char password[25] = "Wq7vR2nLp9x#k3";',
    'if (db_pass != "Wq7vR2nLp9x#k3") {',
    "        - name: SMTP_PASSWORD_PROD\n          value: Hn4$wQ82pLxz",
]


@pytest.mark.parametrize("text", QUOTE_LOOK_ALIKES + CODE_LOOK_ALIKES)
def test_contractions_roles_code_and_names_that_describe_a_secret_are_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


@pytest.mark.parametrize("text", STILL_FOUND)
def test_a_literal_next_to_those_shapes_is_still_found(text: str) -> None:
    assert any(f.category == "credential" for f in load_ruleset().scan(text)), text
