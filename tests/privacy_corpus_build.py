"""Build the privacy corpus in ``tests/data/privacy/corpus/`` (deterministic; see SOURCES.md there).

Positives are generated: token values from the formats vendors document (prefix, alphabet, length,
checksum), keys made with ``cryptography``, ``ssh-keygen`` and ``gpg``, personal data made valid with
``python-stdnum`` and ``phonenumbers``. Each value is written three ways: raw, inside a sentence with
no credential word, inside a sentence with one. Benign lines are read from public repositories'
instruction files and lockfiles (``--mirrors`` points at their git directories) and from values real
tools print (commit ids, digests, UUIDs, base64 images, SOPS ciphertext, memfold index lines).

    python tests/privacy_corpus_build.py --mirrors /path/to/git-dirs
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import hashlib
import itertools
import json
import os
import random
import re
import string
import subprocess
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "data" / "privacy" / "corpus"
SEED = 20261201

B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
ALPHABETS = {
    "b62": B62, "hex": "0123456789abcdef", "HEX": "0123456789ABCDEF", "b36": string.ascii_lowercase + string.digits,
    "B36": string.ascii_uppercase + string.digits, "b64": B62 + "+/", "url": B62 + "-_", "dig": string.digits,
    "low": string.ascii_lowercase, "up": string.ascii_uppercase, "b32": string.ascii_uppercase + "234567",
    "alpha": string.ascii_letters, "bech": "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper(),
}


def _fill(rng: random.Random, spec: str) -> str:
    """``spec`` is text with ``{alphabet:n}`` holes: ``ghp_{b62:36}``."""
    def hole(match: re.Match[str]) -> str:
        name, n = match.group(1), int(match.group(2))
        return "".join(rng.choice(ALPHABETS[name]) for _ in range(n))
    return re.sub(r"\{(\w+):(\d+)\}", hole, spec)


def _b62(value: int) -> str:
    out = ""
    while value:
        value, rest = divmod(value, 62)
        out = B62[rest] + out
    return out.rjust(6, "0")


def _crc_token(rng: random.Random, prefix: str) -> str:
    body = _fill(rng, "{b62:30}")
    return prefix + body + _b62(zlib.crc32(body.encode()))


# (kind, format, source). Formats are the vendors' documented shapes; SOURCES.md names each page.
VENDOR = [
    ("aws-access-key-id", "AKIA{B32x:16}", "aws-iam"), ("aws-sts-key-id", "ASIA{B32x:16}", "aws-iam"),
    ("google-api-key", "AIza{url:35}", "google-api-keys"), ("azure-client-secret", "{url3:3}8Q~{url:34}", "entra-secrets"),
    ("github-pat", "crc:ghp_", "github-token-formats"), ("github-oauth", "crc:gho_", "github-token-formats"),
    ("github-user-to-server", "crc:ghu_", "github-token-formats"), ("github-server-to-server", "crc:ghs_", "github-token-formats"),
    ("github-refresh", "crc:ghr_", "github-token-formats"),
    ("github-fine-grained", "github_pat_{b62:22}_{b62:59}", "github-token-formats"),
    ("gitlab-pat", "glpat-{url:20}", "gitlab-tokens"), ("gitlab-deploy", "gldt-{url:20}", "gitlab-tokens"),
    ("gitlab-runner", "glrt-{url:20}", "gitlab-tokens"), ("gitlab-ci-job", "glcbt-{b62:2}_{url:20}", "gitlab-tokens"),
    ("gitlab-trigger", "glptt-{hex:40}", "gitlab-tokens"), ("gitlab-feed", "glft-{url:20}", "gitlab-tokens"),
    ("gitlab-oauth-secret", "gloas-{url:64}", "gitlab-tokens"), ("gitlab-agent", "glagent-{url:50}", "gitlab-tokens"),
    ("gitlab-scim", "glsoat-{url:20}", "gitlab-tokens"), ("gitlab-runner-registration", "GR1348941{url:20}", "gitlab-tokens"),
    ("bitbucket-app-password", "ATBB{b62:32}", "atlassian-tokens"), ("atlassian-api-token", "ATATT3{url:180}", "atlassian-tokens"),
    ("circleci-pat", "CCIPAT_{b62:22}_{hex:40}", "circleci-tokens"),
    ("anthropic-api-key", "sk-ant-api03-{url:93}AA", "anthropic-keys"), ("anthropic-admin-key", "sk-ant-admin01-{url:93}AA", "anthropic-keys"),
    ("openai-project-key", "sk-proj-{url:58}T3BlbkFJ{url:58}", "openai-keys"), ("openai-legacy-key", "sk-{b62:20}T3BlbkFJ{b62:20}", "openai-keys"),
    ("openai-svcacct-key", "sk-svcacct-{url:58}T3BlbkFJ{url:58}", "openai-keys"),
    ("openrouter-key", "sk-or-v1-{hex:64}", "openrouter-keys"), ("huggingface-token", "hf_{alpha:34}", "huggingface-tokens"),
    ("huggingface-org", "api_org_{alpha:34}", "huggingface-tokens"), ("groq-key", "gsk_{b62:52}", "groq-keys"),
    ("replicate-token", "r8_{b62:37}", "replicate-tokens"), ("perplexity-key", "pplx-{b62:48}", "perplexity-keys"),
    ("xai-key", "xai-{b62:80}", "xai-keys"), ("langsmith-key", "lsv2_pt_{hex:32}_{hex:10}", "langsmith-keys"),
    ("deepseek-key", "sk-{hex:32}", "deepseek-keys"),
    ("stripe-secret-live", "sk_live_{b62:24}", "stripe-keys"), ("stripe-secret-test", "sk_test_{b62:99}", "stripe-keys"),
    ("stripe-restricted", "rk_live_{b62:99}", "stripe-keys"), ("stripe-webhook", "whsec_{b62:32}", "stripe-keys"),
    ("square-access", "EAAA{url:60}", "square-tokens"), ("square-oauth-secret", "sq0csp-{url:43}", "square-tokens"),
    ("braintree-access", "access_token$production${b36:16}${hex:32}", "braintree-tokens"),
    ("slack-bot", "xoxb-{dig:11}-{dig:13}-{b62:24}", "slack-tokens"), ("slack-user", "xoxp-{dig:11}-{dig:11}-{dig:13}-{hex:32}", "slack-tokens"),
    ("slack-app", "xapp-1-{B36:11}-{dig:13}-{hex:64}", "slack-tokens"), ("slack-config", "xoxe.xoxp-1-{B36:164}", "slack-tokens"),
    ("slack-config-refresh", "xoxe-1-{B36:146}", "slack-tokens"), ("slack-legacy-workspace", "xoxa-2-{b62:40}", "slack-tokens"),
    ("slack-webhook", "https://hooks.slack.com/services/T{B36:8}/B{B36:10}/{b62:24}", "slack-webhooks"),
    ("discord-webhook", "https://discord.com/api/webhooks/{dig:18}/{url:68}", "discord-webhooks"),
    ("discord-bot", "M{url:25}.{url:6}.{url:38}", "discord-tokens"), ("telegram-bot", "{dig:10}:AA{url:33}", "telegram-bots"),
    ("npm-token", "crc:npm_", "npm-tokens"), ("pypi-token", "pypi-AgEIcHlwaS5vcmc{url:70}", "pypi-tokens"),
    ("docker-hub-pat", "dckr_pat_{url:27}", "docker-tokens"), ("rubygems-key", "rubygems_{hex:48}", "rubygems-keys"),
    ("sendgrid-key", "SG.{url:22}.{url:43}", "sendgrid-keys"), ("shopify-access", "shpat_{hex:32}", "shopify-tokens"),
    ("shopify-shared-secret", "shpss_{hex:32}", "shopify-tokens"), ("digitalocean-pat", "dop_v1_{hex:64}", "digitalocean-tokens"),
    ("digitalocean-oauth", "doo_v1_{hex:64}", "digitalocean-tokens"), ("vault-service", "hvs.{url:95}", "vault-tokens"),
    ("vault-batch", "hvb.{url:140}", "vault-tokens"), ("linear-key", "lin_api_{b62:40}", "linear-keys"),
    ("onepassword-secret-key", "A3-{B36:6}-{B36:11}-{B36:5}-{B36:5}-{B36:5}", "onepassword-keys"),
    ("onepassword-service", "ops_eyJ{b64:260}", "onepassword-keys"), ("adobe-client-secret", "p8e-{b62:32}", "adobe-keys"),
    ("age-secret-key", "AGE-SECRET-KEY-1{bech:58}", "age-keys"), ("airtable-pat", "pat{b62:14}.{hex:64}", "airtable-tokens"),
    ("alibaba-access-key", "LTAI{b62:20}", "alibaba-keys"), ("artifactory-api-key", "AKCp{b62:69}", "jfrog-tokens"),
    ("artifactory-reference", "cmVmd{b62:59}", "jfrog-tokens"), ("aws-bedrock-key", "ABSK{b64:132}", "aws-bedrock-keys"),
    ("azure-storage-identifiable", "{b64:52}JQQJ99{b64:3}AzSe{b64:20}==", "azure-identifiable-keys"),
    ("azure-devops-pat", "{b62:52}JQQJ99{b62:3}AZDO{b62:4}", "azure-identifiable-keys"),
    ("clickhouse-key", "4b1d{b62:38}", "clickhouse-keys"), ("clojars-token", "CLOJARS_{b36:60}", "clojars-tokens"),
    ("cloudflare-origin-ca", "v1.0-{hex:24}-{hex:146}", "cloudflare-tokens"), ("contentful-pat", "CFPAT-{url:43}", "contentful-tokens"),
    ("databricks-pat", "dapi{hex:32}", "databricks-tokens"), ("doppler-personal", "dp.pt.{b62:43}", "doppler-tokens"),
    ("doppler-service", "dp.st.prd.{b62:40}", "doppler-tokens"), ("duffel-token", "duffel_live_{url:43}", "duffel-tokens"),
    ("dynatrace-token", "dt0c01.{B36:24}.{B36:64}", "dynatrace-tokens"), ("easypost-key", "EZAK{b62:54}", "easypost-keys"),
    ("facebook-page-token", "EAAC{b62:150}", "meta-tokens"), ("facebook-app-token", "{dig:16}|{url:30}", "meta-tokens"),
    ("firebase-fcm-key", "AAAA{url:7}:APA91b{url:134}", "firebase-keys"), ("flutterwave-secret", "FLWSECK_TEST-{hex:32}-X", "flutterwave-keys"),
    ("flyio-token", "fo1_{url:43}", "flyio-tokens"), ("frameio-token", "fio-u-{url:64}", "frameio-tokens"),
    ("google-oauth-secret", "GOCSPX-{url:28}", "google-oauth"), ("google-oauth-access", "ya29.{url:150}", "google-oauth"),
    ("google-oauth-refresh", "1//0{url:100}", "google-oauth"), ("grafana-cloud", "glc_{b64:80}", "grafana-tokens"),
    ("grafana-service-account", "glsa_{b62:32}_{hex:8}", "grafana-tokens"),
    ("harness-pat", "pat.{url:22}.{b62:24}.{b62:20}", "harness-tokens"), ("terraform-cloud", "{b62:14}.atlasv1.{url:67}", "terraform-tokens"),
    ("heroku-key-v2", "HRKU-AA{url:58}", "heroku-keys"), ("infracost-token", "ico-{b62:32}", "infracost-tokens"),
    ("intra42-secret", "s-s4t2ud-{hex:64}", "intra42-secrets"), ("mailchimp-key", "{hex:32}-us{dig:2}", "mailchimp-keys"),
    ("mailgun-key", "key-{hex:32}", "mailgun-keys"), ("mailgun-pubkey", "pubkey-{hex:32}", "mailgun-keys"),
    ("mapbox-secret", "sk.eyJ1{url:80}.{url:22}", "mapbox-tokens"), ("maxmind-license", "{b62:6}_{b62:29}_mmk", "maxmind-keys"),
    ("teams-webhook", "https://contoso.webhook.office.com/webhookb2/{uuid}@{uuid}/IncomingWebhook/{hex:32}/{uuid}", "teams-webhooks"),
    ("new-relic-user-key", "NRAK-{B36:27}", "newrelic-keys"), ("new-relic-insert-key", "NRII-{url:32}", "newrelic-keys"),
    ("new-relic-browser-key", "NRJS-{hex:19}", "newrelic-keys"), ("notion-token", "ntn_{dig:11}{b62:35}", "notion-tokens"),
    ("notion-legacy", "secret_{b62:43}", "notion-tokens"), ("octopus-key", "API-{B36:26}", "octopus-keys"),
    ("okta-ssws", "SSWS 00{url:40}", "okta-tokens"), ("openshift-token", "sha256~{url:43}", "openshift-tokens"),
    ("pinecone-key", "pcsk_{b62:6}_{b62:60}", "pinecone-keys"), ("planetscale-token", "pscale_tkn_{url:43}", "planetscale-tokens"),
    ("planetscale-password", "pscale_pw_{url:43}", "planetscale-tokens"), ("postman-key", "PMAK-{hex:24}-{hex:34}", "postman-keys"),
    ("prefect-key", "pnu_{b62:36}", "prefect-keys"), ("pulumi-token", "pul-{hex:40}", "pulumi-tokens"),
    ("readme-key", "rdme_{b36:70}", "readme-keys"), ("resend-key", "re_{b62:8}_{b62:24}", "resend-keys"),
    ("scalingo-token", "tk-us-{url:48}", "scalingo-tokens"), ("brevo-key", "xkeysib-{hex:64}-{b62:16}", "brevo-keys"),
    ("sentry-user-token", "sntryu_{hex:64}", "sentry-tokens"), ("settlemint-pat", "sm_pat_{b62:16}", "settlemint-tokens"),
    ("shippo-token", "shippo_live_{hex:40}", "shippo-tokens"), ("sonarqube-token", "squ_{hex:40}", "sonar-tokens"),
    ("sourcegraph-token", "sgp_{hex:16}_{hex:40}", "sourcegraph-tokens"), ("supabase-token", "sbp_{hex:40}", "supabase-keys"),
    ("supabase-secret", "sb_secret_{url:31}", "supabase-keys"), ("tailscale-auth", "tskey-auth-{b62:12}-{b62:32}", "tailscale-keys"),
    ("twilio-api-key", "SK{hex:32}", "twilio-keys"), ("typeform-token", "tfp_{url:59}", "typeform-tokens"),
    ("yandex-api-key", "AQVN{url:36}", "yandex-keys"), ("yandex-static-key", "YC{url:38}", "yandex-keys"),
    ("buildkite-token", "bkua_{hex:40}", "buildkite-tokens"), ("netlify-token", "nfp_{b62:36}", "netlify-tokens"),
    ("neon-key", "napi_{b62:64}", "neon-keys"), ("figma-token", "figd_{url:40}", "figma-tokens"),
    ("asana-pat", "2/{dig:16}/{dig:16}:{hex:32}", "asana-tokens"), ("launchdarkly-sdk", "sdk-{uuid}", "launchdarkly-keys"),
    ("django-secret-key", "django-insecure-{djk:50}", "django-settings"), ("jwt-hs256", "jwt", "rfc7519"),
    ("jwt-no-eyj-payload", "jwt-raw", "rfc7519"), ("cloudflare-api-token", "{url:40}", "cloudflare-tokens"),
    ("gitlab-session-cookie", "_gitlab_session={b36:32}", "gitlab-tokens"),
    ("heroku-legacy-key", "heroku api key {uuid}", "heroku-keys"), ("totp-seed", "otpauth://totp/ACME:ops?secret={b32:32}",
                                                                  "otpauth-uri"),
    ("mistral-key", "{b62:32}", "mistral-keys"), ("cohere-key", "{b62:40}", "cohere-keys"),
    ("vercel-token", "{b62:24}", "vercel-tokens"), ("datadog-api-key", "{hex:32}", "datadog-keys"),
]
DJANGO = string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)"


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _jwt(rng: random.Random, payload_eyj: bool) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims: Any = {"sub": str(rng.randrange(10**6, 10**9)), "iat": rng.randrange(1_600_000_000, 1_800_000_000),
                   "scope": rng.choice(["read", "write", "admin"])}
    body = b64(json.dumps(claims).encode()) if payload_eyj else b64(bytes(rng.getrandbits(8) for _ in range(48)))
    return f"{header}.{body}.{b64(bytes(rng.getrandbits(8) for _ in range(32)))}"


def vendor_value(rng: random.Random, spec: str) -> str:
    if spec.startswith("crc:"):
        return _crc_token(rng, spec[4:])
    if spec in ("jwt", "jwt-raw"):
        return _jwt(rng, spec == "jwt")
    spec = spec.replace("{uuid}", "\0")
    value = re.sub(r"\{url3:3\}", lambda _m: _fill(rng, "{url:3}"), spec)
    value = value.replace("{B32x:16}", _fill(rng, "{b32:16}"))
    value = value.replace("{djk:50}", "".join(rng.choice(DJANGO) for _ in range(50)))
    value = _fill(rng, value)
    while "\0" in value:
        value = value.replace("\0", _uuid(rng), 1)
    return value


GENERIC = [
    ("password-assignment", "password = {pw}"), ("db-password-env", "DB_PASSWORD={pw}"),
    ("api-key-yaml", "api_key: {tok}"), ("client-secret-json", '"client_secret": "{tok}"'),
    ("token-env", "AUTH_TOKEN={tok}"), ("secret-key-python", "SECRET_KEY = '{pw}'"),
    ("bearer-header", "Authorization: Bearer {tok}"), ("basic-header", "Authorization: Basic {basic}"),
    ("x-api-key-header", "X-API-Key: {tok}"), ("signing-key-toml", 'signing_key = "{tok}"'),
    ("private-token-header", "PRIVATE-TOKEN: {tok}"), ("url-token-param", "https://api.acme-corp.io/v2/items?api_key={tok}"),
    ("encryption-key-env", "ENCRYPTION_KEY={tok}"), ("passphrase-assignment", "passphrase: {pw}"),
    ("kube-secret-data", "  password: {b64pw}"), ("netrc-password", "machine api.acme-corp.io login deploy password {pw}"),
]
COMMANDS = [
    ("curl-user", "curl -u deploy:{pw} https://ci.acme-corp.io/api/jobs"),
    ("curl-bearer", "curl -H 'Authorization: Bearer {tok}' https://api.acme-corp.io/v1/me"),
    ("curl-api-key", 'curl -H "X-API-Key: {tok}" https://api.acme-corp.io/v1/items'),
    ("docker-login", "docker login -u deploy -p {pw} registry.acme-corp.io"),
    ("mysql-attached", "mysql -u root -p'{pw}' orders"), ("mysql-attached-bare", "mysqldump -uadmin -p{pw} shop > dump.sql"),
    ("htpasswd", "htpasswd -b -c /etc/nginx/.htpasswd admin {pw}"), ("sshpass", "sshpass -p '{pw}' ssh ops@10.0.4.12"),
    ("redis-cli", "redis-cli -h cache.acme-corp.io -a {pw} ping"), ("pgpassword", "PGPASSWORD={pw} psql -h db.acme-corp.io -U app"),
    ("psql-conninfo", "psql \"host=db.acme-corp.io user=app password={pw} dbname=shop\""),
    ("ldapsearch", "ldapsearch -x -D cn=admin,dc=acme -w {pw} -b dc=acme"),
    ("wget-password", "wget --user=deploy --password={pw} https://files.acme-corp.io/build.tgz"),
    ("git-clone-token", "git clone https://oauth2:{tok}@gitlab.acme-corp.io/team/app.git"),
    ("keytool", "keytool -importkeystore -srckeystore app.p12 -srcstorepass {pw} -deststorepass {pw}"),
    ("openssl-pass", "openssl pkcs12 -export -in cert.pem -passout pass:{pw} -out cert.p12"),
    ("smbclient", "smbclient //files/share -U backup%{pw}"), ("sqlcmd", "sqlcmd -S db01 -U sa -P {pw} -Q 'select 1'"),
    ("gh-token-env", "GH_TOKEN={tok} gh release create v1.2.0"), ("kubectl-token", "kubectl --token={tok} get pods -n prod"),
    ("helm-password", "helm repo add internal https://charts.acme-corp.io --username ci --password {pw}"),
    ("npm-authtoken", "npm config set //registry.npmjs.org/:_authToken={tok}"),
    ("twine-password", "TWINE_PASSWORD={tok} twine upload dist/*"), ("net-use", "net use Z: \\\\fs01\\share /user:ACME\\backup {pw}"),
    ("mongosh-password", "mongosh mongodb://db01:27017/admin -u root -p {pw}"),
    ("rabbitmqctl", "rabbitmqctl add_user svc_orders {pw}"),
]
CONNECTIONS = [
    ("postgres-url", "postgresql://app:{pw}@db.acme-corp.io:5432/shop"), ("mysql-url", "mysql://root:{pw}@10.1.2.3:3306/orders"),
    ("mongodb-srv", "mongodb+srv://svc:{pw}@cluster0.ab12c.mongodb.net/prod"), ("redis-url", "redis://:{pw}@cache.acme-corp.io:6379/0"),
    ("amqp-url", "amqps://worker:{pw}@mq.acme-corp.io/vhost"), ("smtp-url", "smtp://mailer:{pw}@smtp.acme-corp.io:587"),
    ("jdbc-params", "jdbc:postgresql://db.acme-corp.io:5432/shop?user=app&password={pw}"),
    ("ado-net", "Server=tcp:sql01.acme-corp.io,1433;Database=shop;User Id=app;Password={pw};Encrypt=True;"),
    ("odbc", "Driver={{ODBC Driver 18 for SQL Server}};Server=sql01;UID=app;PWD={pw};"),
    ("azure-storage", "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={azkey};EndpointSuffix=core.windows.net"),
    ("libpq-dsn", "host=db.acme-corp.io port=5432 dbname=shop user=app password={pw}"),
    ("ftp-url", "ftp://upload:{pw}@ftp.acme-corp.io/incoming"), ("neo4j-url", "neo4j+s://neo4j:{pw}@a1b2c3.databases.neo4j.io"),
    ("sqlalchemy-url", "postgresql+psycopg://app:{pw}@db.acme-corp.io/shop"),
]
PROSE = [
    ("en-wifi", "the wifi password is {pw}"), ("en-admin", "admin password: {pw}"), ("en-changed", "I changed the router password to {pw}"),
    ("en-pin", "the door PIN code is {pin}"), ("es", "la contraseña es {pw}"), ("fr", "le mot de passe est {pw}"),
    ("de", "das Passwort ist {pw}"), ("de-kennwort", "Kennwort: {pw}"), ("nl", "het wachtwoord is {pw}"),
    ("pt", "a senha é {pw}"), ("it", "la password è {pw}"), ("pl", "hasło to {pw}"), ("sv", "lösenordet är {pw}"),
    ("no", "passordet er {pw}"), ("fi", "salasana on {pw}"), ("ru", "пароль: {pw}"), ("zh", "密码是 {pw}"),
    ("ja", "パスワードは {pw}"), ("ko", "비밀번호는 {pw}"), ("tr", "şifre: {pw}"), ("cs", "heslo je {pw}"),
]
WORDS = ["river", "Tiger", "maple", "Comet", "ocean", "Falcon", "violet", "Harbor", "pepper", "Nimbus", "copper", "Summit"]


def password(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(WORDS) + str(rng.randrange(10, 9999)) + rng.choice("!#$%&*?")
    if kind == 1:
        return "".join(rng.choice(B62 + "!#%&*-_") for _ in range(rng.randrange(12, 24)))
    if kind == 2:
        return rng.choice(WORDS).capitalize() + rng.choice("-_.") + rng.choice(WORDS) + str(rng.randrange(1, 99))
    return _fill(rng, "{b62:20}")


def _token(rng: random.Random) -> str:
    return _fill(rng, f"{{b62:{rng.randrange(24, 48)}}}")


def fill_template(rng: random.Random, template: str) -> str:
    pw = password(rng).replace("{", "").replace("}", "")
    values = {"pw": pw, "tok": _token(rng), "pin": str(rng.randrange(1000, 999999)),
              "basic": base64.b64encode(f"deploy:{pw}".encode()).decode(),
              "b64pw": base64.b64encode(pw.encode()).decode(),
              "azkey": base64.b64encode(bytes(rng.getrandbits(8) for _ in range(64))).decode()}
    return template.format(**values)


# --- private keys (made by the real tools) -------------------------------------------------------
def private_keys(rng: random.Random) -> Iterator[tuple[str, str]]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed25519, rsa

    enc = serialization.Encoding.PEM
    none = serialization.NoEncryption()
    for i in range(2):
        r = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        yield "rsa-pkcs1", r.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none).decode()
        yield "rsa-pkcs8", r.private_bytes(enc, serialization.PrivateFormat.PKCS8, none).decode()
        e = ec.generate_private_key(ec.SECP256R1())
        yield "ec-sec1", e.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none).decode()
        ed = ed25519.Ed25519PrivateKey.generate()
        yield "openssh-ed25519", ed.private_bytes(enc, serialization.PrivateFormat.OpenSSH, none).decode()
        d = dsa.generate_private_key(key_size=2048)
        yield "dsa", d.private_bytes(enc, serialization.PrivateFormat.TraditionalOpenSSL, none).decode()
        pw = serialization.BestAvailableEncryption(f"pw{i}".encode())
        yield "pkcs8-encrypted", e.private_bytes(enc, serialization.PrivateFormat.PKCS8, pw).decode()
        one_line = r.private_bytes(enc, serialization.PrivateFormat.PKCS8, none).decode().replace("\n", "\\n")
        yield "pem-in-json", '{"type": "service_account", "private_key": "' + one_line + '"}'
    yield from _gpg_keys()


def _gpg_keys() -> Iterator[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GNUPGHOME": home}
        for i in range(2):
            uid = f"Build Bot {i} <bot{i}@acme-corp.io>"
            subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "never"],
                           env=env, check=True, capture_output=True)
            out = subprocess.run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
                                  "--armor", "--export-secret-keys", uid], env=env, check=True, capture_output=True)
            yield "pgp", out.stdout.decode()


# --- personal data (made valid with the libraries that check it) ----------------------------------
def _valid(rng: random.Random, make: Callable[[], str], check: Callable[[str], bool]) -> str:
    for _ in range(100_000):
        value = make()
        if check(value):
            return value
    raise RuntimeError("no valid value generated")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _date(rng: random.Random) -> dt.date:
    return dt.date(rng.randrange(1945, 2005), rng.randrange(1, 13), rng.randrange(1, 29))


def _be_format(value: str) -> str:
    return f"{value[:2]}.{value[2:4]}.{value[4:6]}-{value[6:9]}.{value[9:]}"


def national_ids(rng: random.Random) -> Iterator[tuple[str, str]]:
    from stdnum.be import nn
    from stdnum.bg import egn
    from stdnum.br import cnpj, cpf
    from stdnum.ca import sin
    from stdnum.ch import ssn as ahv
    from stdnum.cl import rut
    from stdnum.cn import ric
    from stdnum.de import idnr
    from stdnum.dk import cpr
    from stdnum.ee import ik
    from stdnum.es import dni, nie
    from stdnum.fi import hetu
    from stdnum.fr import nir
    from stdnum.il import idnr as il_idnr
    from stdnum.in_ import aadhaar, pan
    from stdnum.it import codicefiscale
    from stdnum.kr import rrn
    from stdnum.mx import curp
    from stdnum.nl import bsn
    from stdnum.no import fodselsnummer
    from stdnum.pl import pesel
    from stdnum.ro import cnp
    from stdnum.se import personnummer
    from stdnum.tr import tckimlik
    from stdnum.us import ssn
    from stdnum.za import idnr as za_idnr

    def d(fmt: str) -> str:
        return _date(rng).strftime(fmt)

    makers: list[tuple[str, Callable[[], str], Callable[[str], bool], Callable[[str], str]]] = [
        ("br-cpf", lambda: _digits(rng, 11), cpf.is_valid, cpf.format),
        ("ca-sin", lambda: str(rng.randrange(1, 8)) + _digits(rng, 8), sin.is_valid, sin.format),
        ("in-aadhaar", lambda: str(rng.randrange(2, 10)) + _digits(rng, 11), aadhaar.is_valid, aadhaar.format),
        ("fr-nir", lambda: str(rng.randrange(1, 3)) + d("%y%m") + f"{rng.randrange(1, 96):02d}" + _digits(rng, 8),
         nir.is_valid, nir.format),
        ("it-codice-fiscale", lambda: "RSSMRA" + d("%y") + rng.choice("ABCDEHLMPRST") + f"{rng.randrange(1, 29):02d}"
         + rng.choice("FGHL") + _digits(rng, 3) + rng.choice(string.ascii_uppercase), codicefiscale.is_valid, str),
        ("no-fodselsnummer", lambda: d("%d%m%y") + _digits(rng, 5), fodselsnummer.is_valid, str),
        ("pl-pesel", lambda: d("%y%m%d") + _digits(rng, 5), pesel.is_valid, str),
        ("ro-cnp", lambda: rng.choice("12") + d("%y%m%d") + f"{rng.randrange(1, 47):02d}" + _digits(rng, 4),
         cnp.is_valid, str),
        ("se-personnummer", lambda: d("%y%m%d") + "-" + _digits(rng, 4), personnummer.is_valid, str),
        ("nl-bsn", lambda: str(rng.randrange(1, 10)) + _digits(rng, 8), bsn.is_valid, str),
        ("es-dni", lambda: _digits(rng, 8) + rng.choice("TRWAGMYFPDXBNJZSQVHLCKE"), dni.is_valid, str),
        ("es-nie", lambda: rng.choice("XYZ") + _digits(rng, 7) + rng.choice("TRWAGMYFPDXBNJZSQVHLCKE"), nie.is_valid, str),
        ("fi-hetu", lambda: d("%d%m%y") + rng.choice("-A") + _digits(rng, 3) + rng.choice("0123456789ABCDEFHJKLMNPRSTUVWXY"),
         hetu.is_valid, str),
        ("dk-cpr", lambda: d("%d%m%y") + "-" + _digits(rng, 4), cpr.is_valid, str),
        ("ch-ahv", lambda: "756" + _digits(rng, 10), ahv.is_valid, ahv.format),
        ("cn-ric", lambda: "110105" + d("%Y%m%d") + _digits(rng, 3) + rng.choice(string.digits + "X"), ric.is_valid, str),
        ("cl-rut", lambda: str(rng.randrange(5, 25)) + _digits(rng, 6) + rng.choice(string.digits + "K"), rut.is_valid, rut.format),
        ("kr-rrn", lambda: d("%y%m%d") + rng.choice("12") + _digits(rng, 6), rrn.is_valid, rrn.format),
        ("za-idnr", lambda: d("%y%m%d") + _digits(rng, 4) + "08" + _digits(rng, 1), za_idnr.is_valid, str),
        ("ee-isikukood", lambda: rng.choice("3456") + d("%y%m%d") + _digits(rng, 4), ik.is_valid, str),
        ("tr-tckimlik", lambda: str(rng.randrange(1, 10)) + _digits(rng, 10), tckimlik.is_valid, str),
        ("us-ssn", lambda: f"{rng.randrange(1, 899):03d}{rng.randrange(1, 99):02d}{rng.randrange(1, 9999):04d}",
         lambda v: ssn.is_valid(v) and v[:3] != "666", ssn.format),
        ("be-national-number", lambda: d("%y%m%d") + _digits(rng, 5), nn.is_valid, _be_format),
        ("br-cnpj", lambda: _digits(rng, 8) + "0001" + _digits(rng, 2), cnpj.is_valid, cnpj.format),
        ("mx-curp", lambda: rng.choice("BGLMPRS") + rng.choice("AEIOU") + rng.choice("RSLMNT") + rng.choice("AEIOZ")
         + d("%y%m%d") + rng.choice("HM") + rng.choice(["DF", "JC", "NL", "MC"]) + rng.choice("RSLMNT")
         + rng.choice("RSLMNT") + rng.choice("RSLMNT") + "0" + _digits(rng, 1), curp.is_valid, str),
        ("in-pan", lambda: "".join(rng.choice(string.ascii_uppercase) for _ in range(3)) + "P"
         + rng.choice(string.ascii_uppercase) + _digits(rng, 4) + rng.choice(string.ascii_uppercase), pan.is_valid, str),
        ("bg-egn", lambda: d("%y%m%d") + _digits(rng, 4), egn.is_valid, lambda v: f"EGN {v}"),
        ("de-tax-id", lambda: str(rng.randrange(1, 10)) + _digits(rng, 10), idnr.is_valid,
         lambda v: f"Steuer-ID {v}"),
        ("il-id-number", lambda: _digits(rng, 9), il_idnr.is_valid, lambda v: f"teudat zehut {v}"),
    ]
    for kind, make, check, fmt in makers:
        for _ in range(3):
            yield kind, fmt(_valid(rng, make, check))
    for _ in range(3):  # HMRC's format: two prefix letters (not D, F, I, Q, U, V; not BG, GB, NK, KN, TN, NT, ZZ)
        prefix = rng.choice("ABCEGHJKLMNPRSTWXYZ") + rng.choice("ABCEGHJKLMNPRSTWXYZ")
        if prefix not in ("GB", "NK", "KN", "TN", "NT", "ZZ"):
            digits = _digits(rng, 6)
            yield "gb-nino", f"{prefix} {digits[:2]} {digits[2:4]} {digits[4:]} {rng.choice('ABCD')}"
    # A passport number has no check digit outside the machine-readable zone: it is one only next to its label.
    for country, label, fmt in (("de", "Reisepass-Nr.", "C{B36x:8}"), ("fr", "passeport n°", "{dig:2}{up:2}{dig:5}"),
                                ("us", "passport number", "5{dig:8}"), ("es", "pasaporte", "PA{dig:7}"),
                                ("it", "passaporto n.", "YA{dig:7}"), ("gb", "passport no", "{dig:9}")):
        yield f"{country}-passport", f"{label} {_fill(rng, fmt.replace('B36x', 'B36'))}"


def cards(rng: random.Random) -> Iterator[tuple[str, str]]:
    from stdnum import luhn

    networks = [("visa", "4", 16), ("mastercard", "5" + str(rng.randrange(1, 6)), 16), ("mastercard-2", "2720", 16),
                ("amex", "37", 15), ("discover", "6011", 16), ("jcb", "3528", 16), ("diners", "3056", 14),
                ("unionpay", "62", 16), ("maestro-12", "6759", 12), ("maestro-19", "5018", 19), ("mir", "2200", 16)]
    for kind, prefix, length in networks:
        for _ in range(3):
            body = prefix + _digits(rng, length - len(prefix) - 1)
            number = body + luhn.calc_check_digit(body)
            if length == 16 and rng.random() < 0.6:
                number = " ".join(number[i:i + 4] for i in range(0, 16, 4))
            elif length == 15 and rng.random() < 0.5:
                number = f"{number[:4]} {number[4:10]} {number[10:]}"
            yield kind, number


def ibans(rng: random.Random) -> Iterator[tuple[str, str]]:
    from stdnum import iban

    bban = {"DE": "{dig:18}", "GB": "{up:4}{dig:14}", "FR": "{dig:23}", "ES": "{dig:20}", "IT": "{up:1}{dig:22}",
            "NL": "{up:4}{dig:10}", "BE": "{dig:12}", "PL": "{dig:24}", "PT": "{dig:21}", "CH": "{dig:17}",
            "AT": "{dig:16}", "SE": "{dig:20}", "NO": "{dig:11}", "DK": "{dig:14}", "FI": "{dig:14}", "IE": "{up:4}{dig:14}",
            "BR": "{dig:23}{up:1}{B36:1}", "TR": "{dig:22}", "SA": "{dig:20}", "RO": "{up:4}{B36:16}"}
    for country, fmt in bban.items():
        for _ in range(2):
            def make(country: str = country, fmt: str = fmt) -> str:
                bban = _fill(rng, fmt)
                return country + iban.calc_check_digits(country + "00" + bban) + bban
            # Countries with a national check digit inside the BBAN need a few tries to satisfy it too.
            value = next(v for v in (make() for _ in range(5000)) if iban.is_valid(v))
            yield f"iban-{country.lower()}", iban.format(value) if rng.random() < 0.6 else value


PHONE_REGIONS = ["US", "GB", "DE", "FR", "ES", "IT", "NL", "PL", "BR", "MX", "IN", "SG", "AU", "JP", "CA", "SE",
                 "NO", "DK", "FI", "CH", "AT", "BE", "PT", "IE", "ZA", "KR", "AR", "CO", "TR", "NG"]


def phones(rng: random.Random) -> Iterator[tuple[str, str]]:
    import phonenumbers
    from phonenumbers import PhoneNumberFormat, PhoneNumberType

    for region in PHONE_REGIONS:
        for kind_type in (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE):
            example = phonenumbers.example_number_for_type(region, kind_type)
            if example is None:
                continue
            national = str(example.national_number)

            def make(national: str = national) -> str:
                # Keep the leading digits that route the number, randomise the subscriber part.
                keep = max(3, len(national) - 5)
                return national[:keep] + _digits(rng, len(national) - keep)

            def valid(candidate: str, region: str = region) -> bool:
                number = phonenumbers.parse(candidate, region)
                return phonenumbers.is_valid_number(number) and candidate[-6:-2] != "5550"

            found = next((c for c in (make() for _ in range(5000)) if valid(c)), national)
            number = phonenumbers.parse(found, region)
            style = PhoneNumberFormat.INTERNATIONAL if kind_type == PhoneNumberType.MOBILE else PhoneNumberFormat.NATIONAL
            yield f"phone-{region.lower()}", phonenumbers.format_number(number, style)


ADDRESSES = {
    "us": "{n} Maple Street, Springfield, IL 62704", "gb": "{n} Baker Street, London NW1 6XE",
    "de": "Lindenstraße {n}, 10969 Berlin", "fr": "{n} rue des Lilas, 75019 Paris", "es": "Calle de Alcalá {n}, 28014 Madrid",
    "it": "Via Garibaldi {n}, 20121 Milano", "nl": "Kerkstraat {n}, 1017 GC Amsterdam", "pl": "ul. Długa {n}, 00-238 Warszawa",
    "br": "Rua Augusta {n}, São Paulo - SP, 01305-100", "pt": "Rua do Carmo {n}, 1200-093 Lisboa",
    "se": "Drottninggatan {n}, 111 51 Stockholm", "no": "Storgata {n}, 0184 Oslo", "dk": "Nørregade {n}, 1165 København K",
    "ca": "{n} Queen Street West, Toronto, ON M5H 2N2", "au": "{n} George Street, Sydney NSW 2000",
    "at": "Mariahilfer Straße {n}, 1070 Wien", "ch": "Bahnhofstrasse {n}, 8001 Zürich", "mx": "Avenida Juárez {n}, 06050 Ciudad de México",
    "fi": "Mannerheimintie {n}, 00100 Helsinki", "jp": "〒150-0002 東京都渋谷区渋谷{n}丁目21-1",
}
STREETS = {"us": ["Maple Street", "Oak Avenue", "Elm Road", "Cedar Lane"], "gb": ["Baker Street", "Mill Lane", "Church Road"],
           "de": ["Lindenstraße", "Bergweg", "Schillerstraße"], "fr": ["rue des Lilas", "avenue Victor Hugo", "boulevard Voltaire"],
           "es": ["Calle de Alcalá", "Avenida de América", "Calle Mayor"], "it": ["Via Garibaldi", "Corso Italia", "Viale Monza"]}


def addresses(rng: random.Random) -> Iterator[tuple[str, str]]:
    for locale, template in ADDRESSES.items():
        for _ in range(2):
            text = template.replace("{n}", str(rng.randrange(1, 240)))
            for base, options in STREETS.items():
                if locale == base:
                    text = text.replace(options[0], rng.choice(options))
            yield f"address-{locale}", text


NAMES = ["Maria Lopez", "Jan Kowalski", "Aiko Tanaka", "Lars Nilsson", "Chloé Martin", "Giulia Rossi", "Ahmed Khan",
         "Sven de Vries", "Ana Souza", "Liam O'Brien"]
DOB_LABELS = [("en-dob", "DOB: {iso}"), ("en-born", "born {long_en}"), ("en-date-of-birth", "date of birth {us}"),
              ("fr", "né le {eu}"), ("de", "geboren am {de}"), ("es", "fecha de nacimiento: {eu}"),
              ("it", "nato il {eu}"), ("pt", "data de nascimento {eu}"), ("nl", "geboortedatum {eu_dash}"),
              ("pl", "data urodzenia {de}"), ("sv", "född {iso}"), ("ja", "生年月日 {ja}")]
NAMED = [("named-paren", "{name} ({eu})"), ("named-comma", "{name}, born {long_en}"), ("named-b", "{name}, b. {iso}"),
         ("named-iso", "{name}, {iso}")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def births(rng: random.Random) -> Iterator[tuple[str, str]]:
    for kind, template in DOB_LABELS + NAMED:
        for _ in range(2):
            d = _date(rng)
            yield f"dob-{kind}", template.format(
                name=rng.choice(NAMES), iso=d.isoformat(), eu=d.strftime("%d/%m/%Y"), us=d.strftime("%m/%d/%Y"),
                de=d.strftime("%d.%m.%Y"), eu_dash=d.strftime("%d-%m-%Y"), ja=f"{d.year}年{d.month}月{d.day}日",
                long_en=f"{d.day} {MONTHS[d.month - 1]} {d.year}")


USERS = ["mlopez", "jkowalski", "aiko.tanaka", "lars", "chloé", "giulia_r", "ahmedk", "svendv", "josé", "björn", "zoë", "ana-souza"]
PATHS = [("linux", "/home/{u}/projects/api/.env"), ("macos", "/Users/{u}/Library/Application Support/app"),
         ("windows", "C:\\Users\\{u}\\AppData\\Roaming\\app\\config.json"), ("windows-slash", "C:/Users/{u}/source/repos/api"),
         ("wsl", "/mnt/c/Users/{u}/Downloads/report.pdf"), ("tilde", "~{u}/notes/todo.md")]


def home_paths(rng: random.Random) -> Iterator[tuple[str, str]]:
    for kind, template in PATHS:
        for _ in range(3):
            yield f"path-{kind}", template.format(u=rng.choice(USERS))


# --- sentences -------------------------------------------------------------------------------------
PLAIN = {  # no credential word
    "vendor-tokens": ["the deploy uses {v} for the workspace", "{v} is what staging runs with",
                      "Ops rotated it on Friday; the new one is {v}", "paste `{v}` into the CI settings page",
                      "we reuse {v} across the three services"],
    "generic-secrets": ["the service config has {v}", "found this in the old compose file: {v}", "line 12 reads {v}"],
    "command-line-credentials": ["ran `{v}` on the box last night", "the runbook says: {v}", "history shows {v}"],
    "connection-strings": ["the app connects with {v}", "staging points at {v}", "use {v} from the worker"],
    "prose-passwords": ["Note from the onsite visit: {v}.", "{v} (told by the office manager)", "FYI {v}"],
    "private-keys": ["pasted here by mistake:\n{v}", "old box config:\n{v}"],
    "cards": ["Maria paid with {v} last week", "the refund goes to {v}", "charged {v} for the annual plan"],
    "ibans": ["wire it to {v} by Monday", "the supplier changed to {v}", "refunds go to {v}"],
    "national-ids": ["Jan's number is {v}", "the form was filled with {v}", "she gave {v} at the desk"],
    "phones": ["reach Maria at {v} after six", "Jan said {v} works on weekends", "the courier left {v} on the note"],
    "addresses": ["the package goes to {v}", "she moved to {v} in May", "send the invoice to {v}"],
    "dates-of-birth": ["from the HR sheet: {v}", "the intake form says {v}", "{v}, per the onboarding doc"],
    "home-paths": ["the script reads {v} on startup", "logs end up in {v}", "copy it from {v}"],
}
KEYWORD = {  # with a credential (or label) word
    "vendor-tokens": ["the API key is {v}", "token: {v}", "secret for the staging deploy: {v}"],
    "generic-secrets": ["credentials in the env file: {v}", "secret config: {v}"],
    "command-line-credentials": ["login with the password inline: {v}", "credentials are in this command: {v}"],
    "connection-strings": ["database password is in the connection string {v}", "DSN with credentials: {v}"],
    "prose-passwords": ["credentials for the lab: {v}", "login details, {v}"],
    "private-keys": ["private key for the deploy user:\n{v}", "the signing key:\n{v}"],
    "cards": ["card number: {v}", "credit card {v} exp 09/29"],
    "ibans": ["IBAN: {v}", "bank account IBAN {v}"],
    "national-ids": ["national ID number: {v}", "her personal ID is {v}"],
    "phones": ["phone: {v}", "mobile number {v}"],
    "addresses": ["home address: {v}", "her address is {v}"],
    "dates-of-birth": ["personal details: {v}", "birth record: {v}"],
    "home-paths": ["the user's home path is {v}", "personal folder: {v}"],
}


def positives(rng: random.Random) -> list[dict[str, Any]]:
    items: list[tuple[str, str, str, str]] = []  # family, kind, source, value
    for kind, spec, source in VENDOR:
        for _ in range(2):
            items.append(("vendor-tokens", kind, source, vendor_value(rng, spec)))
    for family, table, source in (("generic-secrets", GENERIC, "generated-assignments"),
                                  ("command-line-credentials", COMMANDS, "tool-manuals"),
                                  ("connection-strings", CONNECTIONS, "driver-docs"),
                                  ("prose-passwords", PROSE, "generated-prose")):
        for kind, template in table:
            for _ in range(2):
                items.append((family, kind, source, fill_template(rng, template)))
    generated = [("private-keys", private_keys, "generated-keys"), ("national-ids", national_ids, "python-stdnum"),
                 ("cards", cards, "network-bins"), ("ibans", ibans, "python-stdnum"), ("phones", phones, "libphonenumber"),
                 ("addresses", addresses, "postal-formats"), ("dates-of-birth", births, "generated-dates"),
                 ("home-paths", home_paths, "os-layouts")]
    for family, make, source in generated:
        for kind, value in make(rng):
            items.append((family, kind, source, value))
    out = []
    for family, kind, source, value in items:
        split = "train"  # the rules were written against every generated value
        variants = [("raw", value), ("sentence", rng.choice(PLAIN[family]).format(v=value)),
                    ("keyword", rng.choice(KEYWORD[family]).format(v=value))]
        for variant, text in variants:
            out.append({"family": family, "kind": kind, "source": source, "variant": variant, "split": split, "text": text})
    return out


# --- benign text ---------------------------------------------------------------------------------------
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", "CONTRIBUTING.md", ".github/CONTRIBUTING.md", "CONTRIBUTING.rst",
                     ".cursorrules", "docs/CONTRIBUTING.md", "PLANS.md")


def _git(repo: Path, *args: str) -> str:
    """Output of a git command; empty where the snapshot lacks the object (large files may be absent)."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def _benign_lines(text: str) -> Iterator[str]:
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 20 and not line.startswith("```"):
            yield line


def benign(mirrors: Path, rng: random.Random) -> list[dict[str, Any]]:
    seen: set[str] = set()
    rows: list[dict[str, Any]] = []

    def add(text: str, source: str, kind: str) -> None:
        if text not in seen:
            seen.add(text)
            rows.append({"kind": kind, "source": source, "text": text})

    for repo in sorted(mirrors.glob("*/repo")):
        name = repo.parent.name.replace("+", "/")
        commit = _git(repo, "rev-parse", "HEAD").strip()
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
        for path in INSTRUCTION_FILES:
            if path in files:
                for line in _benign_lines(_git(repo, "show", f"HEAD:{path}")):
                    add(line, f"{name}@{commit[:12]}:{path}", "instructions")
        for line in _git(repo, "log", "-12", "--format=%H %s").splitlines():
            add(f"Bisected to {line}", f"{name}@{commit[:12]}:git-log", "commit-id")
            add(f"fixed in {line.split()[0][:10]}", f"{name}@{commit[:12]}:git-log", "short-sha")
        for path in files:
            if path.endswith(("pnpm-lock.yaml", "package-lock.json", "uv.lock")):
                lock = _git(repo, "show", f"HEAD:{path}")
                hits = re.findall(r"(?:integrity: |\"integrity\": \"|hash = \")(sha(?:256|512)[-:][A-Za-z0-9+/=]+)", lock)
                for value in rng.sample(hits, min(8, len(hits))):
                    add(f"lockfile entry pinned with {value}", f"{name}@{commit[:12]}:{path}", "integrity")
        pngs = [p for p in files if p.endswith(".png")][:2]
        for path in pngs:
            shown = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True)
            data = shown.stdout
            if shown.returncode == 0 and 0 < len(data) < 3000:
                add(f"![icon](data:image/png;base64,{base64.b64encode(data).decode()})", f"{name}@{commit[:12]}:{path}",
                    "base64-image")
    for _ in range(15):
        add(f"the request id was {uuid.UUID(int=rng.getrandbits(128), version=4)}", "python-uuid", "uuid")
        digest = hashlib.sha256(rng.randbytes(64)).hexdigest()
        add(f"image pinned by digest sha256:{digest}", "hashlib", "digest")
        add(f"release tarball sha512 {hashlib.sha512(rng.randbytes(64)).hexdigest()}", "hashlib", "digest")
    rows.extend(_sops_lines(rng, seen))
    rows.extend(_index_lines(rows, seen))
    for row in rows:
        row["split"] = "train"  # the rules were written against every generated row
    return rows


def _sops_lines(rng: random.Random, seen: set[str]) -> list[dict[str, Any]]:
    """Values in SOPS's documented ``ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`` form, encrypted for real."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    out = []
    aead = AESGCM(AESGCM.generate_key(bit_length=256))
    for key in ("db_password", "api_token", "stripe_key", "smtp_pass", "jwt_secret", "redis_url"):
        iv = rng.randbytes(32)
        blob = aead.encrypt(iv, password(rng).encode(), key.encode())
        data, tag = blob[:-16], blob[-16:]
        b64 = base64.b64encode
        line = f"{key}: ENC[AES256_GCM,data:{b64(data).decode()},iv:{b64(iv).decode()},tag:{b64(tag).decode()},type:str]"
        if line not in seen:
            out.append({"kind": "sops", "source": "sops-format+cryptography", "text": line})
    return out


def _index_lines(rows: list[dict[str, Any]], seen: set[str]) -> list[dict[str, Any]]:
    """memfold's own mirror index lines, rendered by the real index writer from the headings above."""
    from pipeline.store.index import index_line
    from pipeline.store.memory import Memory

    out = []
    headings = [r["text"].lstrip("# ").strip() for r in rows if r["kind"] == "instructions" and r["text"].startswith("#")]
    for index, heading in enumerate(headings[:40]):
        slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")[:40] or "note"
        file = f"{['feedback', 'project', 'reference'][index % 3]}_{slug}.md"
        line = index_line(file, Memory(name=heading[:60], description=f"Notes on {heading[:80]}", visibility="safe"),
                          private_marker=False)
        if line not in seen:
            out.append({"kind": "memfold-index", "source": "pipeline.store.index", "text": line})
    return out


# Outside sources, split by source: what the rules were tuned on is ``train``, the rest ``test``.
# The test split's hash is frozen in tests/test_privacy_corpus.py.
NOSEY = ("praetorian-inc+noseyparker", "crates/noseyparker/data/default/builtin/rules/", "test")
SEMGREP = ("semgrep+semgrep-rules", "generic/secrets/security/", "train")
# Repositories that commit an agent's memory directory; alternately test and train, by name.
MEMORY_REPOS = ("4444J99+application-pipeline", "FradSer+open-deskos", "FradSer+pi-packages")
# Scanner rules whose matches are no credential to memfold: an account number, password hashes.
NOT_SECRETS = frozenset({"detected-aws-account-id", "detected-bcrypt-hash", "detected-etc-shadow"})
_ANNOTATION = re.compile(r"^\s*(?:#|//|<!--|--|;)\s*(ruleid|ok|todoruleid|todook)\s*:\s*([\w.-]+)")


def _files(repo: Path, prefix: str) -> list[str]:
    return sorted(p for p in _git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines() if p.startswith(prefix))


def _scanner_files(mirrors: Path, spec: tuple[str, str, str]) -> tuple[Path, str, str, list[str]]:
    """A scanner's mirrored repository, its commit, the split it feeds and its files under the folder."""
    folder, prefix, split = spec
    repo = mirrors / folder / "repo"
    return repo, _git(repo, "rev-parse", "HEAD").strip(), split, _files(repo, prefix)


def noseyparker(mirrors: Path) -> list[dict[str, Any]]:
    """Each rule's ``examples`` in Nosey Parker's rule files: what its authors wrote its rule must find."""
    import yaml

    folder, prefix, split = NOSEY
    repo = mirrors / folder / "repo"
    commit = _git(repo, "rev-parse", "HEAD").strip()
    rows = []
    for path in _files(repo, prefix):
        if not path.endswith(".yml"):
            continue
        for rule in yaml.safe_load(_git(repo, "show", f"HEAD:{path}")).get("rules") or []:
            for example in rule.get("examples") or []:
                rows.append({"family": "scanner-fixtures", "kind": rule["id"], "variant": "fixture", "split": split,
                             "source": f"praetorian-inc/noseyparker@{commit[:12]}:{path}", "text": example})
    return rows


def semgrep(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The line after each ``ruleid:`` (a finding) and ``ok:`` (none) annotation of Semgrep's secret rules' tests."""
    repo, commit, split, paths = _scanner_files(mirrors, SEMGREP)
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for path in paths:
        if path.endswith((".yaml", ".yml")):
            continue
        lines = _git(repo, "show", f"HEAD:{path}").splitlines()
        for index, line in enumerate(lines[:-1]):
            mark = _ANNOTATION.match(line)
            target = lines[index + 1]
            if mark is None or mark.group(2) in NOT_SECRETS or not target.strip() or _ANNOTATION.match(target):
                continue
            source = f"semgrep/semgrep-rules@{commit[:12]}:{path}"
            if mark.group(1) == "ruleid":
                found.append({"family": "scanner-fixtures", "kind": mark.group(2), "variant": "fixture",
                              "split": split, "source": source, "text": target})
            elif mark.group(1) == "ok":
                clean.append({"kind": "scanner-ok", "split": split, "source": source, "text": target})
    return found, clean


def memory_lines(mirrors: Path) -> list[dict[str, Any]]:
    """Lines of the memory files public repositories commit (``.memory/``, ``.claude/memory/``)."""
    rows = []
    for number, folder in enumerate(MEMORY_REPOS):
        repo = mirrors / folder / "repo"
        commit = _git(repo, "rev-parse", "HEAD").strip()
        seen: set[str] = set()
        for path in _files(repo, ""):
            if not re.search(r"(?:^|/)(?:\.memory|\.claude/memory)/[^/]+\.md$", path):
                continue
            for line in _git(repo, "show", f"HEAD:{path}").splitlines():
                text = line.strip()
                if len(text) >= 20 and text not in seen and text != "---":
                    seen.add(text)
                    rows.append({"kind": "memory-file", "split": "test" if number % 2 == 0 else "train",
                                 "source": f"{folder.replace('+', '/')}@{commit[:12]}:{path}", "text": text})
    return rows


GITLEAKS = ("gitleaks+gitleaks", "cmd/generate/config/rules/", "train")
# Go: the opening of a rule's list of examples that must (tps) or must not (fps) be found.
_GO_LIST = re.compile(r"\b(tps|fps)\s*(?::=\s*\[\]string\{|=\s*append\(\s*(?:tps|fps)\s*,)")
_GO_STRING = re.compile(r'`[^`]*`|"(?:[^"\\\n]|\\.)*"')


def _go_elements(source: str, start: int) -> list[str]:
    """The elements of the Go list opened just before ``start`` that are one string literal each."""
    out: list[str] = []
    depth, element, at = 1, "", start
    while at < len(source) and depth:
        ch = source[at]
        if source.startswith("//", at):
            at = source.find("\n", at)
            at = len(source) if at < 0 else at
            continue
        literal = _GO_STRING.match(source, at)
        if literal is not None:
            element += literal.group(0)
            at = literal.end()
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if (ch == "," and depth == 1) or not depth:
            out.append(element.strip())
            element = ""
        else:
            element += ch
        at += 1
    values = []
    for item in out:
        whole = _GO_STRING.fullmatch(item)
        if whole is None:
            continue  # built by a function or joined with +: a generated value, not one written down
        values.append(item[1:-1] if item[0] == "`" else json.loads(item))
    return values


def gitleaks(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The examples written out in gitleaks' rule definitions: each rule's ``tps`` (to be found) and
    ``fps`` (not to be found) lists, the elements that are one string literal (the others are drawn at
    random by gitleaks' generator)."""
    repo, commit, split, paths = _scanner_files(mirrors, GITLEAKS)
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for path in paths:
        if not path.endswith(".go"):
            continue
        source = _git(repo, "show", f"HEAD:{path}")
        kind = Path(path).stem
        for opening in _GO_LIST.finditer(source):
            for text in _go_elements(source, opening.end()):
                if not text.strip():
                    continue
                positive = opening.group(1) == "tps"
                (found if positive else clean).append(_scanner_row(positive, f"gitleaks-{kind}", split,
                                                                   f"gitleaks/gitleaks@{commit[:12]}:{path}", text))
    return found, clean


def _scanner_row(positive: bool, kind: str, split: str, source: str, text: str) -> dict[str, Any]:
    """One scanner example: a fixture the scanner must find, or a text it must not (kind ``scanner-ok``)."""
    if positive:
        return {"family": "scanner-fixtures", "kind": kind, "variant": "fixture", "split": split, "source": source,
                "text": text}
    return {"kind": "scanner-ok", "split": split, "source": source, "text": text}


_JWT_NAME = r"(?i)(?:^|[/\s\"'-])(?:py|go-|j)?jwt(?:[/\s\"'@.-]|$)"  # a package named for JSON Web Tokens
SECRETLINT = ("secretlint+secretlint", "packages/@secretlint/", "train")
# secretlint's snapshot folders: ng.* must be reported, ok.* must not; the presets repeat the rules' own,
# and the filter, example, pattern and dotenv rules test options or file names, not text; the .p12
# inputs are binary key stores.
_SNAPSHOT = re.compile(r"^packages/@secretlint/secretlint-rule-([^/]+)/test/snapshots/(ng|ok)[^/]*/input\.(?:txt|md|ya?ml|json|env|config)$")
_SNAPSHOT_SKIP = ("preset-", "filter-comments", "example", "pattern", "no-dotenv")


def secretlint(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The input file of every snapshot test of secretlint's rules, whole: ``ng`` ones as positives,
    ``ok`` ones as benign texts."""
    repo, commit, split, paths = _scanner_files(mirrors, SECRETLINT)
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for path in paths:
        snapshot = _SNAPSHOT.match(path)
        if snapshot is None or snapshot.group(1).startswith(_SNAPSHOT_SKIP):
            continue
        text = _git(repo, "show", f"HEAD:{path}").strip("\n")
        if not text.strip():
            continue
        positive = snapshot.group(2) == "ng"
        (found if positive else clean).append(_scanner_row(positive, f"secretlint-{snapshot.group(1)}", split,
                                                           f"secretlint/secretlint@{commit[:12]}:{path}", text))
    return found, clean


# Real files that hold references, placeholders and names that look like secrets but are none, taken
# whole or by the marker of their family (never by what the rules say): (repository, path pattern,
# line marker or None for the whole file, kind). All are training sources.
PLACEHOLDER_SOURCES = (
    ("jenkinsci+pipeline-examples", r"", r"credentialsId", "credential-reference"),
    ("terraform-aws-modules+terraform-aws-rds", r"\.tf$", r"(?i)password|secret", "variable-reference"),
    ("astral-sh+uv", r"^\.github/workflows/", r"\$\{\{\s*secrets\.", "variable-reference"),
    ("pydantic+pydantic-ai", r"\.py$", r"os\.environ\[|os\.getenv\(|process\.env\.", "variable-reference"),
    ("external-secrets+external-secrets", r"^docs/.*\.md$", r"<your[-_ a-z]*>|(?i:x{4,}|changeme|example[-_]?(?:key|token|secret))",
     "documentation-placeholder"),
    ("loremipsumdonec+optimizely-cms-models", r"asset-manifest\.json$", r"\.[0-9a-f]{8}\.", "hashed-asset"),
    ("external-secrets+external-secrets", r"go\.sum$", _JWT_NAME, "jwt-package"),
    ("pydantic+pydantic-ai", r"uv\.lock$", _JWT_NAME, "jwt-package"),
    # Compose files that hand a password over by file, variable or secret name, never by value
    ("docker+awesome-compose", r"compose\.ya?ml$",
     r"(?i)(?:password|secret|_pw\b).*(?:_FILE=|/run/secrets/|\$\{|\$\$\(|file:)|^\s*-?\s*db-password:?\s*$",
     "variable-reference"),
)
MAX_PLACEHOLDER_ROWS = 60  # per source, in file and line order


def placeholders(mirrors: Path) -> list[dict[str, Any]]:
    """Benign lines of the families that look like secrets: references (Jenkins ``credentialsId``,
    ``var.db_password``, ``${{ secrets.X }}``, ``os.environ``), documentation placeholders, hashed
    asset names and package names holding "jwt"; and Kubernetes ExternalSecret manifests, whole."""
    rows: list[dict[str, Any]] = []
    for folder, path_pattern, marker, kind in PLACEHOLDER_SOURCES:
        repo = mirrors / folder / "repo"
        commit = _git(repo, "rev-parse", "HEAD").strip()
        taken: list[dict[str, Any]] = []
        seen: set[str] = set()
        for path in _files(repo, ""):
            if len(taken) >= MAX_PLACEHOLDER_ROWS or not re.search(path_pattern, path):
                continue
            for line in _git(repo, "show", f"HEAD:{path}").splitlines():
                text = line.strip()
                if len(text) >= 12 and text not in seen and re.search(marker, line):
                    seen.add(text)
                    taken.append({"kind": kind, "split": "train",
                                  "source": f"{folder.replace('+', '/')}@{commit[:12]}:{path}", "text": text})
        rows.extend(taken[:MAX_PLACEHOLDER_ROWS])
    repo = mirrors / "external-secrets+external-secrets" / "repo"
    commit = _git(repo, "rev-parse", "HEAD").strip()
    manifests = 0
    for path in _files(repo, "docs/snippets/"):
        if manifests >= MAX_PLACEHOLDER_ROWS or not path.endswith((".yaml", ".yml")):
            continue
        for document in _git(repo, "show", f"HEAD:{path}").split("\n---"):
            if re.search(r"(?m)^kind: ExternalSecret\s*$", document) and manifests < MAX_PLACEHOLDER_ROWS:
                manifests += 1
                rows.append({"kind": "external-secret", "split": "train",
                             "source": f"external-secrets/external-secrets@{commit[:12]}:{path}",
                             "text": document.strip("-\n ")})
    return rows


WHISPERS = ("Skyscanner+whispers", "tests/fixtures/", "train")
# whispers' fixtures mark their parts with a comment, a YAML key or an XML element: what follows
# "Noncompliant" (or "incompliant") must be reported, what follows "Compliant" must not.
_WHISPERS_MARK = re.compile(r"(?i)^\s*(?:#|//|;|<!--)?\s*<?(non-?compliant|incompliant|compliant)>?:?\s*(?:-->)?\s*$")
_WHISPERS_END = re.compile(r"(?i)^\s*</(?:non-?compliant|incompliant|compliant)>\s*$")


def whispers(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each marked part of whispers' test fixtures, whole: a Noncompliant part as a positive, a
    Compliant part as a benign text (configuration files, shell, code, XML and YAML)."""
    repo, commit, split, paths = _scanner_files(mirrors, WHISPERS)
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for path in paths:
        if path.endswith("/paths.yml"):
            continue  # file paths marked for whispers' path rule: no credential
        parts: list[tuple[bool, list[str]]] = []
        for line in _git(repo, "show", f"HEAD:{path}").splitlines():
            mark = _WHISPERS_MARK.match(line)
            if mark is not None:
                parts.append((not mark.group(1).lower().startswith("compliant"), []))
            elif _WHISPERS_END.match(line) is None and parts:
                parts[-1][1].append(line)
        for positive, lines in parts:
            text = "\n".join(lines).strip("\n")
            if text.strip() and not re.fullmatch(r"(?:\s*</[^>]+>)*\s*", text):  # not a bare closing tag
                (found if positive else clean).append(_scanner_row(
                    positive, f"whispers-{Path(path).name}", split,
                    f"Skyscanner/whispers@{commit[:12]}:{path}", text))
    return found, clean


TRUFFLEHOG = ("trufflesecurity+trufflehog", "pkg/detectors/", "train")
# A Go test case's input and expected findings: ``input: <expression>,`` then ``want: <expression>``.
_GO_FIELD = re.compile(r"\b(input|want)\s*:\s*")
_GO_CONST = re.compile(r"(?m)^\s*(\w+)\s*(?::=|=)\s*(`[^`]*`|\"(?:[^\"\\\n]|\\.)*\")\s*$")
_GO_VERB = re.compile(r"%[-+# 0-9.]*[sdvq]")


def _go_expression(source: str, at: int) -> tuple[str, int]:
    """The Go expression starting at ``at``, up to the comma or closing brace that ends it."""
    depth, start = 0, at
    while at < len(source):
        literal = _GO_STRING.match(source, at)
        if literal is not None:
            at = literal.end()
            continue
        ch = source[at]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if not depth:
                break
            depth -= 1
        elif ch == "," and not depth:
            break
        at += 1
    return source[start:at].strip(), at


def _go_value(expression: str, names: dict[str, str | None]) -> str | None:
    """A string literal, a constant of the file, ``a + b`` of those, or ``fmt.Sprintf`` of those;
    None for anything else (built by a function: a value nobody wrote down)."""
    expression = expression.strip()
    if _GO_STRING.fullmatch(expression):
        return expression[1:-1] if expression[0] == "`" else str(json.loads(expression))
    if re.fullmatch(r"\w+", expression):
        return names.get(expression)
    call = re.fullmatch(r"fmt\.Sprintf\((.*)\)", expression, re.S)
    parts: list[str] = []
    at, body = 0, call.group(1) if call else expression
    while at < len(body):
        part, at = _go_expression(body, at)
        parts.append(part)
        at += 1
    if call is None:
        pieces = [p.strip() for p in re.split(r"\s\+\s", expression)] if " + " in expression else []
        values = [_go_value(p, names) for p in pieces]
        return "".join(v for v in values if v is not None) if pieces and None not in values else None
    values = [_go_value(p, names) for p in parts]
    if not values or None in values or len(_GO_VERB.findall(values[0] or "")) != len(values) - 1:
        return None
    rest = iter(values[1:])
    return _GO_VERB.sub(lambda _m: str(next(rest)), values[0] or "")


def trufflehog(mirrors: Path) -> list[dict[str, Any]]:
    """The input of every case of trufflehog's detector pattern tests (``pkg/detectors/*/*_test.go``,
    not the integration tests) whose ``want`` lists findings: what the detector must find. Cases that
    want none are not taken: most hold a real-looking key the detector skips for its distance from
    the vendor's name or one changed character, which the gate is right to flag."""
    repo, commit, split, paths = _scanner_files(mirrors, TRUFFLEHOG)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in paths:
        if not path.endswith("_test.go") or path.endswith("_integration_test.go") or path.count("/") < 3:
            continue
        source = _git(repo, "show", f"HEAD:{path}")
        names: dict[str, str | None] = {}
        for name, literal in _GO_CONST.findall(source):
            value = _go_value(literal, {})
            names[name] = value if names.get(name, value) == value else None  # two values: ambiguous
        fields = list(_GO_FIELD.finditer(source))
        for field, after in itertools.pairwise(fields):
            if field.group(1) != "input" or after.group(1) != "want":
                continue
            text = _go_value(_go_expression(source, field.end())[0], names)
            want = _go_expression(source, after.end())[0]
            if text is None or not text.strip() or text in seen or re.fullmatch(r"nil|\[\][\w.]+\{\s*\}", want):
                continue
            seen.add(text)
            rows.append(_scanner_row(True, f"trufflehog-{path.split('/')[2]}", split,
                                     f"trufflesecurity/trufflehog@{commit[:12]}:{path}", text))
    return rows


DETECT_SECRETS = ("Yelp+detect-secrets", "tests/plugins/", "train")


def _py_value(node: Any, names: dict[str, Any]) -> Any:
    """A literal, a module constant, ``'…'.format(…)``, ``+``, ``%`` or a slice of those; ``...`` otherwise."""
    import ast

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id, ...)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_py_value(e, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left, right = _py_value(node.left, names), _py_value(node.right, names)
        if isinstance(left, str) and isinstance(right, str):
            return left + right if isinstance(node.op, ast.Add) else left % right
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        base = _py_value(node.value, names)
        bounds = [None if b is None else _py_value(b, names) for b in (node.slice.lower, node.slice.upper)]
        if isinstance(base, str) and all(b is None or isinstance(b, int) for b in bounds):
            return base[bounds[0]:bounds[1]]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and not node.keywords):
        template = _py_value(node.func.value, names)
        args = [_py_value(a, names) for a in node.args]
        if isinstance(template, str) and all(isinstance(a, (str, int)) for a in args):
            return template.format(*args)
    return ...


def detect_secrets(mirrors: Path) -> list[dict[str, Any]]:
    """detect-secrets' plugin tests: each ``(line, should_flag)`` case of a ``parametrize`` that is
    flagged, and each ``(line, expected_secret)`` of the keyword detector's tables in every language
    that expects a secret. Cases that expect none are not taken: they test one detector's format (a
    Discord token one character short, an npm ``_authToken`` that is a UUID, a key in C without
    quotes), and most are credentials all the same, which the gate is right to flag."""
    import ast

    repo, commit, split, paths = _scanner_files(mirrors, DETECT_SECRETS)
    found: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(path: str, text: Any) -> None:
        if isinstance(text, str) and text.strip() and text not in seen:
            seen.add(text)
            found.append(_scanner_row(True, f"detect-secrets-{Path(path).stem.removesuffix('_test')}", split,
                                      f"Yelp/detect-secrets@{commit[:12]}:{path}", text))

    for path in paths:
        if not path.endswith("_test.py"):
            continue
        tree = ast.parse(_git(repo, "show", f"HEAD:{path}"))
        names: dict[str, Any] = {}
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
                name = statement.targets[0].id
                names[name] = _py_value(statement.value, names)
                if name.endswith("_TEST_CASES") and isinstance(names[name], list):
                    for case in names[name]:
                        if isinstance(case, list) and len(case) == 2 and isinstance(case[1], str):
                            add(path, case[0])
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "parametrize" and len(node.args) >= 2):
                continue
            params = _py_value(node.args[0], names)
            cases = _py_value(node.args[1], names)
            if not (isinstance(params, str) and isinstance(cases, list)):
                continue
            fields = [p.strip() for p in params.split(",")]
            if len(fields) != 2 or fields[1] != "should_flag":
                continue
            for case in cases:
                if isinstance(case, list) and len(case) == 2 and case[1] is True:
                    add(path, case[0])
    return found


RIPSECRETS = ("sirwart+ripsecrets", "test/", "train")
# Lines of ripsecrets' "none" file that its own ignore mechanisms silence (an allowlist pragma, a value
# listed in its .secretsignore): secrets it is told to skip, not texts it must not find.
_RIPSECRETS_IGNORED = re.compile(r"pragma: allowlist secret|secretsignore")


def ripsecrets(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """ripsecrets' test inputs: every line of each ``one_per_line`` file and each ``one_per_file`` file
    whole (what its tests require it to find), and every line of the ``none`` file (what they require it
    not to find) that its own ignore markers do not silence."""
    repo, commit, split, paths = _scanner_files(mirrors, RIPSECRETS)
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for path in paths:
        text = _git(repo, "show", f"HEAD:{path}")
        source = f"sirwart/ripsecrets@{commit[:12]}:{path}"
        kind = f"ripsecrets-{Path(path).name}"
        if path.startswith("test/one_per_file/"):
            found.append(_scanner_row(True, kind, split, source, text.strip("\n")))
        elif path.startswith("test/one_per_line/"):
            found += [_scanner_row(True, kind, split, source, line) for line in text.splitlines() if line.strip()]
        elif path == "test/none":
            clean += [_scanner_row(False, kind, split, source, line) for line in text.splitlines()
                      if line.strip() and _RIPSECRETS_IGNORED.search(line) is None]
    return found, clean


TRIVY = ("aquasecurity+trivy", "pkg/fanal/secret/", "train")
_TRIVY_CASE = re.compile(r"\{\s*(?://[^\n]*\n\s*)*name:\s*\"[^\"]*\",(.*?)\n\t\t\},?\n", re.S)
_TRIVY_FINDING = re.compile(r"(\w+)\s*:=\s*types\.SecretFinding\{(.*?)\n\t\}\n", re.S)
_TRIVY_LINES = re.compile(r"RuleID:\s*\"([\w-]+)\".*?StartLine:\s*(\d+),\s*EndLine:\s*(\d+),", re.S)


def trivy(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Trivy's secret scanner tests (``scanner_test.go`` over ``testdata/``): the lines each expected
    finding of a built-in rule points at (start to end line of the input file) as positives, and every
    line of the input files that its built-in rules must find nothing in as benign lines. The file
    skipped for its name (``example-secret.txt``: trivy lets example files go by path) is left out."""
    repo, commit, split, _paths = _scanner_files(mirrors, TRIVY)
    folder = TRIVY[1]
    builtin = set(re.findall(r'\bID:\s*"([\w-]+)"', _git(repo, "show", f"HEAD:{folder}builtin-rules.go")))
    tests = _git(repo, "show", f"HEAD:{folder}scanner_test.go")
    body = tests[tests.index("func TestSecretScanner("):]
    body = body[:body.index("\nfunc ")]
    named = {name: _TRIVY_LINES.search(block) for name, block in _TRIVY_FINDING.findall(body)}
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    seen: set[str] = set()
    for case in _TRIVY_CASE.findall(body):
        config = re.search(r'configPath:\s*filepath\.Join\("testdata",\s*"([^"]+)"\)', case)
        target = re.search(r'inputFilePath:\s*(?:filepath\.Join\("testdata",\s*"([^"]+)"\)|"testdata/([^"]+)")', case)
        if config is None or target is None:
            continue
        name = target.group(1) or target.group(2)
        path = f"{folder}testdata/{name}"
        shown = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True).stdout
        lines = shown.decode("utf-8", "replace").splitlines()  # one input holds invalid UTF-8 on purpose
        source = f"aquasecurity/trivy@{commit[:12]}:{path}"
        listed = re.search(r"Findings:\s*\[\]types\.SecretFinding\{(.*)\}", case, re.S)
        refs = [] if listed is None else re.findall(r"^\s*(\w+),?\s*(?:\}|$)", listed.group(1), re.M)
        findings = [named.get(ref) for ref in refs]
        findings += [] if listed is None else list(_TRIVY_LINES.finditer(listed.group(1)))
        for finding in findings:
            if finding is None or finding.group(1) not in builtin:
                continue
            text = "\n".join(lines[int(finding.group(2)) - 1:int(finding.group(3))])
            if text.strip() and text not in seen:
                seen.add(text)
                found.append(_scanner_row(True, f"trivy-{finding.group(1)}", split, source, text))
        if listed is None and config.group(1) == "skip-test.yaml" and "example" not in name:
            for line in lines:
                if line.strip() and line not in seen:
                    seen.add(line)
                    clean.append(_scanner_row(False, "scanner-ok", split, source, line))
    return found, clean


LEAKY_REPO = ("Plazmaz+leaky-repo", ".leaky-meta/secrets.csv", "train")


def leaky_repo(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """leaky-repo's files, as its ``.leaky-meta/secrets.csv`` counts them: each file it says holds a line
    of risk, whole (a positive, kind ``leaky-<file name>``), and each file it lists with none (benign).
    Files the snapshot holds as binary or not at all (Firefox's key stores) are left out."""
    folder, meta, split = LEAKY_REPO
    repo = mirrors / folder / "repo"
    commit = _git(repo, "rev-parse", "HEAD").strip()
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    for line in _git(repo, "show", f"HEAD:{meta}").splitlines():
        fields = line.split(",")
        if line.startswith("#") or len(fields) < 3 or not fields[1].strip().isdigit():
            continue
        path, risk = fields[0].strip(), int(fields[1])
        shown = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True).stdout
        try:
            text = shown.decode("utf-8").strip("\n")
        except UnicodeDecodeError:
            continue
        if not text:
            continue
        source = f"Plazmaz/leaky-repo@{commit[:12]}:{path}"
        if risk:
            found.append(_scanner_row(True, f"leaky-{Path(path).name}", split, source, text))
        else:
            clean.append(_scanner_row(False, "scanner-ok", split, source, text))
    return found, clean


KICS = ("DataDog+kics", "assets/queries/common/passwords_and_secrets/test/", "train")
# A Terraform or shell heredoc: ``<<EOT`` (or ``<<-EOT``) up to the line that holds its word alone.
_HEREDOC = re.compile(r"<<-?\s*([A-Za-z_]+)\s*$")


def _block_around(lines: list[str], at: int) -> str:
    """The line ``at`` (0-based), or the whole heredoc body it lies in: a key's line alone is no key."""
    for start, line in enumerate(lines[:at]):
        opened = _HEREDOC.search(line)
        if opened is None:
            continue
        word = opened.group(1)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == word), len(lines))
        if start < at < end:
            return "\n".join(lines[start + 1:end])
    return lines[at]


def kics(mirrors: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """KICS' query for passwords and secrets in infrastructure files (Terraform, CloudFormation,
    Kubernetes, Compose, Dockerfiles, JSON): the line each expected result of its positive tests points
    at (the whole heredoc when the line lies in one, as a key's body does) as positives, kind
    ``kics-<query>``, and each negative test file, whole, as a benign text. DataDog's fork, whose
    snapshot fits here; the query and its tests are Checkmarx's."""
    repo, commit, split, paths = _scanner_files(mirrors, KICS)
    folder = KICS[1]
    expected = json.loads(_git(repo, "show", f"HEAD:{folder}positive_expected_result.json"))
    found: list[dict[str, Any]] = []
    clean: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for result in expected:
        path = folder + result["fileName"]
        lines = _git(repo, "show", f"HEAD:{path}").splitlines()
        text = _block_around(lines, int(result["line"]) - 1)
        query = re.sub(r"[^a-z0-9]+", "-", result["queryName"].split(" - ", 1)[-1].lower()).strip("-")
        if text.strip() and (path, text) not in seen:
            seen.add((path, text))
            found.append(_scanner_row(True, f"kics-{query}", split, f"DataDog/kics@{commit[:12]}:{path}", text))
    for path in paths:
        if Path(path).name.startswith("negative"):
            text = _git(repo, "show", f"HEAD:{path}").strip("\n")
            clean.append(_scanner_row(False, "scanner-ok", split, f"DataDog/kics@{commit[:12]}:{path}", text))
    return found, clean


# The outside sources by name (``--only``): each gives its positives and its benign rows.
def _outside_sources(mirrors: Path) -> dict[str, Callable[[], tuple[list[dict[str, Any]], list[dict[str, Any]]]]]:
    return {
        "noseyparker": lambda: (noseyparker(mirrors), []),
        "semgrep": lambda: semgrep(mirrors),
        "memory-files": lambda: ([], memory_lines(mirrors)),
        "gitleaks": lambda: gitleaks(mirrors),
        "secretlint": lambda: secretlint(mirrors),
        "placeholders": lambda: ([], placeholders(mirrors)),
        "whispers": lambda: whispers(mirrors),
        "trufflehog": lambda: (trufflehog(mirrors), []),
        "detect-secrets": lambda: (detect_secrets(mirrors), []),
        "ripsecrets": lambda: ripsecrets(mirrors),
        "trivy": lambda: trivy(mirrors),
        "leaky-repo": lambda: leaky_repo(mirrors),
        "kics": lambda: kics(mirrors),
    }


def outside(mirrors: Path, only: list[str] | None = None) -> None:
    """Replace the outside sources' rows in the corpus files; the generated rows stay as they are.
    With ``only``, just the named sources are rebuilt (from mirrors of those alone) and every other
    row, the frozen test split's included, is kept byte for byte in its place."""
    builders = _outside_sources(mirrors)
    names = only or list(builders)
    unknown = sorted(set(names) - set(builders))
    if unknown:
        raise SystemExit(f"unknown outside source(s): {', '.join(unknown)}; known: {', '.join(builders)}")
    added: dict[str, list[dict[str, Any]]] = {"positives.jsonl": [], "benign.jsonl": []}
    for name in names:
        found, clean = builders[name]()
        added["positives.jsonl"] += found
        added["benign.jsonl"] += clean
    rebuilt = {row["source"].split("@", 1)[0] for rows in added.values() for row in rows}
    outside_kinds = ("memory-file", "scanner-ok", *{k for *_, k in PLACEHOLDER_SOURCES}, "external-secret")
    for file, rows in added.items():
        with open(OUT / file, encoding="utf-8") as fh:
            if only:
                kept = [row for row in map(json.loads, fh) if row["source"].split("@", 1)[0] not in rebuilt]
            else:
                kept = [row for row in map(json.loads, fh) if row["split"] == "train"
                        and row.get("variant") != "fixture" and row.get("kind") not in outside_kinds]
        with open(OUT / file, "w", encoding="utf-8") as fh:
            for row in kept + rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of <owner>+<name>/repo git directories")
    parser.add_argument("--outside", action="store_true", help="only rebuild the outside sources' rows")
    parser.add_argument("--only", default="", help="with --outside: rebuild just these sources (comma-separated, "
                        "e.g. trufflehog,detect-secrets), keeping every other row as it is")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.outside:
        outside(args.mirrors, [n for n in args.only.split(",") if n] or None)
        return
    rng = random.Random(SEED)
    for name, rows in (("positives.jsonl", positives(rng)), ("benign.jsonl", benign(args.mirrors, rng))):
        with open(OUT / name, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
