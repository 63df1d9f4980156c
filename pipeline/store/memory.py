"""One memory file: strict names, frontmatter parsing (host shapes too) and canonical rendering."""

from __future__ import annotations

import re
from _json import encode_basestring as _quote

from ..errors import InputRejected
from ..frozen import FrozenValue
from . import evidence as _evidence

# Read on every prompt (``memfold inject``): datetime, dataclasses and typing are left out of the import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Collection
    from typing import Any

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\.md")
MAX_NAME_LEN = 128
INDEX_NAME = "MEMORY.md"
TYPES = ("user", "feedback", "project", "reference")
VISIBILITIES = ("safe", "private")
_KNOWN = ("name", "description", "type", "visibility", "created", "modified", "expires")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_STAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_PLAIN_RE = re.compile(r"^[A-Za-z0-9_./(][^\n]*$")
_YAML_SPECIAL = re.compile(r"(: |\s#|^[-?:,\[\]{}#&*!|>'\"%@`]|:$|\s$)")
_NUMBER_RE = re.compile(r"^[-+]?[\d.]+([eE][-+]?\d+)?$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "~", "y", "n"}
# Bidi controls and other invisible format characters can disguise text; drop them too.
_INVISIBLE = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}
# Windows opens these devices instead of a file of that name in any directory, whatever the extension
# (``aux.md`` too), so a teammate on Windows could not check out a mirror holding one. The superscript
# digits are on Microsoft's list as well; the name pattern cannot produce them, the check refuses them anyway.
_WINDOWS_DEVICES = frozenset(
    {
        "con",
        "prn",
        "aux",
        "nul",
        *(f"{port}{digit}" for port in ("com", "lpt") for digit in "0123456789\u00b9\u00b2\u00b3"),
    }
)


def normalize_name(raw: str) -> str:
    """Accept ``foo`` or ``foo.md`` from a user and return the file name."""
    name = raw if raw.endswith(".md") else f"{raw}.md"
    check_name(name)
    return name


def check_name(name: str) -> None:
    if len(name) > MAX_NAME_LEN or not NAME_RE.fullmatch(name):
        raise InputRejected(
            f"{name!r} is not a valid memory file name",
            code="memory.name",
            hint="use letters, digits, '_' and '-', starting with a letter or digit, ending in .md "
            "(e.g. project_deploy-target.md)",
        )
    if name.lower() == INDEX_NAME.lower():
        raise InputRejected(f"{name} is reserved for the index", code="memory.name")
    if windows_reserved(name):
        raise InputRejected(
            f"{name} is a device name on Windows, where the mirror could not be checked out",
            code="memory.name-reserved",
            hint="pick another name; CON, PRN, AUX, NUL, COM0-9 and LPT0-9 are refused with any extension",
        )


def windows_reserved(name: str) -> bool:
    """True when Windows treats ``name`` as a device: the part before the first dot, without the
    trailing dots and spaces Windows strips, is a device name in any case."""
    return name.split(".", 1)[0].rstrip(" .").lower() in _WINDOWS_DEVICES


def is_memory_name(name: str) -> bool:
    return (len(name) <= MAX_NAME_LEN and bool(NAME_RE.fullmatch(name)) and name.lower() != "memory.md"
            and not windows_reserved(name))


def sanitize_line(value: str) -> str:
    """One-line fields: drop control and invisible characters, collapse whitespace."""
    if value.isascii() and value.isprintable():
        return " ".join(value.split())  # nothing to drop (the common case, without a per-character loop)
    import unicodedata  # a shared library to load: only for text that needs it

    kept = []
    for ch in value:
        if ch in "\t\n\r":
            kept.append(" ")
        elif unicodedata.category(ch) not in _INVISIBLE:
            kept.append(ch)
    return " ".join("".join(kept).split())


def today(now: dt.datetime) -> str:
    return _utc(now, "%Y-%m-%d")


def stamp(now: dt.datetime) -> str:
    return _utc(now, "%Y-%m-%dT%H:%M:%SZ")


def _utc(now: dt.datetime, fmt: str) -> str:
    import datetime as dt

    return now.astimezone(dt.UTC).strftime(fmt)


class Memory(FrozenValue):
    """One parsed memory; immutable (parsed memories are shared between readers by content hash)."""

    __slots__ = ("name", "description", "type", "visibility", "created", "modified", "expires", "body", "extra",
                 "evidence")
    name: str
    description: str
    type: str
    visibility: str
    created: str | None
    modified: str | None
    expires: str | None
    body: str
    extra: dict[str, Any]
    # The repository text the memory cites (``store.evidence``), in the order written.
    evidence: tuple[_evidence.Cite, ...]

    def __init__(self, name: str, description: str, type: str = "project", visibility: str = "private",
                 created: str | None = None, modified: str | None = None, expires: str | None = None,
                 body: str = "", extra: dict[str, Any] | None = None,
                 evidence: tuple[_evidence.Cite, ...] = ()) -> None:
        self._set(name=name, description=description, type=type, visibility=visibility, created=created,
                  modified=modified, expires=expires, body=body, extra={} if extra is None else extra,
                  evidence=tuple(evidence))

    __hash__ = None  # type: ignore[assignment]  # ``extra`` is a dict

    @property
    def is_safe(self) -> bool:
        return self.visibility == "safe"


def _as_text(value: Any, key: str, file: str) -> str:
    if type(value) is str:
        return value  # the canonical reader's values, and most of YAML's
    import datetime as dt

    if isinstance(value, dt.datetime):
        return stamp(value if value.tzinfo else value.replace(tzinfo=dt.UTC))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise InputRejected(f"{file}: frontmatter field {key!r} must be a string", code="memory.field")


def split_frontmatter(text: str, file: str) -> tuple[str, str]:
    if not text.startswith("---\n"):
        raise InputRejected(
            f"{file}: no frontmatter (the file must start with a '---' line)",
            code="memory.frontmatter",
            hint="start the file with ---, the name/description/type fields, and --- again",
        )
    end = text.find("\n---\n", 3)
    if end == -1:
        if text.endswith("\n---"):
            end = len(text) - 4
        else:
            raise InputRejected(f"{file}: frontmatter is not closed by a '---' line", code="memory.frontmatter")
    return text[4 : end + 1], text[end + 5 :]


# The canonical frontmatter render_memory writes: known keys, one per line, each value either a plain
# scalar YAML can only read as that very string, or a double-quoted string without escapes.
_CANON_KEYS = frozenset(_KNOWN)
_CANON_PLAIN = re.compile(r"[A-Za-z_/(][^\t]*")
_CANON_QUOTED = re.compile(r'"[^"\\\t]*"')
# What YAML's reader refuses or treats as a line break (it would fail or fold where a split would not).
_YAML_ODD = "[^\x0a\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]"
_YAML_BOOL_NULL = {"yes", "no", "true", "false", "on", "off", "null"}
_CANON_WORDS = frozenset(TYPES + VISIBILITIES)


def _canonical_meta(head: str) -> tuple[dict[str, str], tuple[_evidence.Cite, ...]] | None:
    """The fields of a canonical head without YAML (which costs ~50 ms to import), or None to use YAML.

    Only what YAML provably reads as the same strings is accepted: plain values that start with a
    letter, '_', '/' or '(' and are not a YAML bool/null word (no other implicit type starts so), the
    exact quoting render_memory uses, and dates/stamps that are valid (YAML reads those as date objects,
    which ``_as_text`` turns back into the identical string).
    """
    if head.isascii():
        if not head.replace("\n", "").isprintable():
            return None
    elif re.search(_YAML_ODD, head):  # compiled on first use only: the class is slow to compile
        return None
    meta: dict[str, str] = {}
    if not head.endswith("\n"):
        return None
    lines = head[:-1].split("\n")
    cites: tuple[_evidence.Cite, ...] = ()
    if "evidence:" in lines:
        # The block render_memory writes: the key alone, then its entries, up to the next key.
        at = lines.index("evidence:")
        end = at + 1
        while end < len(lines) and lines[end][:1] in ("-", " "):
            end += 1
        block = _evidence.parse_block(lines[at + 1:end])
        if block is None:
            return None
        cites, lines = block, lines[:at] + lines[end:]
    for line in lines:
        # ``key: value`` with a known key, given once, and a non-empty value.
        key, sep, value = line.partition(": ")
        if not sep or not value or key not in _CANON_KEYS or key in meta:
            return None
        if value in _CANON_WORDS:
            pass
        elif _CANON_QUOTED.fullmatch(value):
            value = value[1:-1]
        elif _DATE_RE.match(value) or _STAMP_RE.match(value):
            if not _valid_stamp(value):
                return None
        elif (not _CANON_PLAIN.fullmatch(value) or _YAML_SPECIAL.search(value)
              or value.lower() in _YAML_WORDS or value.lower() in _YAML_BOOL_NULL):
            return None  # what _scalar would quote, or what YAML would read as a bool or null
        meta[key] = value
    return meta, cites


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _valid_stamp(value: str) -> bool:
    """Whether ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM:SSZ`` names a real day and time.

    The same answer as ``date.fromisoformat``/``datetime.fromisoformat``, without importing datetime.
    """
    if not value.isascii():
        return False
    year, month, day = int(value[:4]), int(value[5:7]), int(value[8:10])
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if year < 1 or not 1 <= month <= 12 or not 1 <= day <= _MONTH_DAYS[month - 1] + (month == 2 and leap):
        return False
    return len(value) == 10 or (int(value[11:13]) < 24 and int(value[14:16]) < 60 and int(value[17:19]) < 60)


def parse_memory(data: bytes, file: str = "<memory>") -> Memory:
    """Parse a memory file; accepts CRLF and the ``metadata: {type: …}`` host shape."""
    return build_memory(*memory_fields(data, file), file)


def memory_fields(data: bytes, file: str = "<memory>") -> tuple[dict[str, str], dict[str, Any], str]:
    """A memory file as written, before defaults: the known fields it gives (as text, the host shape
    folded in), every other frontmatter key, and the body. A merge tells a missing field from a default."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputRejected(f"{file}: not valid UTF-8 (byte {exc.start})", code="memory.encoding") from None
    text = text.replace("\r\n", "\n")
    if text.startswith("\ufeff"):
        text = text[1:]
    head, body = split_frontmatter(text, file)
    canonical = _canonical_meta(head)
    if canonical is not None:
        # Citations, as YAML would read the block: a merge compares them like any other field.
        evidence = {"evidence": _evidence.as_yaml(canonical[1])} if canonical[1] else {}
        return canonical[0], evidence, body  # known keys with string values only
    fields, extra = _normalise(_yaml_meta(head, file), file)
    return fields, extra, body


def _yaml_meta(head: str, file: str) -> Any:
    import yaml

    from .jsontext import TooDeep
    from .yamltext import load_yaml

    try:
        meta = load_yaml(head) if head.strip() else {}
    except TooDeep as exc:
        raise InputRejected(f"{file}: frontmatter is {exc}", code="memory.yaml-depth",
                            hint="keep the frontmatter to flat fields; nothing memfold reads nests") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise InputRejected(f"{file}: frontmatter is not valid YAML{where}", code="memory.yaml",
                            hint="quote a value that holds ': ' or starts with a special character") from None
    except ValueError:
        # YAML reads 2026-13-45 as a timestamp and its constructor refuses the day.
        raise InputRejected(f"{file}: frontmatter holds a date that does not exist", code="memory.date",
                            hint="write dates as real days, YYYY-MM-DD") from None
    return meta


def _normalise(meta: Any, file: str) -> tuple[dict[str, str], dict[str, Any]]:
    """YAML's frontmatter as (known fields as text, everything else); folds the host shapes in."""
    if not isinstance(meta, dict):
        raise InputRejected(f"{file}: frontmatter must be a mapping", code="memory.frontmatter")
    meta = dict(meta)
    metadata = meta.get("metadata")
    if "type" not in meta and isinstance(metadata, dict) and "type" in metadata:
        meta["type"] = metadata["type"]
        rest = {k: v for k, v in metadata.items() if k != "type"}
        if rest:
            meta["metadata"] = rest
        else:
            del meta["metadata"]
    fields: dict[str, str] = {}
    for key in _KNOWN:
        if meta.get(key) is not None:
            fields[key] = _as_text(meta[key], key, file)
    return fields, {str(k): v for k, v in meta.items() if k not in _KNOWN}


def build_memory(fields: dict[str, str], extra: dict[str, Any], body: str, file: str) -> Memory:
    """The memory of :func:`memory_fields`' parts, defaults filled in; refuses what no memory may hold."""
    cites: tuple[_evidence.Cite, ...] = ()
    if "evidence" in extra:
        extra = dict(extra)
        cites = _evidence.cites_of(extra.pop("evidence"), file)
    name = sanitize_line(fields.get("name", "")) or file.rsplit("/", 1)[-1].removesuffix(".md")
    description = sanitize_line(fields.get("description", ""))
    if not description:
        raise InputRejected(f"{file}: frontmatter has no description", code="memory.description",
                            hint="add a one-line description: it is what the index shows")
    mtype = fields.get("type", "project")
    if mtype not in TYPES:
        raise InputRejected(f"{file}: type {mtype!r} is not one of {', '.join(TYPES)}", code="memory.type")
    visibility = fields.get("visibility", "private")
    if visibility not in VISIBILITIES:
        raise InputRejected(f"{file}: visibility {visibility!r} is not safe or private", code="memory.visibility")
    for key in ("created", "expires"):
        value = fields.get(key)
        if value is not None and not _DATE_RE.match(value[:10]):
            raise InputRejected(f"{file}: {key} {value!r} is not a date (YYYY-MM-DD)", code="memory.date")
    return Memory(
        name=name,
        description=description,
        type=mtype,
        visibility=visibility,
        created=fields.get("created"),
        modified=fields.get("modified"),
        expires=fields.get("expires"),
        body=body.lstrip("\n"),
        extra=extra,
        evidence=cites,
    )


def _scalar(value: str) -> str:
    if (
        _PLAIN_RE.match(value)
        and not _YAML_SPECIAL.search(value)
        and value.lower() not in _YAML_WORDS
        and not _NUMBER_RE.match(value)
    ):
        return value
    # What json.dumps(value, ensure_ascii=False) returns for a string, without building an encoder
    # per call (a field of every memory an import writes).
    return _quote(value)


def render_memory(memory: Memory, omit: Collection[str] = ()) -> bytes:
    """Canonical bytes: the DESIGN.md field order, LF line endings, one trailing newline.

    ``omit`` leaves out ``name``, ``type`` or ``visibility``, which otherwise show their defaults: a merge
    keeps a file without them as it was.
    """
    lines = ["---", f"name: {_scalar(memory.name)}", f"description: {_scalar(memory.description)}",
             f"type: {memory.type}", f"visibility: {memory.visibility}"]
    if omit:
        lines = [lines[0], *(line for line in lines[1:] if line.partition(":")[0] not in omit or
                             line.startswith("description:"))]
    for key in ("created", "modified", "expires"):
        value = getattr(memory, key)
        if value is None:
            continue
        if _DATE_RE.match(value) or _STAMP_RE.match(value):
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {_scalar(value)}")
    lines.extend(_evidence.render_lines(memory.evidence, _quote))
    if memory.extra:
        import yaml

        dumped = yaml.safe_dump(memory.extra, sort_keys=True, allow_unicode=True, default_flow_style=False)
        lines.extend(dumped.rstrip("\n").split("\n"))
    lines.append("---")
    body = memory.body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    text = "\n".join(lines) + "\n" + (body + "\n" if body else "")
    return text.encode("utf-8")
