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

import re
from typing import Any

from ..context.boundedjson import TooDeep, loads_bounded
from ..errors import WorkerFailed
from ..frozen import FrozenValue
from ..planner.planjson import plan_json
from .agentstream import excerpt as _excerpt
from .agentstream import final_message

MiB = 1 << 20
PLAN_KIND = "memory-consolidation-plan"
PLAN_EVENT = "consolidation_plan"
_HINT = (
    "the worker must print one plan: a bare JSON object, a "
    '{"type":"consolidation_plan","plan":{...}} line, or an agent whose final message '
    "is exactly one JSON plan object"
)
_FENCE = re.compile(r"```(?:json)?[ \t]*\r?\n(.*?)\r?\n?[ \t]*```", re.DOTALL | re.IGNORECASE)


class ExtractLimits(FrozenValue):
    """Bounds on worker stdout; defaults follow DESIGN.md. ``builtin`` says whose output it is."""

    __slots__ = ("max_stdout_bytes", "max_lines", "max_line_bytes", "max_plan_bytes", "max_depth", "builtin")
    max_stdout_bytes: int
    max_lines: int
    max_line_bytes: int
    max_plan_bytes: int
    max_depth: int
    builtin: bool

    def __init__(self, max_stdout_bytes: int = 16 * MiB, max_lines: int = 65_536, max_line_bytes: int = 1 * MiB,
                 max_plan_bytes: int = 8 * MiB, max_depth: int = 128, builtin: bool = False) -> None:
        self._set(max_stdout_bytes=max_stdout_bytes, max_lines=max_lines, max_line_bytes=max_line_bytes,
                  max_plan_bytes=max_plan_bytes, max_depth=max_depth, builtin=builtin)


# The config key (under ``limits:`` in config.yaml) of each bound, for the hint that names it.
CONFIG_KEYS = {"max_stdout_bytes": "worker_output_bytes", "max_lines": "worker_output_lines",
               "max_line_bytes": "worker_output_line_bytes", "max_plan_bytes": "plan_bytes",
               "max_depth": "plan_depth"}


def bound_hint(limits: ExtractLimits, bound: str) -> str:
    """Who can act on a bound: the built-in planner is ours to fix; a third-party worker's user raises the key."""
    key = f"limits.{CONFIG_KEYS[bound]}"
    if limits.builtin:
        return (f"the built-in planner should always fit the output bounds: this is a bug in memfold, please "
                f"report it with the run directory; until then, raising {key} in config.yaml lets the run through")
    return f"make the worker print only the plan, or raise {key} in config.yaml"


class Extracted(FrozenValue):
    """The plan, the exact bytes stored as plan.json (``plan_json(plan)``) and where it came from."""

    __slots__ = ("plan", "plan_bytes", "source")
    plan: dict[str, Any]
    plan_bytes: bytes
    source: str

    def __init__(self, plan: dict[str, Any], plan_bytes: bytes, source: str) -> None:
        self._set(plan=plan, plan_bytes=plan_bytes, source=source)


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
    final = final_message(records, in_document=document is not _ABSENT)
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
            hint=bound_hint(limits, "max_stdout_bytes"),
        )
    lines = stdout.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if len(lines) > limits.max_lines:
        raise WorkerFailed(
            f"worker stdout has {len(lines)} lines, over the {limits.max_lines}-line bound",
            code="worker.too-many-lines",
            hint=bound_hint(limits, "max_lines"),
        )
    longest = max(map(len, lines), default=0)
    if longest > limits.max_line_bytes:
        number = next(i for i, line in enumerate(lines, 1) if len(line) == longest)
        raise WorkerFailed(
            f"worker stdout line {number} is {longest} bytes, over the {limits.max_line_bytes}-byte bound",
            code="worker.line-too-long",
            hint=bound_hint(limits, "max_line_bytes"),
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
        data = plan_json(plan)
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
            hint=bound_hint(limits, "max_plan_bytes") + "; or consolidate a smaller scope",
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
