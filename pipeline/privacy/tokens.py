"""Checks that tell a random credential from text that only looks random.

A token is judged by its shape, not by the words around it: memories are sentences ("the deploy
uses dapi… for the workspace"), so a key must be caught without "key" next to it. What looks random
but is not a secret is recognised explicitly: hex runs (commit ids, digests, UUIDs), integrity and
digest prefixes, base64 images, SOPS and age ciphertext, versions, slugs and file names.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HEX = frozenset("0123456789abcdefABCDEF")
# Runs typed by hand in documentation: a value holding one is a placeholder, not a key.
_FAKE_RUNS = ("abc123", "123abc", "xyz123", "abcxyz", "xyz789", "123456", "abcdef", "deadbeef", "fake", "sample",
              "abcd1234", "1234abcd")
# Letter-digit-case changes per character: a random base62 run changes class ~0.6 times per
# character, a lowercase base36 run ~0.4, an identifier or a word with a number well under 0.2.
MIN_CHANGE_RATE = 0.25
MIXED_CASE_CHANGE_RATE = 0.42
# Next to a credential word a random run may change class less: a 22-character base62 key holds a run of
# ten capitals about once in a few hundred draws, and camelCase words are still told apart by their parts.
KEYED_MIXED_CASE_CHANGE_RATE = 0.3
# RFC 4648 base32 (letters and the digits 2-7: Azure DevOps' legacy tokens, MFA seeds) holds fewer digits,
# so a random run of it changes class ~0.3 times per character: 0.25 left one 52-character token in five.
# A long one-case run in that alphabet may change less, down to 0.18, while its letters stay random: about
# one vowel in five (words joined by digits, backend2frontend3service4, hold two in five).
BASE32_CHANGE_RATE = 0.18
BASE32_MIN_CHARS = 40
BASE32_MAX_VOWEL_SHARE = 0.3
# Next to a credential word, a one-case run of 20 characters or more only has to show some change and
# letters that do not spell words: 0.25 left about one random 32-character base36 key in ten
# (``ik0oco5xwzhagmknehebjch5189hncok`` changes 0.19 times a character), and the word already says what
# the value is. Alone in prose the run still needs the full rate: ids in recorded traffic look the same.
KEYED_ONE_CASE_CHANGE_RATE = 0.12
KEYED_ONE_CASE_MIN_CHARS = 20
# The letter pairs that make up 90 % of the pairs in the words of Debian's ``wamerican`` list (SCOWL,
# 2020.12.07). In random letters about three pairs in ten are among them (0.64 one time in a hundred);
# in words joined by digits seven to nine in ten (python3slim12bookworm2025: 0.67).
_WORD_PAIRS = frozenset((
    "ab ac ad ag ai al am an ap ar as at au av ay ba be bi bl bo br bu ca ce ch ci ck cl co cr ct cu da "
    "de di do dr ds ea ec ed ee ef eg el em en ep er es et ev ex fa fe ff fi fl fo fr fu ga ge gh gi gl "
    "go gr gu ha he hi ho ia ib ic id ie if ig il im in io ip ir is it iv iz ke ki ks la le li ll lo ls "
    "lu ly ma mb me mi mm mo mp mu na nc nd ne ng ni nn no ns nt oa ob oc od og ol om on oo op or os ot "
    "ou ov ow pa pe ph pi pl po pp pr ps pu qu ra rc rd re ri rm rn ro rr rs rt ru ry sa sc se sh si sl "
    "sm so sp ss st su ta te th ti tl to tr ts tt tu ty ua ub uc ue ui ul um un up ur us ut va ve vi wa "
    "we wi ze"
).split())
MAX_WORD_PAIR_SHARE = 0.6
MIN_RANDOM_CHARS = 16
KEYED_MARGIN = 1.0  # entropy a keyed value may fall short of log2(length); 0.6 for a token alone
# Random hex carries close to 4 bits a character (32 digits: under 3.05 one time in 10,000); eight
# digits typed in blocks of four carry 3.
MIN_HEX_ENTROPY = 3.05
# Next to a credential word, hex from 16 digits on is a key (vendors issue 16-, 24- and 30-digit ones);
# random 16 digits fall under log2(16) - 1.4 = 2.6 bits about one time in a hundred, 20 digits under
# 2.92 about two in a hundred; fillers typed in blocks (aaaabbbbcccc0000) carry 2.
MIN_KEYED_HEX = 16
SHORT_HEX_MARGIN = 1.4


def shannon_entropy(value: str) -> float:
    if not value:
        return 0.0
    total = len(value)
    return -sum((n / total) * math.log2(n / total) for n in Counter(value).values())


# Regular expressions do the per-character work in C: the scan calls these for every long token.
_CLASS_RUNS = re.compile(r"[0-9]+|[a-z]+|[A-Z]+|[^0-9A-Za-z]+")
_SPLIT = re.compile(r"[-_./+~=:]+")
_HEX_ONLY = re.compile(r"[0-9a-fA-F-]+")
_SAME_8 = re.compile(r"(.)\1{7}")
_DIGIT = re.compile(r"[0-9]")
_LETTER = re.compile(r"[A-Za-z]")
_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
_BASE32 = re.compile(r"[a-z2-7]+|[A-Z2-7]+")
_VOWELS = re.compile(r"[aeiouAEIOU]")
_LETTERS = re.compile(r"[A-Za-z]")
# Capitalised words, a lowercase head and short numbers: what a camelCase identifier is made of.
_IDENTIFIER_PARTS = re.compile(r"[A-Z][a-z]{2,}|^[a-z]{2,}|[0-9]{1,2}")
IDENTIFIER_COVER = 0.85


def change_rate(segment: str) -> float:
    if len(segment) < 2:
        return 0.0
    return (len(_CLASS_RUNS.findall(segment)) - 1) / (len(segment) - 1)


def looks_fake(value: str) -> bool:
    """Typed-in sample values: a long run of one character or a keyboard sequence."""
    lowered = value.lower()
    return any(run in lowered for run in _FAKE_RUNS) or _SAME_8.search(value) is not None


def _random_letters(segment: str) -> bool:
    """At most three vowels in ten letters: random letters hold about two, words joined by digits four."""
    return len(_VOWELS.findall(segment)) <= BASE32_MAX_VOWEL_SHARE * len(_LETTERS.findall(segment))


_LETTER_RUNS = re.compile(r"[a-z]{2,}")


def _spells_words(segment: str) -> bool:
    """Most pairs of adjacent letters are pairs that words are made of (``_WORD_PAIRS``)."""
    pairs = [run[i:i + 2] for run in _LETTER_RUNS.findall(segment.lower()) for i in range(len(run) - 1)]
    return not pairs or sum(1 for pair in pairs if pair in _WORD_PAIRS) > MAX_WORD_PAIR_SHARE * len(pairs)


def _random_segment(segment: str, mixed_rate: float = MIXED_CASE_CHANGE_RATE, keyed: bool = False) -> bool:
    if len(segment) < 6 or not _DIGIT.search(segment) or not _LETTER.search(segment):
        return False
    if _ULID.fullmatch(segment):
        return False  # a ULID: a timestamp-ordered id (job_01HZX3K7Q9…), not a key
    if _HEX_ONLY.fullmatch(segment):
        return False  # hex is a digest, a commit or an id far more often than a key
    mixed_case = not (segment.islower() or segment.isupper())
    if mixed_case and sum(map(len, _IDENTIFIER_PARTS.findall(segment))) >= IDENTIFIER_COVER * len(segment):
        return False  # IdTech2HudNumberFont, base64EncodeUtf8String: words run together, not a key
    # Random base62 changes class ~0.6 times per character, camelCase identifiers with a digit
    # (Lwjgl3GameLauncher) ~0.3; one-case random runs (base36) change ~0.4 times, part numbers less.
    if mixed_case:
        return change_rate(segment) >= mixed_rate
    rate = change_rate(segment)
    if rate >= MIN_CHANGE_RATE:
        return True
    if keyed and rate >= KEYED_ONE_CASE_CHANGE_RATE and len(segment) >= KEYED_ONE_CASE_MIN_CHARS:
        return not _spells_words(segment)
    return (rate >= BASE32_CHANGE_RATE and len(segment) >= BASE32_MIN_CHARS and _BASE32.fullmatch(segment) is not None
            and _random_letters(segment))


def random_chars(value: str) -> int:
    """How many characters of ``value`` sit in segments that look machine-made."""
    return sum(len(s) for s in _SPLIT.split(value) if _random_segment(s))


def is_random_token(value: str, min_chars: int = MIN_RANDOM_CHARS, margin: float = 0.6,
                    mixed_rate: float = MIXED_CASE_CHANGE_RATE, keyed: bool = False) -> bool:
    core = value.strip("=")
    if _HEX_ONLY.fullmatch(core):
        return False
    alnum = "".join(s for s in _SPLIT.split(core) if _random_segment(s, mixed_rate, keyed))
    if len(alnum) < min_chars or looks_fake(core):
        return False
    # A random run of n characters has close to log2(n) bits of entropy per character; codes made of
    # repeated digits and a few letters (V010SP13RC181024R16900) fall well short of it.
    return shannon_entropy(alnum) >= min(4.0, math.log2(max(len(alnum), 2)) - margin)


# The first bytes of files that travel as base64 in text: PNG, JPEG, GIF, WebP, SVG/XML, PDF, gzip, zip.
_FILE_MAGIC = ("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "PHN2Zy", "PD94bWwg", "JVBERi0", "H4sI", "UEsDB")


def _path_or_link(value: str) -> bool:
    """``//host/path`` after a scheme, ``github.com/org/repo/…``, or a file path of words."""
    if value.startswith("//"):
        return True
    first = value.split("/", 1)[0]
    return "/" in value and "." in first and first.rsplit(".", 1)[-1].isalpha()


def random_token(secret: str, _context: str, params: dict[str, float]) -> bool:
    """A machine-made token in prose. What is random by design (digests, integrity hashes, base64
    files, links, SOPS ciphertext) is recognised here or by the rule set's benign spans.
    """
    if len(secret) < 20 or secret.startswith(_FILE_MAGIC) or _path_or_link(secret):
        return False
    return is_random_token(secret, int(params.get("min_chars", MIN_RANDOM_CHARS)))


_DIGEST_WORDS = ("commit", "sha", "hash", "digest", "checksum", "fingerprint", "revision", "etag", "integrity",
                 "object id", "oid", "build id", "trace", "request id", "uuid", "guid",
                 "cache key", "cache_key", "cache-key", "cachekey")  # a cache key is a digest of its inputs


def keyed_token(secret: str, context: str, params: dict[str, float]) -> bool:
    """A value written next to a credential word: random-looking, or long hex that no digest word explains."""
    if context.find(secret) > params.get("max_gap", 80):
        return False
    lowered = context.lower()
    if any(word in lowered for word in _DIGEST_WORDS) or looks_fake(secret):
        return False

    if names_reference(secret, context):
        return False
    core = secret.strip("=")
    digits = core.replace("-", "")
    if len(digits) >= MIN_KEYED_HEX and _HEX_ONLY.fullmatch(core):
        # Hex or a UUID handed to a token setting (Heroku, Snyk and others issue UUID keys; Plaid a
        # 30-digit secret); a filler typed in blocks (aaaabbbb-cccc-dddd-eeee-000011112222) has too few
        # distinct digits. A shorter run carries less entropy by chance, so its bar is lower.
        bar = min(MIN_HEX_ENTROPY, math.log2(len(digits)) - SHORT_HEX_MARGIN)
        return shannon_entropy(digits) >= bar
    # Next to a credential word a shorter or plainer run is enough (a 26-character base36 hook id).
    return is_random_token(core, 12, KEYED_MARGIN, KEYED_MIXED_CASE_CHANGE_RATE, keyed=True)


def vendor_token(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """A prefixed vendor token whose random part is not a typed-in sample."""
    body = secret.split("_", 1)[-1] if "_" in secret[:12] else secret
    return not looks_fake(body)


def _base62_crc32(data: str) -> str:
    value = zlib.crc32(data.encode("ascii", "replace"))
    digits = ""
    while value:
        value, rest = divmod(value, 62)
        digits = _BASE62[rest] + digits
    return digits.rjust(6, "0")


def crc32_tail(secret: str, _context: str, _params: dict[str, float]) -> bool:
    """GitHub and npm tokens end in a base62 CRC32 of their random part; a sample that fails it and
    looks typed-in is a placeholder. A failing checksum alone still counts: a mangled copy leaks too.
    """
    body = secret.rsplit("_", 1)[-1]
    if len(body) > 6 and _base62_crc32(body[:-6]) == body[-6:]:
        return True
    return vendor_token(secret, _context, _params)


_REFERENCE_NAME = re.compile(r"(?:[iI][dD]s?|[nN]ame|NAME|[rR]ef|REF|[aA]rn|ARN|[uU]r[li]|UR[LI]|[pP]ath|PATH|"
                             r"[fF]ile|FILE|[vV]ariable|VARIABLE|[vV]ar|VAR|[kK]ey[vV]ault|[hH]ash|HASH)$")
# The setting name a value stands under (``name: value``, ``name = "value"``, ``<name>value``).
SETTING = re.compile(r"([A-Za-z0-9_.$-]+)[\"'`\]>]*\s*(?::=|=>|==|[:=(,<>])?\s*[rbuf]?[\"'`(<]*\s*$")


def names_reference(secret: str, context: str) -> bool:
    """The value's setting name ends in Id, Name, Ref, Url, Path, File or Variable: it names a
    reference (``credentialsId: '29f6…'``, ``<UserSecretsId>79a3…``), not the secret itself."""
    head = context[: context.rfind(secret)] if secret in context else ""
    setting = SETTING.search(head[-80:])
    return setting is not None and _REFERENCE_NAME.search(setting.group(1)) is not None
