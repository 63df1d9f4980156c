"""Rules file validation, documentation allowlist, finding fields and user-supplied rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import Env, spawn_probed

from pipeline.errors import ConfigError
from pipeline.privacy import Finding, RuleSet, load_ruleset, scan_bytes
from pipeline.resources import data_dir, load_schema

TOKEN = "ghp_" + "Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9"  # 40 chars, format-valid, fake


def test_shipped_rules_validate_against_the_schema() -> None:
    document = yaml.safe_load((data_dir("schemas") / "privacy-rules.yaml").read_text("utf-8"))
    schema = load_schema("privacy-rules.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(document)
    ids = [r["id"] for r in document["rules"]]
    assert len(ids) == len(set(ids))


def test_default_ruleset_is_cached_and_compiled_with_re2() -> None:
    import re2

    ruleset = load_ruleset()
    assert load_ruleset() is ruleset
    assert isinstance(ruleset, RuleSet)
    for rule in ruleset.rules:
        assert isinstance(rule.pattern.compiled, re2._Regexp), rule.id
        assert rule.allowlist is None or isinstance(rule.allowlist.compiled, re2._Regexp)
    assert isinstance(ruleset.allowlist.compiled, re2._Regexp)


def test_every_shipped_rule_compiles_eagerly_with_its_secret_group() -> None:
    """The shipped rules are compiled lazily at run time, so their compile-time checks run here."""
    from pipeline.privacy import loader, patterns

    document = loader._parse_rules_file(data_dir("schemas") / loader.RULES_FILE)
    for raw in document["rules"]:
        rule = patterns.compile_rule(raw, "shipped", lazy=False)
        assert rule.pattern.groups >= rule.secret_group, rule.id
    assert patterns.compile_alternation(document.get("allowlist", []), "shipped allowlist") is not None


def test_a_shipped_pattern_is_compiled_only_when_its_keyword_occurs() -> None:
    from pipeline.privacy import loader

    ruleset = loader._build(*_shipped_args(loader), shipped_allowlist=True)
    assert all(r.pattern._compiled is None for r in ruleset.rules)
    findings = ruleset.scan("token ghp_Zq8vR2mX4kT9wL1nB6yC3pH7sD0fJ5gA2eKx")
    assert [f.rule_id for f in findings] == ["github-classic-token"]
    github = next(r for r in ruleset.rules if r.id == "github-classic-token")
    assert github.pattern._compiled is not None
    assert sum(r.pattern._compiled is not None for r in ruleset.rules if r.keywords) < len(ruleset.rules) // 2


def _shipped_args(loader: Any) -> tuple[list[Any], list[str], list[str]]:
    document = loader._parse_rules_file(data_dir("schemas") / loader.RULES_FILE)
    rules = list(document["rules"])
    return rules, [loader.RULES_FILE] * len(rules), list(document.get("allowlist", []))


def test_import_does_not_load_heavy_modules() -> None:
    code = "import sys, pipeline.privacy; print([m for m in ('re2', 'yaml', 'jsonschema') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


DOCUMENTATION_VALUES = [
    "write to user@example.com for access",
    "mail alice@example.org or bob@sub.example.net",
    "the address example@gmail.com is a placeholder",
    "host db.staging.example resolves in the lab",
    "https://admin:password@api.example.com/v1",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN=ghp_" + "x" * 36,
    "API_KEY=XXXX",
    "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx",
    "TOKEN=<token>",
    "OPENAI_API_KEY=<your-api-key>",
    "PASSWORD=${DB_PASSWORD}",
    "PASSWORD=$DB_PASSWORD",
    "token: {{ vault_github_token }}",
    "PASSWORD=changeme",
    "SECRET=***",
    "SECRET=********",
    "TOKEN=…",
    "API_KEY=your_token_here",
    "password: YOUR_PASSWORD",
    "Authorization: Bearer <token>",
    'curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com',
    "postgres://postgres:postgres@localhost:5432/app",
    "cd /home/user/project && make",
    "cd ~/project && make",
    "cp .env $HOME/backup/",
    "edit /root/.bashrc",
    "Stripe test card 4242 4242 4242 4242",
    "IBAN GB82 WEST 1234 5698 7654 32 from the spec",
    "SSN format 123-45-6789",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "docs hosts 192.0.2.1, 198.51.100.7 and 203.0.113.9",
    "private 10.1.2.3, 172.16.5.4, 192.168.0.10, loopback 127.0.0.1, link-local 169.254.1.1, any 0.0.0.0",
    "v6 docs 2001:db8::1, loopback ::1, ula fd12:3456:789a::1, link-local fe80::1",
    "webhook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "remote git@github.com:acme/app.git",
]


# Lines of the training sources that look like secrets and are none.
LOOK_ALIKES = [
    # references: a Jenkins credential id, a .NET user-secrets id (gitleaks generic.go fps), Terraform
    # variables (terraform-aws-modules/terraform-aws-rds main.tf), environment reads
    "withCredentials([usernamePassword(credentialsId: '29f63271-dc2f-4734-8221-5b31b5169bac', "
    "usernameVariable: 'USERNAME', passwordVariable: 'PASSWORD')]) {",
    "credentialsId: 'ff083f76-7804-4ef1-80e4-fe975bb9141b'",
    "  <UserSecretsId>79a3edd0-2092-40a2-a04d-dcb46d5ca9ed</UserSecretsId>",
    "password_wo                         = var.manage_master_user_password ? null : var.password_wo",
    "manage_master_user_password         = var.manage_master_user_password",
    # the key a secret is stored under, in an ExternalSecret (external-secrets docs/snippets)
    "  data:\n  - secretKey: database-password\n    remoteRef:\n      key: database-credentials\n      property: password",
    # placeholders (gitleaks slack.go fps)
    "xoxe.xoxp-1-RANDOMSTRINGHERE",
    "xoxb-xoxb-my-bot-token",
    '"token4": "xoxp-572370529330-573807301142-572331691188-####################"',
    # package names and checksums (external-secrets go.sum, gitleaks generic.go fps)
    "github.com/golang-jwt/jwt/v4 v4.5.2 h1:YtQM7lnr8iZ+j5q71MGKkNw9Mn7AjHM68uc9g5fXeUI=",
    'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
    # a URL's userinfo is no address; a template password is none (secretlint basicauth ok snapshot)
    'const MONGO_SRV = "mongodb+srv://user:password@cluster.mongodb.net/db";',
    'const API_URL = "https://${username}:${password}@api.example.com/v1";',
]


@pytest.mark.parametrize("text", DOCUMENTATION_VALUES + LOOK_ALIKES)
def test_documentation_values_are_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == []


def test_finding_position_fields_and_redaction() -> None:
    text = "first line\nsecond line\nnaïve café — token is " + TOKEN + " ok\n"
    findings = load_ruleset().scan(text, file="notes/a.md")
    assert len(findings) == 1
    finding = findings[0]
    assert isinstance(finding, Finding)
    assert (finding.rule_id, finding.category) == ("github-classic-token", "credential")
    assert (finding.file, finding.line) == ("notes/a.md", 3)
    line3 = text.splitlines()[2]
    assert finding.column == line3.index(TOKEN) + 1
    assert finding.preview == "ghp_…[40 chars]"
    for rendered in (repr(finding), finding.describe(), json.dumps(finding.as_dict(), ensure_ascii=False)):
        assert TOKEN not in rendered
        assert TOKEN[4:] not in rendered
        assert TOKEN[:8] not in rendered
    assert finding.describe() == (
        f"notes/a.md:3:{finding.column}: github-classic-token (credential): "
        f"GitHub personal access token (classic) [ghp_…[40 chars]]"
    )
    assert finding.as_dict()["ruleId"] == "github-classic-token"


def test_findings_are_sorted_and_deduplicated_per_span() -> None:
    text = f"GITHUB_TOKEN={TOKEN}\nmail jane.roe@acmecorp.io\nx {TOKEN}"
    findings = load_ruleset().scan(text)
    assert [(f.line, f.rule_id) for f in findings] == [
        (1, "github-classic-token"),
        (2, "email-address"),
        (3, "github-classic-token"),
    ]


def test_scan_bytes_replaces_invalid_utf8() -> None:
    data = b"\xff\xfe bad bytes\n\xc3( " + TOKEN.encode() + b"\n"
    findings = scan_bytes(load_ruleset(), data, "blob.bin")
    assert [(f.rule_id, f.file, f.line, f.column) for f in findings] == [
        ("github-classic-token", "blob.bin", 2, 4)
    ]


USER_RULE = {
    "id": "acme-internal-token",
    "category": "credential",
    "description": "ACME internal service token",
    "pattern": r"\b(acme_[a-z0-9]{16})\b",
    "keywords": ["acme_"],
    "secret_group": 1,
    "preview_prefix": 4,
}


def test_user_rules_and_allowlist_entries_work() -> None:
    ruleset = load_ruleset(extra_rules=[USER_RULE], extra_allowlist=[r"^acme_0{16}$"])
    assert ruleset is not load_ruleset()
    hits = ruleset.scan("svc token acme_k2j4h5g6f7d8s9a1")
    assert [(f.rule_id, f.preview) for f in hits] == [("acme-internal-token", "acme…[21 chars]")]
    assert ruleset.scan("svc token acme_0000000000000000") == []
    allowing = load_ruleset(extra_allowlist=[r"(?i)@acmecorp\.io$"])
    assert allowing.scan("mail jane.roe@acmecorp.io") == []
    assert load_ruleset().scan("mail jane.roe@acmecorp.io") != []


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"category": "secrets"}, "acme-internal-token"),
        ({"id": "Bad_Id"}, "Bad_Id"),
        ({"pattern": r"acme_(?=[a-z])"}, "acme-internal-token"),
        ({"pattern": r"(a)\1"}, "acme-internal-token"),
        ({"keywords": ["ACME_"]}, "acme-internal-token"),
        ({"check": "entropy"}, "acme-internal-token"),
        ({"check": "no-such-check"}, "acme-internal-token"),
        ({"secret_group": 3}, "acme-internal-token"),
        ({"preview_prefix": 9}, "acme-internal-token"),
        ({"unknown": 1}, "acme-internal-token"),
        ({"id": "github-classic-token"}, "github-classic-token"),
    ],
)
def test_invalid_user_rules_raise_config_error_naming_the_rule(change: dict[str, object], needle: str) -> None:
    rule = {**USER_RULE, **change}
    with pytest.raises(ConfigError) as info:
        load_ruleset(extra_rules=[rule])
    assert needle in str(info.value)


def test_missing_required_field_names_the_rule() -> None:
    rule = {k: v for k, v in USER_RULE.items() if k != "pattern"}
    with pytest.raises(ConfigError, match="acme-internal-token"):
        load_ruleset(extra_rules=[rule])


@pytest.mark.parametrize("entry", ["(?<=a)b", "", "a{2,1}"])
def test_invalid_allowlist_entries_raise_config_error(entry: str) -> None:
    with pytest.raises(ConfigError, match="allowlist"):
        load_ruleset(extra_allowlist=[entry])


def test_the_parsed_rules_are_cached_in_the_home_and_a_stale_cache_is_ignored_and_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.privacy import loader
    from pipeline.resources import data_dir
    from pipeline.store import filecache

    shipped = yaml.safe_load((data_dir("schemas") / loader.RULES_FILE).read_text(encoding="utf-8"))
    monkeypatch.setattr(loader, "_MEMO", {})
    (tmp_path / "home").mkdir()
    assert len(loader.load_ruleset(cache_home=str(tmp_path / "home")).rules) == len(shipped["rules"])
    cache = Path(loader.rules_cache(tmp_path / "home"))
    doc = json.loads(cache.read_text())
    assert doc["value"] == shipped
    doc["value"]["rules"] = doc["value"]["rules"][:1]
    doc["key"][2] += 1  # written for another version of the rules file
    cache.write_text(json.dumps(doc))
    monkeypatch.setattr(loader, "_MEMO", {})
    assert len(loader.load_ruleset(cache_home=str(tmp_path / "home")).rules) == len(shipped["rules"])
    # The stale entry is replaced: the next process reads the current rules from the cache.
    rewritten = json.loads(cache.read_text())
    assert rewritten["key"] == json.loads(json.dumps(filecache.identity(data_dir("schemas") / loader.RULES_FILE)))
    assert rewritten["value"] == shipped


def test_two_installations_sharing_a_home_each_keep_their_parsed_rules(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.privacy import loader

    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    legacy = home / "cache" / loader.LEGACY_CACHE_NAME
    legacy.write_text('{"key": null, "value": null}')  # the one file all installations once shared
    installs = ("/opt/memfold-a/pipeline/privacy", "/home/dev/memfold/pipeline/privacy")

    def load_as(install: str) -> Path:
        """A fresh process of the installation at ``install`` loading the shipped rules."""
        monkeypatch.setattr(loader.os.path, "abspath", lambda _path: f"{install}/loader.py")
        monkeypatch.setattr(loader, "_MEMO", {})
        assert loader.load_ruleset(cache_home=str(home)).rules  # read (and compiled) on first use
        return Path(loader.rules_cache(home))

    first, second = (load_as(install) for install in installs)
    assert first != second and first.is_file() and second.is_file()
    assert json.loads(first.read_bytes()) == json.loads(second.read_bytes())  # the same shipped rules
    assert not legacy.exists()
    # Each installation's next process finds its own entry: the YAML is not parsed again.
    monkeypatch.setattr(loader, "_parse_rules_file", lambda _path: pytest.fail("parsed the YAML again"))
    for install in installs:
        load_as(install)


def test_a_text_scanned_again_gets_the_same_findings_without_a_second_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    ruleset = load_ruleset()
    ruleset.forget()
    scans: list[str] = []
    original = RuleSet._kept_hits

    def counted(self: RuleSet, text: str, data: bytes, categories: Any = None) -> Any:
        scans.append(text)
        return original(self, text, data, categories)

    monkeypatch.setattr(RuleSet, "_kept_hits", counted)
    secret = "deploy notes\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9ExampleKeyZ3\n"
    first = ruleset.scan(secret, "plan content")
    again = ruleset.scan(secret, ".memory/project_deploy.md")
    assert first and [(f.rule_id, f.line, f.column) for f in again] == [(f.rule_id, f.line, f.column) for f in first]
    assert {f.file for f in again} == {".memory/project_deploy.md"}
    assert scans == [secret]
    # Remembered by the whole text: one character more is a new text, scanned and judged on its own.
    clean = "deploy notes\nthe key is in the vault\n"
    assert ruleset.scan(clean) == [] and ruleset.scan(clean) == []
    edited = clean + "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ9ExampleKeyZ3\n"
    assert ruleset.scan(edited) != []
    assert scans == [secret, clean, edited]
    ruleset.forget()
    ruleset.scan(secret)
    assert scans[-1] == secret and len(scans) == 4


def _corpus_texts(limit: int) -> list[str]:
    data = Path(__file__).parent / "data" / "privacy"
    texts = [row["text"] for row in yaml.safe_load((data / "positives.yaml").read_text("utf-8"))]
    for name in ("positives.jsonl", "benign.jsonl"):
        with open(data / "corpus" / name, encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for line, _ in zip(fh, range(limit), strict=False) if line.strip()]
    return texts


def test_verdicts_kept_from_earlier_texts_leave_every_later_finding_as_a_fresh_scan_gives_it() -> None:
    # One rule set scans the labelled texts in a row, deciding each (rule, match) once; the other
    # forgets everything before each text. Each text is also scanned again inside a line of an
    # index, where the same matches stand at other offsets.
    ruleset = load_ruleset()
    texts = _corpus_texts(400)
    texts += [f"- [x](x.md) — {text}\n" for text in texts]
    ruleset.forget()
    kept = [ruleset.scan(text) for text in texts]
    decided = len(ruleset._verdicts)
    found = []
    for text in texts:
        ruleset.forget()
        found.append(ruleset.scan(text))
    assert kept == found
    assert sum(map(bool, found)) > 300 and decided > 300  # real findings, real verdicts reused


def test_a_match_met_again_is_judged_once_and_reported_at_each_place(monkeypatch: pytest.MonkeyPatch) -> None:
    ruleset = load_ruleset()
    ruleset.forget()
    judged: list[tuple[str, bytes, bytes]] = []
    original = RuleSet._verdict

    def counted(self: RuleSet, rule: Any, secret: bytes, whole: bytes) -> str | None:
        judged.append((rule.id, secret, whole))
        return original(self, rule, secret, whole)

    monkeypatch.setattr(RuleSet, "_verdict", counted)
    token = "ghp_4fT9kLm2Qx8vB7nR1zW3yH6jD0sA5cE9uPqX"
    text = f"github token {token}\nagain: {token}\n"
    findings = ruleset.scan(text, "notes")
    assert [(f.line, f.column) for f in findings] == [(1, 14), (2, 8)]
    assert len({f.rule_id for f in findings}) == 1 and all(token not in f.preview for f in findings)
    # Every rule that matched the token judged it once, though it stands twice.
    on_token = [entry for entry in judged if entry[1] == token.encode()]
    assert on_token and len(on_token) == len(set(on_token)) == len({rule for rule, _, _ in on_token})
    # Another text with the same token: found at its own place, with no new judgement.
    count = len(judged)
    later = ruleset.scan(f"old line\n\nagain: {token}", "other")
    assert [(f.line, f.column, f.file, f.rule_id) for f in later] == [(3, 8, "other", findings[0].rule_id)]
    assert [e for e in judged[count:] if e[1] == token.encode()] == []
    ruleset.forget()
    ruleset.scan(text)
    assert len([e for e in judged if e[1] == token.encode()]) == 2 * len(on_token)


# Which steps of loading the shipped rules a memfold process took.
_RULES_USED = """
seen = []


class _Imports:  # records the compilers' modules as they are imported, the loader's own import included
    def find_spec(self, name, path=None, target=None):
        if name in ("pipeline.privacy.patterns", "pipeline.privacy.checks"):
            seen.append(name)


sys.meta_path.insert(0, _Imports())
from pipeline.privacy import loader
build, document = loader._build, loader._default_document
loader._build = lambda *a, **k: seen.append("build") or build(*a, **k)
loader._default_document = lambda *a, **k: seen.append("read") or document(*a, **k)
"""


def _rules_used(env: Env, *args: str) -> tuple[int, str, str]:
    code, seen, err = spawn_probed(env, _RULES_USED, *args)
    return code, ",".join(seen), err


def test_the_shipped_rules_are_read_only_when_a_write_scans_something(env: Env) -> None:
    assert env.run("add", "project_warm", "-d", "warms the caches", "--visibility", "safe").code == 0
    assert _rules_used(env, "add", "project_alpha", "-d", "alpha deploys on fridays")[0] == 0  # keeps the digest
    # A private memory changes no mirror file: the digest the home keeps is all the gate asks for.
    # Nor does it import the pattern compilers and the check functions they name.
    code, used, err = _rules_used(env, "add", "project_beta", "-d", "beta runs the smoke tests")
    assert code == 0 and used == "", err
    # A safe one changes the mirror: the rules are read, compiled and applied.
    code, used, err = _rules_used(env, "add", "project_gamma", "-d", "gamma's deploy key", "--visibility", "safe",
                                  "-b", f"token {TOKEN}")
    assert code != 0 and "privacy." in err and TOKEN not in err
    assert "build" in used.split(",") and "pipeline.privacy.patterns" in used.split(",")
    assert not (env.harness / "project_gamma.md").exists() and not (env.mirror / "project_gamma.md").exists()


# --- mechanisms, with examples from the training sources (tests/data/privacy/corpus/SOURCES.md) -----------

# (rule, text): gitleaks' and Semgrep's written examples, and values drawn here in a vendor's format.
MECHANISM_FINDINGS = [
    # curl -u / --user: quoted halves, an empty half, braces (gitleaks cmd/generate/config/rules/curl.go)
    ("cli-user-password", "curl -u \":d2LkV78zLx!t\" https://localhost:9200"),
    ("cli-user-password", "curl -u \"d2LkV78zLx!t:\" https://localhost:9200"),
    ("cli-user-password", "curl -sw '%{http_code}' -X POST --user  'johns:h0pk1ns~21s' $GItHUB_API_URL/$GIT_COMMIT --data"),
    ("cli-user-password", 'curl -s -v --user "j.smith:dB2yF6@qL9vZm1P#4J" "https://api.contoso.org/user/me"'),
    ("authorization-bearer", 'curl -H "Authorization: Api-Token 22cb987851bc5659l29114c62e60c79abd0d2c08" --request PUT'),
    # a URL password whatever the host (Semgrep detected-username-and-password-in-uri)
    ("url-password", 'curl -kvsX PUT \\"https://user123:passw0rD1&@something.host.test:8088/search/\\"'),
    ("url-password", "https://username:passworD123*@example.com"),
    # vendor formats the rules lacked (Semgrep's amazon-mws, appsync, outlook-team tests)
    ("amazon-mws-token", "amzn.mws.00a19111-8311-5311-5391-5e211cbfcd5c"),
    ("aws-appsync-api-key", "da2-vphx3xhhzbhutep25pfcgdzlte"),
    ("microsoft-teams-webhook", "https://outlook.office.com/webhook/9e10b0f2-b994-4bff-b106-473c37cdc555@"
                                "0e7a5f0e-1234-4b8f-9c11-7d6e5f4a3b2c/IncomingWebhook/5b8e3f7a9c1d2e4f6a8b0c2d4e6f8a0b/"
                                "3c2b1a09-8f7e-4d6c-b5a4-938271605f4e"),
    # a token next to a vendor's name, no credential word (values drawn in each vendor's documented shape)
    ("vendor-keyed-token", "sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"),
    ("vendor-keyed-token", "my stripe thing is 9fK2mQx7LpR4tZ8wVn3bHc6Y, don't share"),
    ("vendor-keyed-token", "SOFTLAYER: 4d1f9a7c0e3b8d2a6f5c9e1b7a3d0f8c2e6b4a9d1c7f3e0b5a8d2c6f9e1b4a7d"),
    # code comparing a secret with a literal
    ("secret-comparison", 'if (secret == "q8Zr2LwPx9vK4mTn") {'),
    ("secret-comparison", 'if (password.equals("Tr0ub4dor&3x")) return true;'),
    # crackable password hashes (hashcat's documented formats, values drawn here)
    ("password-hash", "$krb5tgs$23$*svc_sql$ACME.LOCAL$http/web01*$5e1c2b9a8f7d6e4c0f3e2d1c4b5a6978$"
     + "8796a5b4c3d2e1f0" * 12),
    ("netntlmv2-hash", "jdoe::ACME:5e1c2b9a8f7d6e4c:0f3e2d1c4b5a69788796a5b4c3d2e1f0:0101000000000000" + "9f3c" * 20),
    # a PostgreSQL password file line; a secret handed to a setter or a Gradle DSL line
    ("pgpass-password", "pg.acme.internal:5432:billing:svc_billing:Wq4#pT8vLz2K"),
    ("secret-call-argument", 'credentials {\n  username "ci"\n  password "Wq4#pT8vLz2Kx"\n}'),
    # tools that take a password after -p
    ("cli-password-argument", r"psexec \\web01 -u ACME\deploy -p Zq9xLm2Rv8Tn4 cmd.exe"),
    # where the syntax says "password", a plain word is one: a tool's own slot, a connection string's
    # Pwd=, a password setting alone on its line (whispers tests/fixtures: settings.env, java.properties)
    ("cli-password-argument", r"psexec \\web01 -u ACME\deploy -p marmalade cmd.exe"),
    ("cli-password-argument", "sshpass -p dragonfly ssh deploy@10.0.0.7"),
    ("connection-string-password", "Driver={SQL Server};Server=db01;Uid=report;Pwd=marmalade;"),
    ("config-line-word-password", "SSHpassword=hardcoded"),
    ("config-line-word-password", "DB_USER=demo\nREACT_APP_DB_PASS=marmalade\n"),
    ("config-line-word-password", "  - DB_PASSWORD: dragonfly"),
    # impacket's [domain/]user:password@target (impacket's examples/README)
    ("impacket-target-password", "psexec.py ACME/svc_backup:Vr8!kP2qLm@10.20.0.15"),
    ("impacket-target-password", "impacket-wmiexec administrator:Passw0rd1@10.10.10.4 whoami"),
    # markup: a secret-named element, key/value and name/value pairs (whispers hardcoded.xml,
    # integration.xml, integration.yml; Maven settings.xml, .NET appSettings, Kubernetes env)
    ("markup-secret-element", "<server><id>acme</id><password>Tq7#vLm29xKa</password></server>"),
    ("secret-name-value-pair", '<add key="SmtpPassword" value="Hn4$wQ82pLxz" />'),
    ("secret-name-value-pair", '<property name="password" value="Rk2!mZ7qWp4n"/>'),
    ("secret-name-value-pair", "    <entry>\n        <key>business.password</key>\n        <value>hardcoded2</value>"),
    ("secret-name-value-pair", "  secrets:\n    - key: pro_password\n      value: hardcoded1"),
    ("secret-name-value-pair", 'env:\n  - name: DB_PASSWORD\n    value: "Rk2!mZ7qWp4n"'),
    # a secret-named subscript or a numbered name (whispers language.php, language.java)
    ("secret-assignment-quoted", "$config['db_password'] = 'hardcoded3';"),
    ("secret-assignment-quoted", 'String static_password01 = "hardcoded0";'),
    ("secret-assignment", "api.key=dGhpc2lzYWhhcmRjb2RlZHN0cmluZzpECghardcoded03"),
    # a flag that ends in password, secret or token (whispers language.sh)
    ("cli-secret-flag", "curl --tlspassword YXNkZmZmZmZm_HARDcoded https://localhost"),
]


# Texts of the training sources where a password's place is taken by something else (whispers'
# Compliant fixtures, gitleaks' fps): none is reported.
SLOT_LOOK_ALIKES = [
    "baseDN=LDAP\nusername=admin\npassword=\nsonar.jdbc.password=\napi.key=",
    "MasterUserPassword: !Ref 'MasterUserPassword'",
    "02_variable_password: $$password",
    "  password: password\n  MasterUserPassword: <% PASSWORD_HERE %>",
    "password = asdf",
    'variable_password8 = "obj.aFunctionCall()";',
    "psexec \\\\srv -u admin -p password cmd",
    "- name: DB_USER\n  value: admin",
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db-credentials\n      key: password",
    '<input type="hidden" name="authenticity_token" value="7SWa-Fo1_hsC6oovfBsJFLGPUl2EhkSWPbJhWANwgaJWBDl1vxd9VNqXTNAefsJqzIRYaZEfYZLffa31rw8zJA">',
    "password: required",
    "DB_PASSWORD=",
    "wget --user=admin --ask-password https://localhost",
]


@pytest.mark.parametrize("text", SLOT_LOOK_ALIKES)
def test_a_password_slot_holding_a_reference_a_name_or_a_filler_is_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


@pytest.mark.parametrize(("rule", "text"), MECHANISM_FINDINGS)
def test_each_mechanism_finds_its_shape(rule: str, text: str) -> None:
    assert rule in {f.rule_id for f in load_ruleset().scan(text)}, text


# (rule, line, text): shapes of trufflehog's detector tests and detect-secrets' keyword tables (training
# sources), values drawn here. A key named only ``Key`` or ``<vendor>_key``, a literal compared first,
# and a literal handed over after a secret-named string.
LABEL_AND_CODE_FINDINGS = [
    ("keyed-label-token", 2, "[INFO] Sending request to the acme API\n[DEBUG] Using Key=rQ7vT2xL9kMw3NpZ8cYb5H\n"),
    ("keyed-label-token", 3, "# config.yaml\napi:\n  cashflow_key: \"Hq2vR8mZp7TnW4yXk29f\"\n  base_url: /v1"),
    ("keyed-label-token", 1, "acme token - 'Zr8Kq2vLm7Tx4NwP9cYb'"),
    ("secret-comparison-reversed", 1, 'if ("Tr0ub4dor&3xQ" == password) {'),
    ("secret-comparison-reversed", 2, 'func ok(in string) bool {\n\treturn "q8Zr2LwPx9vK4mTn" !== my_super_password\n}'),
    ("secret-named-argument", 2, "<?php\ndefine('DB_PASSWORD', 'Wq4#pT8vLz2K');"),
    ("secret-named-argument", 1, 'headers.put("X-Api-Key", "Kq8vR2mZp7TnW4yXk29f");'),
    # WordPress' keys and salts (a secret's word before KEY, and SALT), and Django's SECRET_KEY by default
    ("secret-named-argument", 1, "define('NONCE_KEY', '}Fq>>0a{> akZdJ1K3c}([(:x;K[)ZQ3F3cttqpd EFORd.%R|*|rdRs#-L-&)P1');"),
    ("secret-named-argument", 1, "define( 'LOGGED_IN_SALT', 'of@~yp:v@SK;Y}hzUo4=bz9WmX&vEw5TO dD$<2djGcE+Qz,Sb9i:{+U<#eM-RmE' );"),
    ("secret-named-argument", 1, 'os.environ.setdefault("SECRET_KEY", "q8Zr2LwPx9vK4mTn7cYb")'),
    # a password setting whose name holds a word ending in "pass", or ends in "pass" after a product
    ("prose-password", 1, "ssl_bypass_password = Wq7vR2nLp9x"),
    ("secret-assignment", 1, "mysqlpass = Wq7vR2nLp9x"),
    # a random salt holding something in angle brackets that is no placeholder: <q+!qK>
    ("secret-named-argument", 1, "define('NONCE_SALT', ':9URM*n56|I|Rf$|ud0cFJ<KAA<1h_w]A!/?])<q+!qK>+Lq&j9^-!{%%pW. ,Z=');"),
    # a user and a password as a pair after a login word, and a URL password whose colons a properties
    # file escapes (Gradle's distributionUrl): shapes written from the tools' documentation
    ("prose-credential-pair", 1, "creds: admin/Tr0ub4dor3x"),
    ("prose-credential-pair", 2, "staging box\ncredentials are deploy:Tr0ub4dor3x"),
    ("prose-credential-pair", 1, "login with admin / Tr0ub4dor3x, then rotate it"),
    ("url-password", 1, "distributionUrl=https\\://deploy:Tr0ub4dor3x@repo.acme.io/gradle-8.5-bin.zip"),
    ("url-password", 1, "distributionUrl=https\\://deploy\\:Tr0ub4dor3x@repo.acme.io/gradle-8.5-bin.zip"),
]

# Their look-alikes: words, references, empty literals, digests, identifiers and addresses at a
# placeholder domain.
LABEL_AND_CODE_LOOK_ALIKES = [
    "cache_key = build-output-linux-x64",
    "Key=Value pairs are separated by semicolons",
    "sort_key: created_at_desc_2024",
    "the signing key = sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    'if ("" == password) {',
    'if ("${DB_PASSWORD}" == password) {',
    "define('DB_PASSWORD', getenv('DB_PASSWORD'));",
    'os.getenv("API_TOKEN", "")',
    'headers.put("X-Api-Key", System.getenv("ACME_KEY"));',
    # a name ending in KEY with no secret's word before it, and WordPress' own placeholder
    'redis.hset("session_key", "user:42:profile")',
    'cache.set("cache_key", "user-profile-42")',
    "define('AUTH_KEY', 'put your unique phrase here');",
    't("auth_key", "Authentication key")',
    # a setting named by an English word ending in "pass"
    "bypass = cache-only-mode",
    "ssl_bypass = yes-for-legacy2",
    "encompass: all-services-in-eu2",
    "define('COMPASS', 'north-by-east2');",
    # angle brackets around a placeholder's name, a tag or a type
    'api_key = "<your-api-key>"',
    "fn publish(password: Option<&str>, token: Option<&[u8]>) -> Result<()> {",
    "<environment>DB_PASSWORD</environment>",
    "contact email@domain.tld for access",
    "the build id `b7f3k9x2m4q8w1`",
    "branch `feat-x7k2m9q4t8`",
    "renamed 'UserProfileSettingsPanel2' to 'ProfileSettingsPanelV3'",
    "pinned `sha256-9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`",
    # a second name, a label's colon, a version or a path after a login word; a URL with no password
    "login with GitHub / GitLab",
    "sign in with Google: OAuth2 flow",
    "login: deploy/v2.3.1",
    "credentials stored in vault: kv/prod/db",
    "the login page /auth/callback handles it",
    "distributionUrl=https\\://services.gradle.org/distributions/gradle-8.5-bin.zip",
]


@pytest.mark.parametrize(("rule", "line", "text"), LABEL_AND_CODE_FINDINGS)
def test_a_key_label_a_literal_compared_first_a_named_argument_and_a_login_pair_are_found_at_their_line(
        rule: str, line: int, text: str) -> None:
    findings = load_ruleset().scan(text)
    assert [(f.rule_id, f.line) for f in findings] == [(rule, line)], text


@pytest.mark.parametrize("text", LABEL_AND_CODE_LOOK_ALIKES)
def test_a_key_label_or_login_word_before_words_a_reference_or_a_digest_is_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


# A password written straight after the word, with no verb or colon between (the sentences people write
# when they pass one on): found only for a value holding letters, digits and a symbol.
BARE_PASSWORD_FINDINGS = [
    (1, "Winter2024!", "use the password Winter2024! for the admin console"),
    (2, "Tr0ub4dor&3", "Guest network\nthe wifi password Tr0ub4dor&3 works on every floor"),
    (1, "correct-horse-battery-9!", "log in with passphrase correct-horse-battery-9! once"),
    (1, "Sommer2024#", "Passwort Sommer2024# für den Server"),
    (1, "S3cure#Pass", "the vault password S3cure#Pass unlocks it"),
]

# Identifiers, file names, versions, hashing schemes and rules about passwords: no symbol, or no digit.
BARE_PASSWORD_LOOK_ALIKES = [
    "password Argon2id hashing is used",
    "the password PasswordPolicy2 class validates input",
    "Password MinLength8 rule applies",
    "see password README2.md",
    "password v1.2.3-rc1 ships next week",
    "password *must* be 12+ characters",
    "password reset emails go through the queue",
    "store the password hash_v2_sha512 column",
]


@pytest.mark.parametrize(("line", "secret", "text"), BARE_PASSWORD_FINDINGS)
def test_a_password_written_straight_after_the_word_is_found_at_its_line_and_never_shown(
        line: int, secret: str, text: str) -> None:
    findings = load_ruleset().scan(text)
    assert [(f.rule_id, f.line) for f in findings] == [("prose-password-bare", line)], text
    assert secret not in findings[0].preview and secret[2:-2] not in findings[0].preview


@pytest.mark.parametrize("text", BARE_PASSWORD_LOOK_ALIKES)
def test_an_identifier_file_name_or_version_after_the_word_password_is_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


# (rule, line, text): a password's symbols that open and close brackets out of order (detect-secrets'
# keyword tables), a URL query parameter named for a secret by the end of its name, Telegram's bot URL,
# an element whose key or name attribute is secret-named, a command that takes name and value as two
# words, New Relic's documented license, mobile, REST (42 hex digits) and synthetics location key shapes, and the tools' and drivers' documented
# ways to hand over a password (below). Values drawn here.
SHAPE_FINDINGS = [
    ("secret-assignment", 1, "db_pass = q{{h}o)p${e]nob(ody[zk>-_$#"),
    ("secret-assignment-quoted", 1, 'password = "m{{h}o)p${e]nob(ody[fi>-_$#"'),
    ("secret-comparison", 1, 'if (api_key == "m{{h}o)p${e]nob(ody[fi>-_$#") {'),
    ("url-query-secret", 1, "https://api.acme.io/v1/items?api-key=q8Zt3vLx9PmR2wKd7sYbN4cF"),
    ("url-query-secret", 2, "feed:\nwss://stream.acme.io/feed?authToken=q8Zt3vLx9PmR2wKd7sYbN4cF&x=1"),
    ("url-query-secret", 1, "https://api.acme.io/v2/data?appid=42&appkey=q8Zt3vLx9PmR2wKd7sYbN4cF"),
    ("telegram-bot-token", 1, "https://api.telegram.org/bot7312345678:AAHk3mQ9pLx7vT2bN8cR4sW1yZ6aD5fG0jE/getMe"),
    ("markup-secret-attribute", 2, '<properties>\n  <entry key="db.password">Wq7vR2nLp9x</entry>\n</properties>'),
    ("markup-secret-attribute", 1, '<string name="api_key">marmalade</string>'),
    ("env-command-secret", 2, "FROM python:3.12\nENV DB_PASSWORD Wq7vR2nLp9x\n"),
    ("env-command-secret", 1, "setx API_TOKEN Wq7vR2nLp9x"),
    ("env-command-secret", 1, "set -gx GITHUB_TOKEN Wq7vR2nLp9x"),
    ("new-relic-key", 1, "license_key: 3f9c1a7e5b2d8046c1e9a3f7b5d2c8e0FFFFNRAL"),
    ("new-relic-key", 1, "mobile token eu01xx5b2d8046c1e9a3f7b5d2c8e03f9c1a7e5b2d-NRMA"),
    ("new-relic-key", 1, "REST key NRRA-9b1f4e7c2a8d5063f1e9c7a4b2d8e6f0a3c5b7d91e"),
    ("new-relic-key", 1, "private location key NRSP-us01f3a9c1e7b5d2840c6e1a9f3b7d5c2e8a0"),
    # connection strings with no scheme, a user and password handed to an authentication call, a
    # directive that is a password by its software's documentation, a literal piped into a login, and
    # a DSL setter named in camelCase (the drivers' and tools' documented syntax)
    ("dsn-user-password", 1, 'db, err := sql.Open("mysql", "app:Wq7vR2nLp9x@tcp(db01:3306)/orders")'),
    ("oracle-user-password", 1, "url=jdbc:oracle:thin:scott/Wq7vR2nLp9x@db01:1521:ORCL"),
    ("oracle-user-password", 2, "nightly export:\nexpdp system/Wq7vR2nLp9x@ORCL schemas=HR"),
    ("credential-pair-call", 1, 'r = requests.get(url, auth=("deploy", "Wq7vR2nLp9x"))'),
    ("credential-pair-call", 1, 'var cred = new NetworkCredential("svc_mail", "Wq7vR2nLp9x");'),
    ("credential-pair-call", 1, "ftp.login('upload', 'Wq7vR2nLp9x')"),
    ("config-directive-password", 2, "bind 0.0.0.0\nrequirepass Wq7vR2nLp9x\n"),
    ("config-directive-password", 1, "CREATE USER 'app'@'%' IDENTIFIED BY 'Wq7vR2nLp9x';"),
    ("config-directive-password", 1, 'psk="Wq7vR2nLp9x"'),
    ("piped-login-password", 1, 'echo "Wq7vR2nLp9x" | docker login ghcr.io -u deploy --password-stdin'),
    ("secret-call-argument", 1, 'release { storePassword "Wq7vR2nLp9x"; keyAlias "upload" }'),
    # a key or token of sixteen characters named in a sentence, in English and in other languages
    ("generic-high-entropy-secret", 1, "the api key is Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 1, "La clave API es Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 2, "Zugang zum Staging\nAPI-Schlüssel: Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 1, "токен: Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 1, "本番の APIキー: Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 1, "密钥：Hk3mQ9pLx7vT2bN8"),
    ("generic-high-entropy-secret", 1, "la chiave segreta è Hk3mQ9pLx7vT2bN8"),
    ("tencent-secret-id", 1, "TENCENTCLOUD_SECRET_ID=AKIDk3mQ9pLx7vT2bN8cR4sW1yZ6aD5fG0jE"),
    # a tool's documented password argument, and the literal default of a substitution
    ("tool-password-argument", 1, 'ssh-keygen -t ed25519 -N "Wq7vR2nLp9x" -f deploy_key'),
    ("tool-password-argument", 1, "openssl enc -aes-256-cbc -k Wq7vR2nLp9x -in db.sql -out db.sql.enc"),
    ("tool-password-argument", 1, "zip -P Wq7vR2nLp9x exports.zip ledger.csv"),
    ("tool-password-argument", 1, "net user backup Wq7vR2nLp9x /add"),
    ("tool-password-argument", 1, '$pw = ConvertTo-SecureString -String "Wq7vR2nLp9x" -AsPlainText -Force'),
    ("tool-password-argument", 1, "http --verbose -a deploy:Wq7vR2nLp9x https://api.acme.io/jobs"),
    ("substitution-default-secret", 2, "spring:\n  datasource.password: ${DB_PASSWORD:Wq7vR2nLp9x}"),
    ("substitution-default-secret", 1, "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-Wq7vR2nLp9x}"),
    # a Markdown table's cell after a secret-named cell (memories are Markdown), and R's <- assignment
    ("table-secret-cell", 3, "| Service | Value |\n|---|---|\n| DB password | `Wq7vR2nLp9x` |"),
    ("table-secret-cell", 1, "| staging API key | Hk3mQ9pLx7vT2bN8 |"),
    ("secret-assignment-quoted", 1, 'api_token <- "Hk3mQ9pLx7vT2bN8cR4sW"'),
    ("secret-assignment-quoted", 1, '{"user": "admin", "pass": "Wq7vR2nLp9x"}'),
]

# Near misses: well-formed templates and code (a call cut at its comma, a subscript), pagination and
# lookup names in a query, a digit run after "bot", an attribute that is no secret name or an element
# holding a reference, and a variable handing over a file or a word of a sentence.
SHAPE_LOOK_ALIKES = [
    "password = ${DB_PASSWORD:-changeme}",
    'api_key = "{{ .Values.apiKey }}"',
    "token = jwt.encode(payload, key)",
    "secret = settings[SECRET_NAME]",
    'password: "$(cat /run/secrets/db)"',
    "https://api.acme.io/v2/items?pageToken=q8Zt3vLx9PmR2wKd7sYbN4cF",
    "https://api.acme.io/v2/items?sort_key=created_at_desc&cursor_token=q8Zt3vLx9PmR2wKd7sYbN4cF",
    "https://api.acme.io/v2/items?key=name",
    "the robot7312345678 job ran twice",
    '<string name="password_hint">Enter your password</string>',
    '<entry key="db.password">${DB_PASSWORD}</entry>',
    '<entry key="username">deploy</entry>',
    "ENV DB_PASSWORD_FILE /run/secrets/db",
    "ENV API_TOKEN $API_TOKEN",
    "the env password policy is strict",
    "license 3f9c1a7e5b2d8046c1e9a3f7b5d2c8e0 NRAL",
    "the user was identified by their email",
    "requirepass foobared",
    "requirepass ${REDIS_PASSWORD}",
    "the psk is stored in vault",
    "sqlplus / as sysdba",
    "jdbc:oracle:thin:@db01:1521:ORCL",
    'requests.get(url, auth=("deploy", os.environ["DEPLOY_PW"]))',
    'auth=("admin", "admin")',
    'login("user", "Enter your password")',
    "echo $CR_PAT | docker login ghcr.io -u deploy --password-stdin",
    "git log --format=%an:%ae@tcp",
    "the token refresh job runs at 02:00 UTC via cron-nightly-v2",
    "Schlüssel für das Tor im Büro liegt bei Lars",
    "key rotation policy: rotate_every_90_days",
    "el token caduca cada 24 horas",
    "キーの更新は毎月行います",
    'ssh-keygen -t ed25519 -N "" -f deploy_key',
    "zip -r archive.zip . -x node_modules",
    "net user backup /delete",
    "ConvertTo-SecureString $plain -AsPlainText -Force",
    "password: ${DB_PASS:changeme}",
    "password: ${DB_PASS:postgres}",
    "token: ${GITHUB_TOKEN:?set it first}",
    "password: ${DB_PASS:}",
    # Maven's encrypted settings values, a public key written with escaped line ends, a form's token
    "<server><password>{COQLCE6DU6GtcS5P=}</password></server>",
    "<passphrase>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</passphrase>",
    '"public_key": "-----BEGIN PUBLIC KEY-----\\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\\n-----END PUBLIC KEY-----"',
    "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syazJOkrjJa3U2AbhIvUw==",
    # table cells that describe a secret rather than hold one; the password manager's name
    "| password hashing | bcrypt |",
    "| password | stored in vault |",
    "| token TTL | 3600s |",
    "| secret | ${STRIPE_SECRET} |",
    "| public key | ssh-ed25519 |",
    "| API key | see 1Password: Billing/Stripe |",
    "the deploy key lives in 1Password: Infra/Deploy-Prod",
    'passenger = "John Smith2"',
]


@pytest.mark.parametrize(("rule", "line", "text"), SHAPE_FINDINGS)
def test_symbols_out_of_order_query_names_markup_attributes_and_two_word_commands_are_found_at_their_line(
        rule: str, line: int, text: str) -> None:
    findings = load_ruleset().scan(text)
    assert (rule, line) in [(f.rule_id, f.line) for f in findings], text


@pytest.mark.parametrize("text", SHAPE_LOOK_ALIKES)
def test_templates_code_lookup_names_and_references_in_those_shapes_are_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


# Words that end in a password word without being one (compass, bypass, spin, linchpin): no finding.
PASSWORD_WORD_INSIDE_A_WORD = [
    "the compass is N45E12W on the old survey",
    "spin = 3000rpm for the centrifuge test",
    "linchpin: Redis cluster holds the sessions",
    "the overpass was closed during the release",
]

# A password word as a camelCase part, after a separator or as a long word in a name: still a password.
PASSWORD_WORD_IN_A_NAME = [
    ("userPassword = Xk29sQ0p!", "Xk29sQ0p!"),
    ("adminPwd: Xk29sQ0p", "Xk29sQ0p"),
    ("dbpassword=Xk29sQ0p", "Xk29sQ0p"),
    ("my_pass: Xk29sQ0p!", "Xk29sQ0p!"),
]


@pytest.mark.parametrize("text", PASSWORD_WORD_INSIDE_A_WORD)
def test_a_password_word_inside_another_word_is_no_password_label(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


@pytest.mark.parametrize(("text", "secret"), PASSWORD_WORD_IN_A_NAME)
def test_a_password_word_in_a_setting_name_still_labels_its_value(text: str, secret: str) -> None:
    findings = load_ruleset().scan(text)
    assert [f.rule_id for f in findings] == ["prose-password"], text
    assert secret not in findings[0].preview
