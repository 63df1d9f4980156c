"""Checks for personal data: phone numbers, national identity numbers, birth dates.

Phone numbers are judged by ``phonenumbers`` (Google's libphonenumber metadata for every region)
and identity numbers by ``python-stdnum`` (each country's check digits and embedded birth date),
so a number that only has the right length passes. Both are imported on the first candidate only:
the per-prompt path (credential masking) never runs these rules.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .tokens import looks_fake

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The rule's check name -> the python-stdnum module that validates that identity number.
ID_MODULES = {
    "id-br-cpf": "br.cpf", "id-ca-sin": "ca.sin", "id-in-aadhaar": "in_.aadhaar", "id-fr-nir": "fr.nir",
    "id-it-codicefiscale": "it.codicefiscale", "id-no-fodselsnummer": "no.fodselsnummer",
    "id-pl-pesel": "pl.pesel", "id-ro-cnp": "ro.cnp", "id-se-personnummer": "se.personnummer",
    "id-nl-bsn": "nl.bsn", "id-es-dni": "es.dni", "id-es-nie": "es.nie", "id-fi-hetu": "fi.hetu",
    "id-dk-cpr": "dk.cpr", "id-be-nn": "be.nn", "id-ch-ssn": "ch.ssn", "id-de-idnr": "de.idnr",
    "id-pt-cc": "pt.cc", "id-cn-ric": "cn.ric", "id-mx-curp": "mx.curp", "id-cl-rut": "cl.rut",
    "id-kr-rrn": "kr.rrn", "id-za-idnr": "za.idnr", "id-il-idnr": "il.idnr", "id-ee-ik": "ee.ik",
    "id-lt-asmens": "lt.asmens", "id-bg-egn": "bg.egn", "id-tr-tckimlik": "tr.tckimlik",
    "id-us-ssn": "us.ssn", "id-gb-nhs": "gb.nhs", "id-ar-dni": "ar.dni", "id-co-nit": "co.nit",
    "id-is-kennitala": "is_.kennitala", "id-cz-rc": "cz.rc", "id-at-vnr": "at.vnr", "id-br-cnpj": "br.cnpj",
    "id-in-pan": "in_.pan",
}
# NANP 555-0100 to 555-0199 are reserved for fiction (films, documentation).
_FICTIONAL = re.compile(r"^(?:1)?[2-9]\d{2}55501\d{2}$")
_DIGITS = re.compile(r"\d")
_DATE_SHAPE = re.compile(r"\d{4}[-./]\d{1,2}.*|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


def _digits(value: str) -> str:
    return "".join(_DIGITS.findall(value))


@lru_cache(maxsize=64)
def _stdnum(module: str) -> Any:
    import importlib

    return importlib.import_module(f"stdnum.{module}")


def national_id(name: str) -> Any:
    module = ID_MODULES[name]

    def check(secret: str, _context: str, _params: dict[str, float]) -> bool:
        return _stdnum_valid(module, secret)

    check.__name__ = name.replace("-", "_")
    return check


@lru_cache(maxsize=1)
def _national_table() -> list[tuple[str, str, Any]]:
    """(region, national prefix, general pattern) of every region libphonenumber knows."""
    import phonenumbers
    from phonenumbers import PhoneMetadata

    table = []
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        meta = PhoneMetadata.metadata_for_region(region)
        general = meta.general_desc.national_number_pattern if meta and meta.general_desc else None
        if meta is not None and general:
            table.append((region, meta.national_prefix or "", re.compile(f"(?:{general})")))
    return table


def _groups(text: str) -> list[int]:
    return [len(run) for run in re.findall(r"\d+", text)]


@lru_cache(maxsize=4096)
def _valid_phone(candidate: str, strict: bool) -> bool:
    """Valid for some region; ``strict`` also wants the digits grouped as that region writes them."""
    import phonenumbers

    digits = _digits(candidate)
    if _FICTIONAL.match(digits):
        return False
    if candidate.lstrip("(").startswith("+"):
        try:
            return phonenumbers.is_valid_number(phonenumbers.parse(candidate, None))
        except phonenumbers.NumberParseException:
            return False
    written = _groups(candidate)
    for region, prefix, general in _national_table():
        national = digits[len(prefix):] if prefix and digits.startswith(prefix) else digits
        if not general.fullmatch(national):
            continue
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        if not phonenumbers.is_valid_number(number):
            continue
        # Any 8 to 12 digits are valid somewhere; grouped the way that region prints its numbers
        # ("(11) 91234-5678", "06-12345678", "612 34 56 78") they are a phone number, not a count.
        canonical = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        groups = _groups(canonical)
        if (prefix and not digits.startswith(prefix) and canonical.lstrip("(").startswith(prefix)
                and groups and groups[0] > len(prefix)):
            groups[0] -= len(prefix)  # written without the trunk prefix: 98765 43210 for 098765 43210
        if not strict or groups == written:
            return True
    return False


def _phone(secret: str, strict: bool) -> bool:
    digits = _digits(secret)
    if not 7 <= len(digits) <= 15 or len(set(digits)) < 3:
        return False
    # Dates (2024.01.15, 31-01-2024) are not numbers to call.
    if _DATE_SHAPE.fullmatch(secret.strip()):
        return False
    groups = _groups(secret)
    if strict and not secret.startswith("+"):
        # One unbroken run is a phone only next to a phone label; so are eight digits, unless written
        # in pairs (21 28 53 47), behind an area code in parentheses or after a trunk 0 (08-12 97 41).
        if len(groups) < 2:
            return False
        if len(digits) < 9 and not (len(groups) >= 3 or secret.startswith(("(", "0"))):
            return False
    return _valid_phone(secret.strip(), strict)


def phone(secret: str, _context: str, _params: dict[str, float]) -> bool:
    return _phone(secret, strict=True)


def phone_labelled(secret: str, _context: str, _params: dict[str, float]) -> bool:
    return _phone(secret, strict=False)


_DATE = re.compile(r"(\d{1,4})[./\- ](\d{1,2}|[A-Za-zÀ-ÿ]{3,12})\.?[./\- ,]{1,2}(\d{2,4})")
MIN_BIRTH_YEAR = 1900
MAX_BIRTH_YEAR = 2015


def birth_date(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A calendar date whose year could be a living person's birth year."""
    years = [int(y) for y in re.findall(r"\d{4}", secret)]
    if not years:
        # Two-digit years only next to a DOB label: the rule's pattern requires one.
        return bool(_DATE.search(secret))
    return any(MIN_BIRTH_YEAR <= y <= MAX_BIRTH_YEAR for y in years)


def named_birth_date(secret: str, context: str, params: dict[str, float]) -> bool:
    """A name then a date: a birth date when the year is a living person's and the name is not a heading."""
    first = secret.split()[0].rstrip(",(:")
    if first.lower() in _HEADING_WORDS:
        return False
    return birth_date(secret, context, params)


_HEADING_WORDS = frozenset("""
release version meeting notes changelog updated update created modified published sprint build deploy
deployed migration backup snapshot report review retro standup planning january february march april may
june july august september october november december monday tuesday wednesday thursday friday saturday
sunday last next since until before after from due date on as of the a
""".split())


def kr_registration(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A South Korean registration number: a resident's (python-stdnum's check), or a foreign resident's,
    whose seventh digit is 5 to 8 and whose check digit is (13 - weighted sum mod 11) mod 10."""
    if _stdnum_valid("kr.rrn", secret):
        return True
    number = _digits(secret)
    if len(number) != 13 or number[6] not in "5678":
        return False
    try:
        _stdnum("kr.rrn").get_birth_date(number)
    except Exception:  # not a calendar date
        return False
    weights = (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)
    total = sum(w * int(n) for w, n in zip(weights, number, strict=False))
    return int(number[12]) == (13 - total % 11) % 10


def _stdnum_valid(module: str, value: str) -> bool:
    try:
        return bool(_stdnum(module).is_valid(value))
    except Exception:  # stdnum raises its own errors on malformed input; malformed means no ID
        return False


def _stdnum_check(module: str) -> Any:
    return lambda value: _stdnum_valid(module, value)


def _korean(value: str) -> bool:
    return kr_registration(value, "", {})


# A label -> the checks of the numbers it names, for the identity and tax numbers too weak to judge without
# one (eight to thirteen digits, any of which a checksum passes one time in ten). ``national-id-labelled``
# finds the label; the number must pass one of its country's checks.
LABELLED_IDS: tuple[tuple[tuple[str, ...], tuple[Any, ...]], ...] = (
    (("pps",), (_stdnum_check("ie.pps"),)),
    (("cnic",), (_stdnum_check("pk.cnic"),)),
    (("nric", "mykad"), (_stdnum_check("my.nric"),)),
    (("tfn", "tax file number"), (_stdnum_check("au.tfn"),)),
    (("amka", "αμκα"), (_stdnum_check("gr.amka"),)),
    (("oib",), (_stdnum_check("hr.oib"),)),
    (("emšo", "emso"), (_stdnum_check("si.emso"),)),
    (("ird",), (_stdnum_check("nz.ird"),)),
    (("my number", "mynumber", "マイナンバー", "個人番号"), (_stdnum_check("jp.in_"),)),
    (("kennitala", "kennitölu"), (_stdnum_check("is_.kennitala"),)),
    (("nhs",), (_stdnum_check("gb.nhs"),)),
    (("rodné číslo", "rodne cislo", "rodného čísla", "rodneho cisla"),
     (_stdnum_check("cz.rc"), _stdnum_check("sk.rc"))),
    (("sv-nummer", "sv nummer", "svnr", "sozialversicherungsnummer", "versicherungsnummer"),
     (_stdnum_check("at.vnr"),)),
    (("rrn", "frn", "resident registration", "alien registration", "주민등록번호", "외국인등록번호"), (_korean,)),
    (("thai id", "เลขประจำตัวประชาชน", "เลขบัตรประชาชน"), (_stdnum_check("th.pin"),)),
    (("rnokpp", "рнокпп"), (_stdnum_check("ua.rntrc"),)),
)


def id_labelled(secret: str, context: str, _params: dict[str, float]) -> bool:
    """The number after a national-ID label (see ``LABELLED_IDS``) passes the check of a country the
    label names."""
    if looks_fake(secret):
        return False  # 1234567T, 12345-1234567-1: a typed-in sample, not someone's number
    lowered = context.lower()
    # The number may run on into another one ("TFN 123 456 782 2024"): each shorter reading is tried too.
    readings = [secret]
    while (cut := max(readings[-1].rfind(sep) for sep in " ./-")) > 0:
        readings.append(readings[-1][:cut])
    return any(check(reading) for labels, checks in LABELLED_IDS if any(label in lowered for label in labels)
               for check in checks for reading in readings)


def id_dashed(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """Numbers whose dashes alone mark them: Pakistan's CNIC (5-7-1 digits) and Malaysia's NRIC (6-2-4,
    a birth date and a state code)."""
    return not looks_fake(secret) and (_stdnum_valid("pk.cnic", secret) or _stdnum_valid("my.nric", secret))


def id_eleven_digit(secret: str, context: str, params: dict[str, float]) -> bool:
    value = secret.replace(" ", "")
    return any(CHECKS[name](value, context, params)
               for name in ("id-pl-pesel", "id-no-fodselsnummer", "id-tr-tckimlik", "id-ee-ik", "id-lt-asmens",
                            "id-br-cpf"))


CHECKS = {"phone": phone, "phone-labelled": phone_labelled, "birth-date": birth_date,
          **{name: national_id(name) for name in ID_MODULES}, "id-kr-rrn": kr_registration,
          "id-labelled": id_labelled, "id-dashed": id_dashed}
