"""Private keys in the containers tools write them in, with or without their markers, and the shapes of
infrastructure files (Terraform, CloudFormation, Ansible) that name a secret without holding one."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import random
from collections.abc import Callable
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization as ser
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa, x25519
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from pipeline.privacy import load_ruleset

_RSA = rsa.generate_private_key(65537, 2048)
_KEYS: dict[str, Callable[[], Any]] = {
    "rsa-1024": lambda: rsa.generate_private_key(65537, 1024),
    "rsa-2048": lambda: _RSA,
    "rsa-4096": lambda: rsa.generate_private_key(65537, 4096),
    "ec-p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ec-p384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "ec-p521": lambda: ec.generate_private_key(ec.SECP521R1()),
    "ec-secp256k1": lambda: ec.generate_private_key(ec.SECP256K1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
    "ed448": ed448.Ed448PrivateKey.generate,
    "x25519": x25519.X25519PrivateKey.generate,
}
# The containers each kind of key can be written in (cryptography writes OpenSSH only for signing keys,
# PKCS#1/SEC1 only for RSA and EC).
_FORMATS = {
    "pkcs8": lambda k: _pem(k, ser.PrivateFormat.PKCS8),
    "pkcs8-encrypted": lambda k: _pem(k, ser.PrivateFormat.PKCS8, ser.BestAvailableEncryption(b"pw")),
    "traditional": lambda k: _pem(k, ser.PrivateFormat.TraditionalOpenSSL),
    "openssh": lambda k: _pem(k, ser.PrivateFormat.OpenSSH),
}


def _pem(key: Any, fmt: ser.PrivateFormat, encryption: Any = None) -> str:
    return key.private_bytes(ser.Encoding.PEM, fmt, encryption or ser.NoEncryption()).decode()


def _body(pem: str) -> str:
    """The base64 between the markers, on one line: how an environment variable or a JSON field holds it."""
    return "".join(line for line in pem.strip().splitlines()[1:-1] if ":" not in line and line.strip())


def _supported(name: str, fmt: str) -> bool:
    if fmt == "traditional":
        return name.startswith(("rsa", "ec"))
    if fmt == "openssh":
        return name not in ("x25519", "ed448", "ec-secp256k1")
    return fmt == "pkcs8" or name == "rsa-2048"  # encryption wraps every kind alike: one is enough


@functools.cache
def _written(name: str, fmt: str) -> str:
    return str(_FORMATS[fmt](_KEYS[name]()))


CASES = [(name, fmt) for name in _KEYS for fmt in _FORMATS if _supported(name, fmt)]


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_a_key_body_without_its_markers_is_found_at_its_line(name: str, fmt: str) -> None:
    pem = _written(name, fmt)
    body = _body(pem)
    # Alone (the first line of the body, or all of it) the structure names it, whatever else reads it as
    # a random run.
    for text in (pem.strip().splitlines()[1], "the key: " + body, f'{{"signing": "{body}"}}'):
        findings = load_ruleset().scan(text)
        assert ("private-key-der", 1) in [(f.rule_id, f.line) for f in findings], (name, fmt, text[:80])
        assert body[8:40] not in "".join(f.preview for f in findings)
    # Under a secret's name, another rule may name it first; it is found at its line either way.
    findings = load_ruleset().scan(f"deploy:\n  PRIVATE_KEY={body}\n")
    assert [f.line for f in findings if f.category == "credential"][:1] == [2]


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_a_key_with_its_markers_is_reported_once(name: str, fmt: str) -> None:
    pem = _written(name, fmt)
    findings = [f for f in load_ruleset().scan("key for the box:\n" + pem) if f.category == "credential"]
    assert [(f.rule_id, f.line) for f in findings if f.rule_id.startswith("private-key")] == [("private-key-block", 2)]


def test_a_pkcs12_bundle_in_base64_is_found() -> None:
    bundle = pkcs12.serialize_key_and_certificates(b"deploy", _RSA, None, None, ser.NoEncryption())
    text = "P12_BUNDLE=" + base64.b64encode(bundle).decode()
    assert "private-key-der" in {f.rule_id for f in load_ruleset().scan(text)}


def _certificate() -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "build.acme.internal")])
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(_RSA.public_key())
            .serial_number(7).not_valid_before(now).not_valid_after(now + dt.timedelta(days=30))
            .sign(_RSA, hashes.SHA256()))


def test_public_material_is_no_private_key() -> None:
    """Certificates, public keys and requests start with other structures: none is a key."""
    cert = _certificate()
    request = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "acme")])).sign(_RSA, hashes.SHA256()))
    public_pems = [
        cert.public_bytes(ser.Encoding.PEM).decode(),
        request.public_bytes(ser.Encoding.PEM).decode(),
        _RSA.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode(),
        _RSA.public_key().public_bytes(ser.Encoding.PEM, ser.PublicFormat.PKCS1).decode(),
        ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode(),
        ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
            ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo).decode(),
    ]
    ruleset = load_ruleset()
    for pem in public_pems:
        for text in (pem, "CERT=" + _body(pem), _body(pem)):
            assert "private-key-der" not in {f.rule_id for f in ruleset.scan(text)}, text[:60]


def _ppk(version: int, encryption: str) -> str:
    rng = random.Random(version * 7 + len(encryption))
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def line(n: int = 64) -> str:
        return "".join(rng.choice(b64) for _ in range(n))

    header = [f"PuTTY-User-Key-File-{version}: ssh-rsa", f"Encryption: {encryption}", "Comment: rsa-key-20260107"]
    if version == 3 and encryption != "none":
        header += ["Key-Derivation: Argon2id", "Argon2-Memory: 8192", "Argon2-Passes: 13", "Argon2-Parallelism: 1",
                   f"Argon2-Salt: {rng.getrandbits(128):032x}"]
    body = ["Public-Lines: 6", *(line() for _ in range(5)), line(20) + "==", "Private-Lines: 14",
            *(line() for _ in range(13)), line(40) + "=", f"Private-MAC: {rng.getrandbits(160):040x}"]
    return "\n".join(header + body) + "\n"


@pytest.mark.parametrize(("version", "encryption"), [(2, "none"), (2, "aes256-cbc"), (3, "none"), (3, "aes256-cbc")])
def test_a_putty_key_file_is_found_at_its_first_line(version: int, encryption: str) -> None:
    text = "key for the jump host:\n" + _ppk(version, encryption)
    found = [(f.rule_id, f.line) for f in load_ruleset().scan(text) if f.rule_id == "putty-private-key"]
    assert found == [("putty-private-key", 2)]
    # Inside a Terraform heredoc, quoted as KICS' tests write it, and with JSON's escaped line ends.
    heredoc = 'body = <<EOF\n"' + _ppk(version, encryption).rstrip("\n") + '"\nEOF\n'
    assert "putty-private-key" in {f.rule_id for f in load_ruleset().scan(heredoc)}
    escaped = '{"ppk": "' + _ppk(version, encryption).replace("\n", "\\n") + '"}'
    assert "putty-private-key" in {f.rule_id for f in load_ruleset().scan(escaped)}


def test_a_putty_header_with_no_private_lines_is_no_key() -> None:
    text = "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: see the wiki for the format"
    assert "putty-private-key" not in {f.rule_id for f in load_ruleset().scan(text)}


# A key named by a credential word before "key" (TokenKey, hmac_key): a secret like api_key.
NAMED_KEY_FINDINGS = [
    ("secret-assignment", "      TokenKey: b@d0@u7H70K3n"),
    ("secret-assignment-quoted", '    token_key: "DFSFSFHFGFGF[DSFSFAADAFASD%3D"'),
    ("secret-assignment-quoted", 'HMAC_KEY = "f3Q9vLx2PmR7wKd4sYbN8cF1"'),
    ("secret-assignment-quoted", 'jwtKey: "Wq7vR2nLp9x-k3Zt8"'),
    ("secret-assignment", "ADMIN_KEY=Wq7vR2nLp9xk3Zt8"),
]


@pytest.mark.parametrize(("rule", "text"), NAMED_KEY_FINDINGS)
def test_a_key_named_by_a_credential_word_is_found(rule: str, text: str) -> None:
    assert rule in {f.rule_id for f in load_ruleset().scan(text)}, text


# What infrastructure files write where a secret's name stands, with no secret in it.
INFRASTRUCTURE_LOOK_ALIKES = [
    # CloudFormation's intrinsic functions, in their short form, and its dynamic references
    "HasPassword: !Not [!Equals [!Ref DBPassword, '']]",
    "UsePassword: !Or [!Condition HasPassword, !Equals [!Ref Mode, 'basic']]",
    "MasterUserPassword: !Base64 'c2VjcmV0'",
    "      AuthToken: '{{resolve:secretsmanager:/elasticache/replicationgroup/authtoken:SecretString:password}}'",
    "MasterUserPassword: '{{resolve:ssm-secure:/prod/db/master-password:3}}'",
    # a template cut across lines: its tail
    "                - :secretsmanager:us-east-1:*:secret:tiny::}}",
    # code reading a field
    "AllowUsersToChangePassword: event.ResourceProperties.AllowUsersToChangePassword === 'true',",
    "the password is this.Password of the form",
]


YAML_BLOCK_FINDINGS = [
    (3, "db:\n  password: |\n    Wq7vR2nLp9x#k3\n  user: app\n"),
    (3, "db:\n  password: >-\n    Wq7vR2nLp9x#k3\n"),
    (3, "stringData:\n  api-token: |-\n    q8Zt3vLx9PmR2wKd7sYbN4cF"),
]
YAML_BLOCK_LOOK_ALIKES = [
    "password: |\n  password123\n",
    "secret_description: |\n  Use the vault for this one\n",
    "password: |\n  ${DB_PASSWORD}\n",
    "token: >\n  {{ .Values.token }}\n",
    "password_policy: |\n  min-length-12\n",
]


@pytest.mark.parametrize(("line", "text"), YAML_BLOCK_FINDINGS)
def test_a_secret_in_a_yaml_block_scalar_is_found_on_its_line(line: int, text: str) -> None:
    assert ("yaml-block-secret", line) in [(f.rule_id, f.line) for f in load_ruleset().scan(text)]


@pytest.mark.parametrize("text", INFRASTRUCTURE_LOOK_ALIKES + YAML_BLOCK_LOOK_ALIKES)
def test_intrinsic_functions_references_field_reads_and_yaml_blocks_of_words_are_not_flagged(text: str) -> None:
    assert load_ruleset().scan(text) == [], text


def test_a_capitalised_passphrase_with_a_dot_is_still_a_password() -> None:
    """A field read starts with a lower-case object; a passphrase of capitalised words does not."""
    assert "prose-password" in {f.rule_id for f in load_ruleset().scan("the password is Nimbus.Harbor45")}
