"""Checks for numbers and places that identify a person or a host: card numbers (Luhn), IBANs (mod 97),
national numbers that carry their own check (US SSN, UK NINO, Dutch BSN, Finnish HETU, Spanish DNI and
NIE), public IP addresses, passport numbers and postal addresses.

Each is a post-match check, as ``checks`` names them: the rule's pattern found the shape, the check
says whether the value could be a real one. All of it is plain Python; the numbers that need a
country's tables (phones, most identity numbers) are ``personal``'s.
"""

from __future__ import annotations

from .tokens import looks_fake

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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


def luhn(secret: str, _context: str, _params: dict[str, float]) -> bool:
    digits = _digits(secret)
    if not 12 <= len(digits) <= 19 or len(set(digits)) < 3:
        return False
    total = 0
    for index, ch in enumerate(reversed(digits)):
        n = int(ch)
        if index % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def card(secret: str, context: str, params: dict[str, float]) -> bool:
    """A Luhn-valid card number that is not one of the repetitive numbers processors publish for tests."""
    digits = _digits(secret)
    if len(set(digits[-10:])) <= 3:
        return False  # 4000 0000 0000 0077, 5555 5555 5555 4444: typed test numbers, not issued cards
    groups = [len(g) for g in secret.replace("-", " ").split()]
    # Cards are written in one run or in their network's groups (4-4-4-4, 4-6-5, 4-6-4), not 3-3-3-3.
    if len(groups) > 1 and groups[0] != 4:
        return False
    return luhn(secret, context, params)


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


_ADDRESS_WORDS = frozenset("""
ip ipv4 ips host hostname server address addr at to from via on is was connect connects connected reach peer
gateway gw dns resolver nameserver proxy endpoint node box vm machine instance public egress ingress nat
whitelist allowlist allow deny block blocked ping ssh curl route origin upstream backend frontend client
""".split())


_VERSION_WORDS = frozenset(("version", "ver", "build", "release", "rev", "firmware", "kernel", "driver", "v", "bump",
                            "upgrade", "assembly", "sdk", "runtime", "api"))


def _version_context(context: str, secret: str) -> bool:
    """A dotted quad right after a product or version word is a version (MonoGame 3.8.4.1, v1.2.3.4)."""
    head = context[: context.find(secret)].split()
    if not head:
        return False
    word = head[0].lower().strip(".:=")
    if word in _VERSION_WORDS:
        return True
    if word in _ADDRESS_WORDS or (len(head) > 1 and head[-1].lower() in _ADDRESS_WORDS):
        return False
    return head[0][:1].isupper() or any(ch.isdigit() for ch in head[0])


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


def passport(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """Passport numbers mix digits in (C01X00T47, 53AB46417); a word after the label is no number."""
    digits = _digits(secret)
    return len(digits) >= 1 and len(set(secret)) >= 4 and not looks_fake(secret)


_POSTAL = None


def _postal() -> Any:
    global _POSTAL
    if _POSTAL is None:
        import re

        city = r"[ ]+\(?[A-ZÀ-ÞŁŚŻ][\w\u00C0-\u024F'-]+"
        _POSTAL = re.compile("|".join((
            r"\b[A-Z]{2}[ ]+[0-9]{5}(?:-[0-9]{4})?\b",            # US state + ZIP
            r"\b[A-Z]{2,3}[ ]+[0-9]{4}\b",                        # AU state + code
            r"\b[A-Z]{1,2}[0-9][A-Z0-9]?[ ]?[0-9][A-Z]{2}\b",     # UK
            r"\b[A-Z][0-9][A-Z][ ]?[0-9][A-Z][0-9]\b",            # CA
            r"\b[0-9]{4}[ ]?[A-Z]{2}\b",                          # NL
            r"\b[0-9]{5}-[0-9]{3}\b", r"\b[0-9]{4}-[0-9]{3}\b",  # BR, PT
            r"\b[0-9]{2}-[0-9]{3}" + city, r"\b[0-9]{3}[ ][0-9]{2}" + city,  # PL, SE/CZ/SK/GR
            r"\b[0-9]{3}-[0-9]{4}\b",                             # JP
            r"\b[0-9]{4,6}" + city, r"\b(?:[A-Z]{1,2}-)?[0-9]{4,5}" + city,  # code then city (most of Europe)
        )))
    return _POSTAL


def address(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A street with a house number followed closely by a postal code that is not the house number."""
    import re

    first = re.search(r"[0-9]+", secret)
    if first is None:
        return False
    window = secret[first.end(): first.end() + 70]
    return _postal().search(window) is not None
