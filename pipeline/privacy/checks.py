"""Post-match validators that turn a regex hit into a finding only when the value is plausible."""

from __future__ import annotations

import re
from collections.abc import Callable

from .numbers import (
    address,
    bsn_nl,
    card,
    dni_es,
    hetu_fi,
    iban,
    ipv4_public,
    ipv6_public,
    luhn,
    nino_uk,
    passport,
    ssn_us,
)
from .personal import CHECKS as PERSONAL_CHECKS
from .personal import id_eleven_digit, named_birth_date
from .tokens import (
    SETTING,
    crc32_tail,
    is_random_token,
    keyed_token,
    looks_fake,
    names_reference,
    random_token,
    shannon_entropy,
    vendor_token,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

# A check receives the secret text, the whole match text and the rule's parameters.
Check = Callable[[str, str, dict[str, float]], bool]

def entropy(secret: str, _context: str, params: dict[str, float]) -> bool:
    # Letters-only or digits-only runs are words and counters, not keys, whatever their entropy.
    has_digit = any(ch.isdigit() for ch in secret)
    has_alpha = any(ch.isalpha() for ch in secret)
    return has_digit and has_alpha and shannon_entropy(secret) >= params.get("min_entropy", 3.5)


def basic_auth(secret: str, _context: str, _params: dict[str, float]) -> bool:
    import base64
    import binascii

    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("utf-8", "replace")
    user, sep, password = text.partition(":")
    return bool(sep and user and password)


_REFERENCE_LEADS = ("<", "{", "[", "(", "@", "/", "~", "./", "../", "env:", "vault:", "op://", "secret:",
                    "arn:", "projects/", "keyvault:", "file:", "http://", "https://", "process.env", "os.environ",
                    "os.getenv", "getenv(", "System.getenv", "Environment.GetEnvironmentVariable", "import.meta.env",
                    "Deno.env", "config.", "settings.", "env.", "secrets.", "vars.", "ENV[",
                    # Terraform and HCL references: var.db_password, local.x, module.db.password, !local.x
                    "var.", "local.", "module.", "data.", "each.", "self.", "!var.", "!local.",
                    # CloudFormation intrinsic functions, all of them in their short form:
                    # MasterUserPassword: !Ref 'DbPassword', HasPassword: !Not [!Equals [...]]
                    "!Ref", "!Sub", "!GetAtt", "!ImportValue", "!FindInMap", "!Join", "!Select", "!If",
                    "!Base64", "!Cidr", "!GetAZs", "!Split", "!Transform", "!And", "!Equals", "!Not", "!Or",
                    "!Condition", "!ForEach", "!ToJsonString", "!Length")
# The name a value is given, when it names a reference or an identifier rather than a secret: the
# Jenkins credentialsId, .NET UserSecretsId, a client or key id, a secret's name, path or variable.

# A value made of words (database-password, MY_ENV_VAR1, privateKey, secret00), set under a name that
# names a key: the key a secret is stored under (secretKey, key, property, secretName), not the secret.
# Identifiers keep one style: kebab or snake in lower case, upper snake, or lower camel case; a value of
# capitalised words (Nimbus.Harbor45) is a passphrase.
_WORDS_VALUE = re.compile(r"[a-z]+[0-9]{0,3}(?:[-_.](?:[a-z]+[0-9]{0,3}|[0-9]{1,3}))*"
                          r"|[A-Z]+[0-9]{0,3}(?:_(?:[A-Z]+[0-9]{0,3}|[0-9]{1,3}))*|[a-z]+(?:[A-Z][a-z]+)+[0-9]{0,3}")
_KEY_NAME = re.compile(r"(?:[kK]ey|KEY|[nN]ame|NAME|[pP]roperty|PROPERTY|[fF]ield|FIELD|[iI]tem)$")
# A package coordinate or a file with its version (io.jsonwebtoken:jjwt-jackson-0.11.2, jwt-decode@4.0.0).
_VERSIONED = re.compile(r"[-@:/_]v?[0-9]+(?:\.[0-9]+)+(?:[-.][A-Za-z0-9]+)?$")


def names_key(secret: str, context: str) -> bool:
    """``secretKey: database-password``: words under a key-naming setting name a stored secret's key."""
    value = secret.strip("\"'`")
    if _WORDS_VALUE.fullmatch(value) is None or is_random_token(value, 8):
        return False
    head = context[: context.rfind(secret)] if secret in context else ""
    setting = SETTING.search(head[-80:])
    return setting is not None and _KEY_NAME.search(setting.group(1)) is not None


_PROSE_STOPWORDS = frozenset("""
the a an is are was were be been being in on at to of for from by with and or not no yes it this that there here
stored kept saved set required needed missing wrong correct invalid valid expired rotated changed reset updated
same different empty blank optional mandatory protected encrypted hashed salted managed shared available unknown
in-vault hidden secret private public strong weak long short new old default manual automatic generated random
field prompt policy manager change reset rotation length strength hash also still only never always now then
""".split())


def _classes(value: str) -> int:
    return sum((any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
                any(not c.isalnum() for c in value)))


def _is_reference(value: str) -> bool:
    """A variable, template, path or secret-manager reference rather than the literal it stands for."""
    if value.startswith("%"):
        return value.count("%") >= 2 and value[1:].split("%", 1)[0].replace("_", "").isalnum()  # %APPDATA%
    if value.startswith("$"):
        return value[1:2].isalpha() or value[1:2] in "_{($"  # $$VAR: a Compose or Make variable
    return value.startswith(_REFERENCE_LEADS) or _TEMPLATE.search(value) is not None


# A template or substitution, well formed: ``${NAME}``, ``${{ secrets.X }}``, ``{{ .Values.x }}``,
# ``$(cat file)``, a format string's field (``"prefix_{}"``, ``"{0}-suffix"``). Brackets that do not
# close in order (``m{{h}o)p${e]nob(…``) are a password's symbols, not a reference.
_TEMPLATE = re.compile(r"\$\{\{[^{}]*\}\}|\$\{[^{}\[\]()<>]*(?:\([^()]*\)[^{}()]*)?\}|\{\{[^{}]*\}\}|\$\([^()]*\)"
                       r"|\{[0-9]*\}")


_CODE_START = re.compile(r"[A-Za-z_$][\w.$]*[(\[]")
_CLOSING = {")": "(", "]": "[", "}": "{"}


def _balanced(value: str) -> bool:
    """Brackets that close in the order they opened, as code and templates write them."""
    open_: list[str] = []
    for ch in value:
        if ch in "([{":
            open_.append(ch)
        elif ch in _CLOSING and (not open_ or open_.pop() != _CLOSING[ch]):
            return False
    return not open_


def _is_code(value: str) -> bool:
    """A call or a subscript (``getpass()``, ``jwt.encode(payload``, ``env["X"]``), cut or whole; a
    password's symbols (``m{{h}o)p${e]…``) open and close brackets out of order and start with none."""
    return _CODE_START.match(value) is not None or _balanced(value)


# Code quoted as a string: a function or method call ("obj.aFunctionCall()").
_CALL = re.compile(r"[A-Za-z_][\w.]*\([^()]*\)")


def quoted_secret(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A quoted literal that reads as a secret: no sentence, label, reference or placeholder."""
    value = secret.strip()
    if len(value) < 6 or _is_reference(value) or looks_fake(value) or names_reference(secret, _context):
        return False
    if names_key(secret, _context) or _VERSIONED.search(value) or _CALL.fullmatch(value):
        return False
    if " " in value:
        return is_random_token(value.replace(" ", ""))  # a label or prompt is words
    if value.isdigit() or value.lower() in ("true", "false", "null", "none", "undefined"):
        return False
    parts = value.split(".")
    if len(parts) > 1 and all(p.isidentifier() and p.islower() for p in parts):
        return False  # a module or settings path ('django.contrib.auth')
    if value.replace("_", "").replace("-", "").isalpha() and (value.isupper() or value.islower() or value.istitle()):
        return False  # a word or a name written in one case, or capitalised ("Bearer")
    return _classes(value) >= 2


def cli_value(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A flag value that is a literal password, not a variable, a prompt request or another flag."""
    value = secret.strip("\"'`")
    if len(value) < 3 or _is_reference(value) or value.startswith("-") or looks_fake(value):
        return False
    if value.lower() in ("stdin", "-", "prompt", "env", "file", "true", "false"):
        return False
    if value.isalpha() and (value.islower() or len(value) < 6):
        return False  # -pthread, -print, -pedantic: compiler and find flags
    if value.isdigit() and len(value) < 6:
        return False  # a port, a count, a patch level (-p1)
    return True


def user_password(secret: str, context: str, params: dict[str, float]) -> bool:
    """``user:password`` (curl -u) or ``user%password`` (smbclient -U) with a literal password."""
    sep = ":" if ":" in secret else "%"
    user, _, password = (part.strip("\"'{}") for part in secret.partition(sep))
    if user.isdigit() and password.isdigit():
        return False  # uid:gid (docker run -u 1000:1000)
    if not password:
        # An API key as the user name with no password (curl -u "sk_live_…:"), as several APIs take it.
        return len(user) >= 8 and _classes(user) >= 2 and cli_value(user, context, params)
    return cli_value(password, context, params)


def url_password(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """The password of ``scheme://user:password@host``, whatever the host: not a template, a
    variable or a typed-in filler (the rule's allowlist names the words documentation uses). A
    password equal to its user's name (``admin:admin@…``) still opens the host."""
    value = secret
    if "{" in value or "}" in value or "%s" in value or _is_reference(value):
        return False
    return not looks_fake(value)


def license_key(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """Five groups of letters and digits: a key when it mixes both and is not a typed-in filler."""
    body = secret.replace("-", "")
    return (any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and len(set(body.upper())) >= 8
            and not looks_fake(secret))


# An apostrophe or a backtick inside a word (it's, don`t) leaves it a word.
_WORD_JOINS = str.maketrans("", "", "'`")


def _member_access(value: str) -> bool:
    """Code reading a field (``event.ResourceProperties.AllowUsersToChangePassword``, ``this.Password``):
    identifiers joined by dots, the first a lower-case object and the next a member; a passphrase of
    capitalised words (``Nimbus.Harbor45``) starts with a capital."""
    parts = value.split(".")
    return (len(parts) > 1 and all(p.isidentifier() for p in parts) and parts[0][:1].islower()
            and (len(parts) > 2 or not parts[1].islower()))


def prose_password(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """The word after "the password is": a password unless it is an ordinary word of the sentence."""
    value = secret.rstrip(".!?)")
    if len(value) < 4 or _is_reference(value) or looks_fake(value):
        return False
    if value.startswith(("_", "-")) or value.endswith((":", "[")) or "=" in value or "(" in value:
        return False  # code after the verb "pass" (pass is_admin=True, pass_through(...)), a subscript
    if value.lower() in _PROSE_STOPWORDS or _member_access(value):
        return False
    word = value.translate(_WORD_JOINS)
    if word.isalpha() and word.islower() and len(word) < 10:
        return False  # "the password is stored …", "le mot de passe est requis", "it's in the vault"
    return True


def pair_password(secret: str, context: str, params: dict[str, float]) -> bool:
    """The second half of ``admin/…`` after a login word: a password when it holds a digit or a
    symbol as well as letters; a word alone there is more often a second name (GitHub / GitLab)."""
    value = secret.rstrip(".!?)")
    return (any(c.isalpha() for c in value) and any(not c.isalpha() for c in value)
            and _VERSION.fullmatch(value) is None and prose_password(secret, context, params))


_VERSION = re.compile(r"v?[0-9]+(?:\.[0-9]+)+(?:[-+.][A-Za-z0-9.]+)?")
_BARE_SYMBOLS = frozenset("!@#$%^&*+?~")


def bare_password(secret: str, context: str, params: dict[str, float]) -> bool:
    """A value written straight after "password", with no verb between: only one no identifier or
    sentence word looks like, eight characters or more holding letters, digits and a symbol
    (``Winter2024!``, ``S3cure#Pass``). Identifiers (``Argon2id``, ``PasswordPolicy2``), file names and
    versions have no such symbol; a sentence's closing stop is not one."""
    value = secret.rstrip(".,)")
    if len(value) < 8 or "/" in value or "\\" in value or _VERSION.fullmatch(value) is not None:
        return False
    return (any(c.isalpha() for c in value) and any(c.isdigit() for c in value)
            and any(c in _BARE_SYMBOLS for c in value) and prose_password(secret, context, params))


# Values that name a type or a constant where a declaration, not an assignment, was matched.
_NOT_LITERALS = frozenset("""
true false null none undefined nil string str int integer bool boolean number bytes object secretstr
optional option text varchar char uuid any unknown redacted masked hidden required
""".split())


# A type or class name: capitalised words run together (TokenVerifier, SettingsSourceCallable).
_PASCAL_CASE = re.compile(r"(?:[A-Z][a-z]+){2,}")


def secret_value(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """An assigned value looks like a real secret, not a reference, a word, a number, a path or a type
    (``token: TokenVerifier``)."""
    value = secret.strip("\"'`")
    if not any(c in value for c in "([{"):
        # the end of the call or signature the assignment sits in: f(token_data=token_data), (token: T):
        value = value.rstrip(":;,)]}")
    if _PASCAL_CASE.fullmatch(value):
        return False
    if len(value) < 6 or value.lower().rstrip(",;)>]") in _NOT_LITERALS:
        return False
    if value[0] in "/~$%<{[(@." or value.startswith(("./", "http://", "https://", "file:")):
        return False
    if value.rstrip(",;").endswith("}}") and "{{" not in value:
        return False  # the tail of a template written across lines (…:secret:tiny::}})
    if _is_reference(value) or names_reference(secret, _context) or names_key(secret, _context):
        return False
    if _VERSIONED.search(value):
        return False
    if value.isdigit() or (("(" in value or "[" in value) and _is_code(value)):
        return False
    # Dotted identifiers are code (settings.SECRET_KEY, process.env.TOKEN), not literals.
    parts = value.split(".")
    if len(parts) > 1 and all(p.isidentifier() for p in parts):
        return False
    if value.replace("_", "").isalpha() and (value.isupper() or value.islower()):
        return False
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return classes >= 2


def _word_password(secret: str, context: str) -> bool:
    """A plain word (``sunshine``, ``Dragonfly``) where the syntax says a password stands: weak, but
    real; not a literal such as ``none``, a word of a sentence, a typed-in filler or a reference."""
    value = secret.strip("\"'`{}")
    lowered = value.lower()
    if len(value) < 4 or not value.isalpha() or lowered in _NOT_LITERALS or lowered in _PROSE_STOPWORDS:
        return False
    return not (looks_fake(value) or names_reference(secret, context))


def slot_password(secret: str, context: str, params: dict[str, float]) -> bool:
    """The value of a connection string's ``Pwd=``/``Password=``: a literal secret, or a word."""
    return secret_value(secret, context, params) or _word_password(secret, context)


def slot_cli_password(secret: str, context: str, params: dict[str, float]) -> bool:
    """The password a tool takes as its own argument (``psexec -p``, ``sshpass -p``, ``net use``): a
    literal, or a word (where ``-p`` could be a compiler flag the tool's name is required first)."""
    return cli_value(secret, context, params) or _word_password(secret, context)


CHECKS: dict[str, Check] = {
    **PERSONAL_CHECKS,
    "card": card,
    "quoted-secret": quoted_secret,
    "cli-value": cli_value,
    "user-password": user_password,
    "url-password": url_password,
    "license-key": license_key,
    "prose-password": prose_password,
    "pair-password": pair_password,
    "bare-password": bare_password,
    "passport": passport,
    "address": address,
    "named-birth-date": named_birth_date,
    "id-eleven-digit": id_eleven_digit,
    "random-token": random_token,
    "vendor-token": vendor_token,
    "keyed-token": keyed_token,
    "crc32-tail": crc32_tail,
    "luhn": luhn,
    "iban": iban,
    "entropy": entropy,
    "ipv4-public": ipv4_public,
    "ipv6-public": ipv6_public,
    "ssn-us": ssn_us,
    "nino-uk": nino_uk,
    "bsn-nl": bsn_nl,
    "hetu-fi": hetu_fi,
    "dni-es": dni_es,
    "basic-auth": basic_auth,
    "secret-value": secret_value,
    "slot-password": slot_password,
    "slot-cli-password": slot_cli_password,
}
