"""The context snapshot: a bounded, normalised, byte-stable copy of one session transcript.

Shape (written as ``dump_json(obj)``; its sha256 is the run's snapshot digest)::

    {
      "kind": "memfold-context-snapshot",
      "schemaVersion": 1,
      "contextMode": "transcript" | "disabled",
      "format": "claude-jsonl" | "pi-session" | "pi-json" | "codex-rollout" | "json" | "none",
      "source": "<file basename, never a path>",
      "entries": [{"role": "user" | "assistant" | "tool", "text": str,
                   "tool": {"name": str, "input": any}?, "truncated": true?}],
      "candidates": [{"name"?, "description"?, "type"?, "visibility"?: str, "body": str,
                      "origin": "record" | "tool-call" | "remember-line" | "candidates-array",
                      "truncated": true?}],
      "stats": {"lines": int, "skipped": int, "entries": int}
    }

Decisions:

* ``format`` is ``json`` for plain JSON, JSONL of ``{role, content}`` messages, and for
  input in which no known format was recognised (then ``entries`` may be empty).
* An assistant tool call is an entry with ``text: ""`` and ``tool``; a tool result is a
  ``tool`` entry. Thinking/reasoning blocks are dropped.
* ``stats.lines`` counts physical lines (a trailing newline does not start one);
  ``stats.skipped`` counts blank lines and lines that are not a JSON object (JSONL only).
* Candidates appear in this order: the ``candidates`` array, ``memory_candidate``
  records (file order), then candidates found in the entries; exact duplicates are
  dropped. A ``memory_candidate`` record carries the memory type as ``memoryType``.
* Text over ``max_text_bytes`` (UTF-8) is cut at a character boundary and the item
  gets ``"truncated": true``; a tool input whose JSON is over the bound is replaced by
  its cut JSON text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import InputRejected
from ..frozen import FrozenValue, Slotted
from ..store.jsontext import dump_json
from .boundedjson import TooDeep, loads_bounded
from .transcripts import Entry, Record, detect_format, normaliser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .artifacts import Writer

KIND = "memfold-context-snapshot"
SCHEMA_VERSION = 1
MiB = 1 << 20


class ContextLimits(FrozenValue):
    """Hard bounds on a context input; the text bound truncates, the others reject."""

    __slots__ = ("max_input_bytes", "max_depth", "max_entries", "max_candidates", "max_text_bytes")
    max_input_bytes: int
    max_depth: int
    max_entries: int
    max_candidates: int
    max_text_bytes: int

    def __init__(self, max_input_bytes: int = 32 * MiB, max_depth: int = 128, max_entries: int = 100_000,
                 max_candidates: int = 1_000, max_text_bytes: int = 64 * 1024) -> None:
        self._set(max_input_bytes=max_input_bytes, max_depth=max_depth, max_entries=max_entries,
                  max_candidates=max_candidates, max_text_bytes=max_text_bytes)


class _Parsed(Slotted):
    __slots__ = ("document", "records", "lines", "skipped")
    # the whole input as one JSON value, or None in line mode
    document: Any
    records: list[Record]
    lines: int
    skipped: int

    def __init__(self, document: Any, records: list[Record], lines: int, skipped: int) -> None:
        self.document = document
        self.records = records
        self.lines = lines
        self.skipped = skipped



_NO_DOCUMENT = object()


def build_snapshot(data: bytes | None, *, source: str, limits: ContextLimits) -> tuple[dict[str, Any], bytes]:
    """Normalise transcript bytes (None: context disabled) into the snapshot object and its bytes."""
    name = _basename(source)
    if data is None:
        obj = _snapshot("disabled", "none", name, [], [], lines=0, skipped=0)
        return obj, dump_json(obj)
    if len(data) > limits.max_input_bytes:
        raise InputRejected(
            f"context input {name!r} is {len(data)} bytes, over the {limits.max_input_bytes}-byte bound",
            code="context.too-large",
            hint="pass a shorter transcript with --context, or --no-context",
        )
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    parsed = _parse(text, limits.max_depth)
    fmt, messages, given = _split_document(parsed)
    if fmt is None:
        fmt = detect_format(messages)
    raw_entries = normaliser(fmt, limits.max_depth)(messages)
    if len(raw_entries) > limits.max_entries:
        raise InputRejected(
            f"context input {name!r} has {len(raw_entries)} entries, over the {limits.max_entries} bound",
            code="context.too-many-entries",
            hint="pass a shorter transcript with --context, or --no-context",
        )
    # Imported here: it imports yaml (~25 ms), which a run without context never needs.
    from .candidates import entry_candidates

    candidates = _dedupe(given + entry_candidates(raw_entries))
    if len(candidates) > limits.max_candidates:
        raise InputRejected(
            f"context input {name!r} has {len(candidates)} memory candidates, over the "
            f"{limits.max_candidates} bound",
            code="context.too-many-candidates",
            hint="consolidate in smaller batches",
        )
    entries = [_bound_entry(e, limits.max_text_bytes) for e in raw_entries]
    bounded = [_bound_text(c, "body", limits.max_text_bytes) for c in candidates]
    obj = _snapshot("transcript", fmt, name, entries, bounded, lines=parsed.lines, skipped=parsed.skipped)
    return _encode(obj)


def snapshot_run(run_dir: Path, data: bytes | None, *, source: str, limits: ContextLimits,
                 write: Writer | None = None) -> tuple[dict[str, Any], str]:
    """The run's snapshot, written once as ``snapshot.json`` (by ``write``: ``fsutil.write_artifact``
    unless given); returns it and its digest."""
    if write is None:
        from ..fsutil import write_artifact

        write = write_artifact

    snapshot, encoded = build_snapshot(data, source=source, limits=limits)
    return snapshot, write(run_dir, "snapshot.json", encoded)


def _basename(source: str) -> str:
    # Paths from any platform: the snapshot must never leak the user's directory layout.
    return re.split(r"[\\/]", source)[-1]


def _snapshot(
    mode: str, fmt: str, source: str, entries: list[Entry], candidates: list[Record], *, lines: int, skipped: int
) -> dict[str, Any]:
    return {
        "kind": KIND,
        "schemaVersion": SCHEMA_VERSION,
        "contextMode": mode,
        "format": fmt,
        "source": source,
        "entries": entries,
        "candidates": candidates,
        "stats": {"lines": lines, "skipped": skipped, "entries": len(entries)},
    }


def _too_deep(limit: int) -> InputRejected:
    return InputRejected(
        f"context input nests JSON deeper than {limit} levels",
        code="context.too-deep",
        hint="this is not a transcript memfold can read; pass another file or --no-context",
    )


def _parse(text: str, max_depth: int) -> _Parsed:
    """One JSON document if the whole input is one, else JSONL (one object a line)."""
    physical = text.split("\n")
    if physical and physical[-1] == "":
        physical.pop()
    stripped = text.strip()
    whole_too_deep = False
    if stripped[:1] in ("{", "["):
        try:
            return _Parsed(loads_bounded(stripped, max_depth), [], len(physical), 0)
        except TooDeep:
            whole_too_deep = True
        except ValueError:
            pass
    records: list[Record] = []
    skipped = 0
    for line in physical:
        line = line.strip()
        if not line:
            skipped += 1
            continue
        try:
            value = loads_bounded(line, max_depth)
        except TooDeep:
            raise _too_deep(max_depth) from None
        except ValueError:
            skipped += 1
            continue
        if isinstance(value, dict):
            records.append(value)
        else:
            skipped += 1
    if whole_too_deep and not records:
        # A deep multi-line document: no single line shows the depth, the whole does.
        raise _too_deep(max_depth)
    return _Parsed(_NO_DOCUMENT, records, len(physical), skipped)


def _split_document(parsed: _Parsed) -> tuple[str | None, list[Record], list[Record]]:
    """(format if fixed by the document shape, records to normalise, given candidates)."""
    from .candidates import given_candidate

    doc = parsed.document
    given: list[Record] = []
    fmt: str | None = None
    if isinstance(doc, dict) and (isinstance(doc.get("messages"), list) or isinstance(doc.get("candidates"), list)):
        fmt = "json"
        records = [m for m in doc.get("messages") or [] if isinstance(m, dict)]
        for item in doc.get("candidates") or []:
            cand = given_candidate(item, "candidates-array")
            if cand is not None:
                given.append(cand)
    elif isinstance(doc, dict):
        records = [doc]
    elif isinstance(doc, list):
        records = [m for m in doc if isinstance(m, dict)]
    else:
        records = parsed.records
    for rec in records:
        if rec.get("type") == "memory_candidate":
            cand = given_candidate(rec, "record")
            if cand is not None:
                given.append(cand)
    return fmt, [r for r in records if r.get("type") != "memory_candidate"], given


def _dedupe(candidates: list[Record]) -> list[Record]:
    seen: set[str] = set()
    out: list[Record] = []
    for cand in candidates:
        key = json.dumps(cand, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(cand)
    return out


def _cut(text: str, max_bytes: int) -> tuple[str, bool]:
    raw = text.encode("utf-8", errors="surrogatepass")
    if len(raw) <= max_bytes:
        return text, False
    # Cutting mid-character would leave a partial sequence; "ignore" drops it.
    return raw[:max_bytes].decode("utf-8", errors="ignore"), True


def _bound_text(item: Record, key: str, max_bytes: int) -> Record:
    text, cut = _cut(item[key], max_bytes)
    if not cut:
        return item
    return {**item, key: text, "truncated": True}


def _bound_entry(entry: Entry, max_bytes: int) -> Entry:
    entry = _bound_text(entry, "text", max_bytes)
    tool = entry.get("tool")
    if tool is None:
        return entry
    dumped = json.dumps(tool["input"], sort_keys=True, ensure_ascii=False)
    if len(dumped) <= max_bytes // 4:  # at most 4 UTF-8 bytes a character: surely in bounds
        return entry
    cut_input, cut = _cut(dumped, max_bytes)
    if not cut:
        return entry
    return {**entry, "tool": {"name": tool["name"], "input": cut_input}, "truncated": True}


def _encode(obj: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    try:
        return obj, dump_json(obj)
    except UnicodeEncodeError:
        # A JSON "\ud800" escape yields a lone surrogate that UTF-8 cannot carry.
        clean = _scrub(obj)
        return clean, dump_json(clean)


def _scrub(value: Any) -> Any:
    """Replace lone surrogates; depth is already bounded by the parse, so recursion is safe."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace").decode("utf-8")
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value
