"""Bounded extraction of exactly one consolidation plan from a worker's stdout.

Accepted shapes (DESIGN.md "Validation", step 1; stream formats in HOST-FORMATS.md):

* ``bare-json``: the whole stdout is one JSON object with ``kind: memory-consolidation-plan``;
* ``jsonl-event``: lines ``{"type": "consolidation_plan", "plan": {...}}`` (the event names
  the plan, so its object goes on to schema validation whatever its ``kind``);
* the final assistant message of an agent stream, when that text is exactly one plan
  object, optionally inside one fenced json block: ``claude-result`` (``-p --output-format
  json``, object or verbose array), ``claude-stream`` (stream-json), ``pi-json``
  (``--mode json``), ``codex-json`` (``exec --json``), ``codex-legacy`` (``{"msg": ...}`` lines).

Several plan sources in one stdout must carry the identical plan. Error codes (all exit 4):
``worker.output-too-large``, ``worker.too-many-lines``, ``worker.line-too-long``,
``worker.plan-too-large``, ``worker.bad-plan-event``, ``worker.multiple-plans``,
``worker.no-plan``, ``worker.agent-error``, ``worker.bad-plan-text`` (a plan string holds a
lone UTF-16 surrogate and cannot be stored as UTF-8).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import WorkerFailed
from .fsutil import dump_json
from .transcripts import PI_STREAM_TYPES, TooDeep, loads_bounded, pi_stream_messages, text_field

MiB = 1 << 20
PLAN_KIND = "memory-consolidation-plan"
PLAN_EVENT = "consolidation_plan"
_HINT = (
    "the worker must print one plan: a bare JSON object, a "
    '{"type":"consolidation_plan","plan":{...}} line, or an agent whose final message '
    "is exactly one JSON plan object"
)
_FENCE = re.compile(r"```(?:json)?[ \t]*\r?\n(.*?)\r?\n?[ \t]*```", re.DOTALL | re.IGNORECASE)
_CODEX_MESSAGE_ITEMS = ("agent_message", "assistant_message")


@dataclass(frozen=True)
class ExtractLimits:
    """Bounds on worker stdout; defaults follow DESIGN.md."""

    max_stdout_bytes: int = 16 * MiB
    max_lines: int = 65_536
    max_line_bytes: int = 1 * MiB
    max_plan_bytes: int = 8 * MiB
    max_depth: int = 128


@dataclass(frozen=True)
class Extracted:
    """The plan, the exact bytes stored as plan.json (``dump_json(plan)``) and where it came from."""

    plan: dict[str, Any]
    plan_bytes: bytes
    source: str


def extract_plan(stdout: bytes, limits: ExtractLimits) -> Extracted:
    """Find exactly one plan in ``stdout`` or raise WorkerFailed with a stable code."""
    lines = _bounded_lines(stdout, limits)
    text = stdout.decode("utf-8", errors="replace").removeprefix("\ufeff")
    document = _whole_document(text, limits.max_depth)
    if isinstance(document, dict) and document.get("kind") == PLAN_KIND:
        return _finish(document, "bare-json", limits)
    if document is not _ABSENT:
        records = _document_records(document)
    else:
        records = _line_records(lines, limits.max_depth)
    plans = [_finish(p, "jsonl-event", limits) for p in _event_plans(records)]
    final = _final_message(records, in_document=document is not _ABSENT)
    no_plan: WorkerFailed | None = None
    if final is not None:
        source, message = final
        try:
            plans.append(_finish(_plan_from_text(message, source, limits.max_depth), source, limits))
        except WorkerFailed as exc:
            if exc.code != "worker.no-plan":
                raise
            no_plan = exc
    if not plans:
        raise no_plan or _nothing_found(document, records, lines)
    if len({p.plan_bytes for p in plans}) > 1:
        raise WorkerFailed(
            f"worker output holds {len(plans)} plans that differ "
            f"(from {', '.join(sorted({p.source for p in plans}))})",
            code="worker.multiple-plans",
            hint="print the plan once",
        )
    return plans[0]


# ---------------------------------------------------------------------------
# Bounds and parsing.

_ABSENT: Any = object()


def _bounded_lines(stdout: bytes, limits: ExtractLimits) -> list[bytes]:
    """Split into lines after checking every bound; a trailing newline ends the last line."""
    if len(stdout) > limits.max_stdout_bytes:
        raise WorkerFailed(
            f"worker stdout is {len(stdout)} bytes, over the {limits.max_stdout_bytes}-byte bound",
            code="worker.output-too-large",
            hint="make the worker print only the plan",
        )
    lines = stdout.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) > limits.max_lines:
        raise WorkerFailed(
            f"worker stdout has {len(lines)} lines, over the {limits.max_lines}-line bound",
            code="worker.too-many-lines",
            hint="make the worker print only the plan",
        )
    longest = max((len(line) for line in lines), default=0)
    if longest > limits.max_line_bytes:
        number = next(i for i, line in enumerate(lines, 1) if len(line) == longest)
        raise WorkerFailed(
            f"worker stdout line {number} is {longest} bytes, over the {limits.max_line_bytes}-byte bound",
            code="worker.line-too-long",
            hint="make the worker print only the plan",
        )
    return lines


def _whole_document(text: str, max_depth: int) -> Any:
    """The stdout as one JSON value, or _ABSENT (JSONL, prose, too deep, invalid)."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return _ABSENT
    try:
        return loads_bounded(stripped, max_depth)
    except ValueError:
        return _ABSENT


def _document_records(document: Any) -> list[dict[str, Any]]:
    if isinstance(document, dict):
        return [document]
    if isinstance(document, list):
        return [item for item in document if isinstance(item, dict)]
    return []


def _line_records(lines: list[bytes], max_depth: int) -> list[dict[str, Any]]:
    """JSON objects among the lines; each line is parsed once, other lines are ignored."""
    records: list[dict[str, Any]] = []
    for raw in lines:
        line = raw.decode("utf-8", errors="replace").strip().removeprefix("\ufeff")
        if not line.startswith("{"):
            continue
        try:
            value = loads_bounded(line, max_depth)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


def _finish(plan: dict[str, Any], source: str, limits: ExtractLimits) -> Extracted:
    try:
        data = dump_json(plan)
    except UnicodeEncodeError:
        raise WorkerFailed(
            f"the {source} plan contains a lone UTF-16 surrogate escape",
            code="worker.bad-plan-text",
            hint="plans must be valid Unicode text",
        ) from None
    if len(data) > limits.max_plan_bytes:
        raise WorkerFailed(
            f"the {source} plan is {len(data)} bytes, over the {limits.max_plan_bytes}-byte bound",
            code="worker.plan-too-large",
            hint="consolidate a smaller scope",
        )
    return Extracted(plan=plan, plan_bytes=data, source=source)


# ---------------------------------------------------------------------------
# Plan events.


def _event_plans(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    plans: list[dict[str, Any]] = []
    for rec in records:
        if rec.get("type") != PLAN_EVENT:
            continue
        plan = rec.get("plan")
        if not isinstance(plan, dict):
            raise WorkerFailed(
                f"a consolidation_plan event carries {_json_type(plan)} as its plan, not an object",
                code="worker.bad-plan-event",
                hint=_HINT,
            )
        plans.append(plan)
    return plans


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array"}
    return names.get(type(value), "an object")


# ---------------------------------------------------------------------------
# Final assistant message of an agent stream.


def _stream_kind(records: list[dict[str, Any]], in_document: bool) -> str | None:
    """The agent stream the first recognisable record belongs to, or None."""
    for rec in records:
        kind = text_field(rec, "type")
        if kind == "result" or (kind == "system" and rec.get("subtype") == "init") or (
            kind == "assistant" and isinstance(rec.get("message"), dict)
        ):
            return "claude-result" if in_document else "claude-stream"
        if kind in PI_STREAM_TYPES:
            return "pi-json"
        if isinstance(kind, str) and kind.startswith(("thread.", "turn.", "item.")):
            return "codex-json"
        if isinstance(rec.get("msg"), dict):
            return "codex-legacy"
    return None


def _final_message(records: list[dict[str, Any]], *, in_document: bool) -> tuple[str, str] | None:
    """(source, final assistant text); raises worker.agent-error for a failed run."""
    kind = _stream_kind(records, in_document)
    if kind is None:
        return None
    if kind.startswith("claude"):
        text = _claude_final(records, kind)
    elif kind == "pi-json":
        text = _pi_final(records)
    elif kind == "codex-json":
        text = _codex_final(records)
    else:
        text = _codex_legacy_final(records)
    return (kind, text) if text is not None else None


def _agent_error(source: str, detail: str) -> WorkerFailed:
    return WorkerFailed(
        f"the agent run failed ({source}): {_excerpt(detail, 300)}",
        code="worker.agent-error",
        hint="see stderr.txt in the run directory; fix the agent setup and retry",
        data={"source": source},
    )


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        b["text"] for b in content
        if isinstance(b, dict) and b.get("type") in ("text", "output_text") and isinstance(b.get("text"), str)
    )


def _claude_final(records: list[dict[str, Any]], source: str) -> str | None:
    results = [r for r in records if r.get("type") == "result"]
    if results:
        res = results[-1]
        if res.get("is_error") is True or res.get("subtype", "success") != "success":
            errors = res.get("errors")
            detail = "; ".join(str(e) for e in errors) if isinstance(errors, list) and errors else ""
            detail = detail or (res["result"] if isinstance(res.get("result"), str) else "")
            raise _agent_error(source, detail or f"result subtype {res.get('subtype')!r}")
        if isinstance(res.get("result"), str):
            return str(res["result"])
    # No usable result: the text blocks of the last top-level assistant response.
    main = [
        r for r in records
        if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
        and r.get("parent_tool_use_id") is None and not r.get("isSidechain")
    ]
    with_text = [r for r in main if _texts(r["message"].get("content"))]
    if not with_text:
        return None
    last_id = with_text[-1]["message"].get("id")
    if last_id is None:
        return _texts(with_text[-1]["message"].get("content"))
    return "".join(_texts(r["message"].get("content")) for r in main if r["message"].get("id") == last_id)


def _pi_final(records: list[dict[str, Any]]) -> str | None:
    messages = [m for m in pi_stream_messages(records) if isinstance(m, dict) and m.get("role") == "assistant"]
    if not messages:
        return None
    last = messages[-1]
    if last.get("stopReason") in ("error", "aborted"):
        detail = last.get("errorMessage")
        raise _agent_error("pi-json", detail if isinstance(detail, str) and detail else f"stopReason {last['stopReason']}")
    return _texts(last.get("content"))


def _codex_final(records: list[dict[str, Any]]) -> str | None:
    text: str | None = None
    completed_after = False
    saw_turn = False
    last_error = ""
    for rec in records:
        kind = rec.get("type")
        item = rec.get("item")
        if kind == "item.completed" and isinstance(item, dict):
            item_type = item.get("type", item.get("item_type"))
            if item_type in _CODEX_MESSAGE_ITEMS and isinstance(item.get("text"), str):
                text, completed_after = item["text"], False
        elif kind == "turn.completed":
            saw_turn, completed_after, last_error = True, True, ""
        elif kind == "turn.failed":
            error = rec.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            raise _agent_error("codex-json", message if isinstance(message, str) and message else "turn.failed")
        elif kind == "turn.started":
            saw_turn = True
        elif kind == "error" and isinstance(rec.get("message"), str):
            last_error = rec["message"]
    if text is not None and saw_turn and not completed_after:
        # turn.completed after the final message is the only proof the run finished.
        raise _agent_error("codex-json", last_error or "the stream ended without turn.completed")
    return text


def _codex_legacy_final(records: list[dict[str, Any]]) -> str | None:
    completed: str | None = None
    last_message: str | None = None
    last_error: str | None = None
    for rec in records:
        msg = rec.get("msg")
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if kind == "task_complete" and isinstance(msg.get("last_agent_message"), str):
            completed = msg["last_agent_message"]
        elif kind == "agent_message" and isinstance(msg.get("message"), str):
            last_message = msg["message"]
        elif kind == "error":
            last_error = str(msg.get("message") or "error")
    if completed is None and last_error is not None:
        raise _agent_error("codex-legacy", last_error)
    return completed if completed is not None else last_message


# ---------------------------------------------------------------------------
# The final message must be exactly one JSON plan object.


def _no_plan(reason: str) -> WorkerFailed:
    return WorkerFailed(f"no plan in worker output: {reason}", code="worker.no-plan", hint=_HINT)


def _plan_from_text(message: str, source: str, max_depth: int) -> dict[str, Any]:
    body = message.strip()
    where = f"the final {source} message"
    fenced = _FENCE.fullmatch(body)
    if fenced is not None:
        body = fenced.group(1).strip()
        if "```" in body:
            raise _no_plan(f"{where} holds more than one fenced block")
    elif "```" in body:
        raise _no_plan(f"{where} has text around its fenced block: {_excerpt(message)}")
    if not body:
        raise _no_plan(f"{where} is empty")
    if not body.startswith("{"):
        raise _no_plan(f"{where} is prose, not a JSON object: {_excerpt(message)}")
    try:
        value = loads_bounded(body, max_depth)
    except TooDeep:
        raise _no_plan(f"{where} nests JSON deeper than {max_depth} levels") from None
    except ValueError:
        raise _no_plan(f"{where} is not exactly one JSON object: {_excerpt(message)}") from None
    return _require_plan(value, where)


def _require_plan(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, dict) and value.get("kind") == PLAN_KIND:
        return value
    raise _no_plan(f"{where} is {_describe(value)}")


def _describe(value: Any) -> str:
    """What a non-plan JSON value is, without echoing it."""
    if not isinstance(value, dict):
        return f"{_json_type(value)}, not a plan object"
    kind = value.get("kind")
    seen = f"kind {_excerpt(kind, 40)}" if isinstance(kind, str) else "no kind"
    return f"a JSON object with {seen}, not a {PLAN_KIND}"


def _nothing_found(document: Any, records: list[dict[str, Any]], lines: list[bytes]) -> WorkerFailed:
    if isinstance(document, list):
        return _no_plan(f"stdout is a JSON array of {len(document)} items with no plan event or agent result")
    if document is not _ABSENT:
        return _no_plan(f"stdout is {_describe(document)}")
    if any(r.get("kind") == PLAN_KIND for r in records):
        return _no_plan(
            "a plan object appears on a line among other output; print it alone or as a "
            "consolidation_plan event"
        )
    if not records:
        first = next((line for line in lines if line.strip()), b"")
        if not first:
            return _no_plan("stdout is empty")
        return _no_plan(
            f"{_lines(len(lines))} of text and no JSON object; it starts "
            f"{_excerpt(first.decode('utf-8', errors='replace'))}"
        )
    return _no_plan(
        f"{_lines(len(lines))} with {len(records)} JSON objects, none a plan event or the final "
        "message of a known agent stream"
    )


def _lines(count: int) -> str:
    return "1 line" if count == 1 else f"{count} lines"


def _excerpt(value: Any, limit: int = 60) -> str:
    """A short, single-line, quoted excerpt: enough to recognise the output, never a dump of it."""
    text = " ".join(str(value).split())
    text = "".join(ch for ch in text if ch.isprintable())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)
