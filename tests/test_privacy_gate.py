"""How the gate's decisions compose: no allowlisted span, encoding, split or name lets a credential through."""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from mcp_client import tool_error, with_session
from privacy_corpus_build import B62, _crc_token

from pipeline.privacy import load_ruleset

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "workers" / "fake_plan.py"


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# Each credential family: the rule that names it and a value drawn in its documented format.
def _families() -> dict[str, tuple[str, str]]:
    rng = random.Random(44)
    up = string.ascii_uppercase + "234567"
    return {
        "github": ("github-classic-token", _crc_token(rng, "ghp_")),
        "npm": ("npm-access-token", _crc_token(rng, "npm_")),
        "aws": ("aws-access-key-id", "AKIA" + _draw(rng, up, 16)),
        "slack": ("slack-token", f"xoxb-{_draw(rng, string.digits, 12)}-{_draw(rng, string.digits, 13)}-"
                                 f"{_draw(rng, B62, 24)}"),
        "stripe": ("stripe-secret-key", "sk_live_" + _draw(rng, B62, 24)),
        "gitlab": ("gitlab-personal-token", "glpat-" + _draw(rng, B62, 20)),
        "openai": ("openai-project-key", "sk-proj-" + _draw(rng, B62, 48)),
        "anthropic": ("anthropic-api-key", "sk-ant-api03-" + _draw(rng, B62, 93) + "AA"),
        "google": ("google-api-key", "AIza" + _draw(rng, B62, 35)),
        "huggingface": ("huggingface-token", "hf_" + _draw(rng, B62, 34)),
        "sendgrid": ("sendgrid-api-key", f"SG.{_draw(rng, B62, 22)}.{_draw(rng, B62, 43)}"),
    }


FAMILIES = _families()
PASSWORD = "Zq8vN3kLp2Wx"
# Hosts and "domains" an allowlist entry of some rule accepts: the e-mail rule's internal suffixes and
# file extensions, and the documentation words the global allowlist knows.
HOST_SUFFIXES = ("internal", "svc", "corp", "local", "lan", "localdomain", "home.arpa")
FILE_SUFFIXES = ("md", "json", "py", "rs", "png", "js", "yaml", "toml", "txt", "lock")
SHAPES = {
    **{f"clone-at-{s}": "git clone https://oauth2:{secret}@git.acme." + s + "/mono.git" for s in HOST_SUFFIXES},
    **{f"address-at-{s}": "mail {secret}@notes." + s + " today" for s in FILE_SUFFIXES},
    "example-word": "example token {secret}",
    "sample-word": "the sample {secret} works",
    "your-setting": "your_api_key = {secret}",
    "ellipsis-after": "{secret} ...",
    "placeholder-next": "<token> {secret}",
    "xxxx-next": "xxxx {secret}",
    "ellipsis-touching": "use {secret}... then rotate it",
    "unicode-ellipsis-touching": "use {secret}\u2026",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_allowlisted_shape_hides_a_credential_family(family: str, shape: str) -> None:
    rule, secret = FAMILIES[family]
    text = SHAPES[shape].format(secret=secret)
    assert rule in {f.rule_id for f in load_ruleset().scan(text)}, text


@pytest.mark.parametrize("suffix", HOST_SUFFIXES)
def test_a_password_in_a_url_at_an_internal_host_is_found(suffix: str) -> None:
    rules = load_ruleset()
    assert {f.rule_id for f in rules.scan(f"postgres://app:{PASSWORD}@pg.staging.{suffix}:5432/app")} == \
        {"database-url-password"}
    assert {f.rule_id for f in rules.scan(f"https://deploy:{PASSWORD}@git.acme.{suffix}/x.git")} == {"url-password"}


def test_a_url_password_is_judged_by_the_password_whatever_the_host() -> None:
    rules = load_ruleset()
    # A real password on a documentation host is published all the same.
    assert {f.rule_id for f in rules.scan(f"https://admin:{PASSWORD}@api.example.com/v1")} == {"url-password"}
    assert {f.rule_id for f in rules.scan(f"postgres://u:{PASSWORD}@db.test:5432/x")} == {"database-url-password"}
    # The words, templates and variables documentation writes for a password are none, on any host.
    for text in ("https://user:password@db.prod.internal/app", "postgres://app:${DB_PASSWORD}@pg.acme.io/app",
                 "https://deploy:<password>@git.acme.io/x.git", "amqp://guest:guest@localhost:5672/",
                 'f"https://{user}:{token}@github.com/acme/app.git"'):
        assert rules.scan(text) == [], text


@pytest.mark.parametrize("domain", ["firma.rs", "studio.md", "tienda.com.py"])
def test_an_address_at_a_country_domain_named_like_a_file_is_an_address(domain: str) -> None:
    assert [f.rule_id for f in load_ruleset().scan(f"write to jan.novak@{domain} about it")] == ["email-address"]


def test_a_file_name_with_an_at_sign_is_not_an_address() -> None:
    assert load_ruleset().scan("icons live in logo@2x.png and lodash@4.17.21.js") == []


# --- encodings and splits -------------------------------------------------------------------------

TOKEN = FAMILIES["github"][1]


def _encodings() -> dict[str, str]:
    wide = "".join(chr(ord(c) + 0xFEE0) for c in TOKEN)  # full-width forms: NFKC folds them back
    return {
        "full-width": f"token {wide}",
        "hex": f"value {TOKEN.encode().hex()}",
        "escaped-hex": "value " + "".join(f"\\x{b:02x}" for b in TOKEN.encode()),
        "percent": "value " + "".join(f"%{b:02X}" for b in TOKEN.encode()),
        "percent-underscore": f"https://ci.acme.io/hook?t={TOKEN.replace('_', '%5F')}",
        "base64": "value " + base64.b64encode(f"token={TOKEN}".encode()).decode(),
        "base64url": "value " + base64.urlsafe_b64encode(f"{TOKEN}??>".encode()).decode(),
    }


@pytest.mark.parametrize("how", sorted(_encodings()))
def test_an_encoded_token_is_found_and_its_finding_says_how(how: str) -> None:
    text = _encodings()[how]
    findings = load_ruleset().scan(text)
    assert [f.rule_id for f in findings] == ["github-classic-token"], (how, findings)
    assert findings[0].column == 7 or how == "percent-underscore"
    assert TOKEN not in json.dumps([f.as_dict() for f in findings])


def _memory_text(name: str, description: str, body: str, visibility: str = "safe") -> str:
    return (f"---\nname: {name}\ndescription: {description}\ntype: project\nvisibility: {visibility}\n"
            f"created: 2026-11-01\nmodified: 2026-11-01T09:00:00Z\n---\n{body}\n")


def test_a_token_cut_in_three_across_name_description_and_body_is_found() -> None:
    a, b, c = TOKEN[:12], TOKEN[12:27], TOKEN[27:]
    for text in (_memory_text(f"ci {a}", b, c), _memory_text("ci", f"the key is {a}", f"{b}\n{c}"),
                 _memory_text("ci", "the key", f"- {a}\n- {b}\n- {c}")):
        assert [f.rule_id for f in load_ruleset().scan(text)] == ["github-classic-token"], text


def test_a_masked_span_covers_every_piece_of_an_encoded_token() -> None:
    text = _encodings()["hex"]
    (start, end, rule), = load_ruleset().spans(text, ("credential",))
    assert (text[:start], text[end:], rule) == ("value ", "", "github-classic-token")


# --- names --------------------------------------------------------------------------------------

AWS_ID = FAMILIES["aws"][1]


@pytest.mark.parametrize("name", [f"project_{AWS_ID}.md", f"reference_ci-{AWS_ID}-key.md", f"{AWS_ID}.md",
                                  f"user_{TOKEN}.md"])
def test_a_credential_glued_into_a_file_name_is_found(name: str) -> None:
    assert load_ruleset().scan_name(name), name


@pytest.mark.parametrize("name", ["project_deploy-target.md", "feedback_use-real-db.md", "project_v2-api-2026.md",
                                  "reference_token-rotation.md", "project_sha256-pinning.md"])
def test_a_name_in_words_holds_no_credential(name: str) -> None:
    assert load_ruleset().scan_name(name) == []


# --- through every entry point ------------------------------------------------------------------

CLONE = f"git clone https://oauth2:{TOKEN}@git.acme.internal/mono.git"
PG = f"postgres://app:{PASSWORD}@pg.staging.svc:5432/app"
COMPOSED = {"clone": (CLONE, TOKEN), "postgres": (PG, PASSWORD)}


def _nowhere_public(env: Env, value: str) -> None:
    """Neither the mirror nor anything else under the project holds ``value``."""
    for path in env.project.rglob("*"):
        if path.is_file():
            assert value.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("case", sorted(COMPOSED))
def test_add_and_update_refuse_a_composed_secret(env: Env, case: str) -> None:
    text, value = COMPOSED[case]
    refused = env.run("--json", "add", "project_clone", "-d", "how CI clones", "--visibility", "safe", "-b", text)
    assert refused.code == 1 and refused.json()["code"] == "privacy.credential", refused.out + refused.err
    assert value not in refused.out + refused.err
    assert env.run("add", "project_clone", "-d", "how CI clones", "--visibility", "safe", "-b", "ask ops").code == 0
    updated = env.run("--json", "update", "project_clone", "-b", text)
    assert updated.code == 1 and updated.json()["code"] == "privacy.credential"
    assert (env.mirror / "project_clone.md").read_text().endswith("ask ops\n")
    _nowhere_public(env, value)


def test_mcp_memory_add_refuses_a_composed_secret(env: Env) -> None:
    assert env.run("init").code == 0

    async def body(session: Any) -> Any:
        return [await session.call_tool("memory_add", {"name": f"project_{case}", "description": "how CI clones",
                                                       "body": COMPOSED[case][0], "visibility": "safe"})
                for case in sorted(COMPOSED)]

    for result in with_session(env.home, env.project, body):
        assert tool_error(result)["code"] == "privacy.credential"
    _nowhere_public(env, TOKEN)
    _nowhere_public(env, PASSWORD)


def test_a_workers_plan_with_a_composed_secret_is_refused(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    assert env.run("add", "project_alpha", "-d", "alpha fact", "-b", "alpha").code == 0
    content = _memory_text("project_clone", "how CI clones", CLONE)
    op = {"name": "project_clone.md", "kind": "create", "classification": "safe", "content": content}
    worker = {"argv": [sys.executable, str(FAKE), "{run_dir}", "patch", json.dumps([["append", ["operations"], op]])],
              "timeout": 60, "env": ["PYTHONPATH"]}
    (env.home / "config.yaml").write_text(json.dumps({"workers": {"fake": worker}}) + "\n")
    result = env.run("--json", "consolidate", "--no-context", "--worker", "fake")
    assert result.code == 1 and result.json()["code"] == "privacy.credential", result.out + result.err
    assert not (env.mirror / "project_clone.md").exists()
    _nowhere_public(env, TOKEN)


def test_import_leaves_out_a_composed_secret(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude"
    source.mkdir()
    (source / "project_clone.md").write_text(_memory_text("project_clone", "how CI clones", CLONE))
    (source / "project_pg.md").write_text(_memory_text("project_pg", "staging database", PG))
    env.run("import", "claude", str(source))
    assert not (env.mirror / "project_clone.md").exists() and not (env.mirror / "project_pg.md").exists()
    _nowhere_public(env, TOKEN)
    _nowhere_public(env, PASSWORD)


@pytest.mark.parametrize("case", sorted(COMPOSED))
def test_mirror_check_flags_a_composed_secret_placed_by_hand(env: Env, case: str) -> None:
    assert env.run("add", "project_alpha", "-d", "alpha fact", "--visibility", "safe", "-b", "alpha").code == 0
    path = env.mirror / "project_alpha.md"
    path.write_text(path.read_text().replace("alpha\n", COMPOSED[case][0] + "\n"))
    result = env.run("--json", "mirror", "check")
    assert result.code == 7, result.out + result.err
    rule = {"clone": "github-classic-token", "postgres": "database-url-password"}[case]
    assert f"{rule} (" in result.out + result.err
    assert COMPOSED[case][1] not in result.out + result.err


def test_mirror_check_flags_a_file_name_carrying_an_aws_key_id(env: Env) -> None:
    assert env.run("add", "project_alpha", "-d", "alpha fact", "--visibility", "safe", "-b", "alpha").code == 0
    (env.mirror / f"project_{AWS_ID}.md").write_bytes((env.mirror / "project_alpha.md").read_bytes())
    result = env.run("mirror", "check")
    assert result.code == 7 and "aws-access-key-id" in result.out + result.err
    assert AWS_ID not in result.out + result.err


@pytest.mark.parametrize("visibility", ["private", "safe"])
def test_a_title_carrying_a_credential_is_refused_naming_the_rule(env: Env, visibility: str) -> None:
    result = env.run("--json", "add", f"deploy key {AWS_ID}", "-d", "where the deploy key lives",
                     "--visibility", visibility, "-b", "in the vault")
    assert result.code == 1, result.out + result.err
    error = result.json()
    assert error["code"] == "privacy.credential" and "aws-access-key-id" in error["message"]
    assert AWS_ID not in result.out + result.err and AWS_ID.lower() not in result.out + result.err
    assert not (env.home / "projects").exists() or not any(env.harness.iterdir())


def test_a_file_name_carrying_a_credential_is_refused_by_add(env: Env) -> None:
    result = env.run("--json", "add", f"project_{AWS_ID}.md", "-d", "where the deploy key lives", "-b", "vault")
    assert result.code == 1 and result.json()["code"] == "privacy.credential"
    assert AWS_ID not in result.out + result.err


def test_inject_masks_a_credential_in_a_name_written_by_a_host(env: Env) -> None:
    assert env.run("add", "project_alpha", "-d", "alpha fact about the deploy", "-b", "alpha deploy").code == 0
    text = (env.harness / "project_alpha.md").read_text().replace("project_alpha", f"project_{AWS_ID}")
    (env.harness / f"project_{AWS_ID}.md").write_text(text)  # as a host writes its memory files
    block = env.run("inject", "--query", "deploy")
    assert block.code == 0, block.err
    assert AWS_ID not in block.out
    assert "- [redacted: aws-access-key-id] [private, project]" in block.out
    assert "### [redacted: aws-access-key-id] (private)" in block.out
