"""Post-match validators that turn a regex hit into a finding only when the value is plausible."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

# A check receives the secret text, the whole match text and the rule's parameters.
Check = Callable[[str, str, dict[str, float]], bool]

_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22,
    "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27,
    "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}

_HETU_CHECK = "0123456789ABCDEFHJKLMNPRSTUVWXY"
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_NINO_BAD_PREFIXES = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def _digits(value: str) -> str:
    return "".join(ch for ch in value if ch.isdigit())


def shannon_entropy(value: str) -> float:
    if not value:
        return 0.0
    total = len(value)
    return -sum((n / total) * math.log2(n / total) for n in Counter(value).values())


def luhn(secret: str, _context: str, _params: dict[str, float]) -> bool:
    digits = _digits(secret)
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 3:
        return False
    total = 0
    for index, ch in enumerate(reversed(digits)):
        n = int(ch)
        if index % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def iban(secret: str, _context: str, _params: dict[str, float]) -> bool:
    value = secret.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(value[:2]) != len(value):
        return False
    rearranged = value[4:] + value[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in rearranged))
    except ValueError:
        return False
    return number % 97 == 1


def entropy(secret: str, _context: str, params: dict[str, float]) -> bool:
    # Letters-only or digits-only runs are words and counters, not keys, whatever their entropy.
    has_digit = any(ch.isdigit() for ch in secret)
    has_alpha = any(ch.isalpha() for ch in secret)
    return has_digit and has_alpha and shannon_entropy(secret) >= params.get("min_entropy", 3.5)


def _version_context(context: str, secret: str) -> bool:
    # The rule's optional lead group only matches version words, so any letters before
    # the address mean the dotted quad was introduced as a version.
    head = context[: context.find(secret)]
    return any(ch.isalpha() for ch in head)


def ipv4_public(secret: str, context: str, _params: dict[str, float]) -> bool:
    import ipaddress

    if _version_context(context, secret):
        return False
    try:
        address = ipaddress.IPv4Address(secret)
    except ValueError:
        return False
    return address.is_global and not address.is_multicast


def ipv6_public(secret: str, _context: str, _params: dict[str, float]) -> bool:
    import ipaddress

    try:
        address = ipaddress.IPv6Address(secret)
    except ValueError:
        return False
    # Only 2000::/3 is handed out as global unicast; hex words like dead::beef fall outside it.
    if address not in ipaddress.IPv6Network("2000::/3"):
        return False
    return address.is_global and address not in ipaddress.IPv6Network("2001:db8::/32")


def ssn_us(secret: str, _context: str, _params: dict[str, float]) -> bool:
    digits = _digits(secret)
    if len(digits) != 9:
        return False
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    if area in ("000", "666") or area.startswith("9"):
        return False
    return group != "00" and serial != "0000"


def nino_uk(secret: str, _context: str, _params: dict[str, float]) -> bool:
    value = secret.replace(" ", "").upper()
    return len(value) == 9 and value[:2] not in _NINO_BAD_PREFIXES


def bsn_nl(secret: str, _context: str, _params: dict[str, float]) -> bool:
    digits = _digits(secret)
    if len(digits) != 9 or digits == "0" * 9:
        return False
    weights = (9, 8, 7, 6, 5, 4, 3, 2, -1)
    return sum(int(d) * w for d, w in zip(digits, weights, strict=False)) % 11 == 0


def hetu_fi(secret: str, _context: str, _params: dict[str, float]) -> bool:
    value = secret.upper()
    if len(value) != 11 or not value[:4].isdigit():
        return False
    day, month = int(value[0:2]), int(value[2:4])
    if not (1 <= day <= 31 and 1 <= month <= 12):
        return False
    number = value[0:6] + value[7:10]
    if not number.isdigit():
        return False
    return _HETU_CHECK[int(number) % 31] == value[10]


def dni_es(secret: str, _context: str, _params: dict[str, float]) -> bool:
    value = secret.replace("-", "").upper()
    # A foreigner's NIE maps its X/Y/Z lead letter to 0/1/2 before the same mod-23 letter.
    if value[:1] in "XYZ":
        value = str("XYZ".index(value[0])) + value[1:]
    number, letter = value[:-1], value[-1:]
    if not number.isdigit() or len(number) != 8:
        return False
    return _DNI_LETTERS[int(number) % 23] == letter


def phone(secret: str, _context: str, _params: dict[str, float]) -> bool:
    digits = _digits(secret)
    if not 8 <= len(digits) <= 15 or len(set(digits)) < 3:
        return False
    # Dotted digit groups with a 4-digit lead are dates or versions (2024.01.15), not numbers.
    return not (secret[:4].isdigit() and secret[4:5] in ".-/")


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


def secret_value(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """An assigned value looks like a real secret, not a reference, a word, a number or a path."""
    value = secret.strip("\"'`")
    if len(value) < 6 or value.lower() in ("true", "false", "null", "none", "undefined"):
        return False
    if value[0] in "/~$%<{[(@." or value.startswith(("./", "http://", "https://", "file:")):
        return False
    if "(" in value or "[" in value or value.isdigit():
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


CHECKS: dict[str, Check] = {
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
    "phone": phone,
    "basic-auth": basic_auth,
    "secret-value": secret_value,
}
