"""The final assistant message of an agent CLI's JSON stream: Claude Code, Pi and Codex (HOST-FORMATS.md)."""

from __future__ import annotations

import json
from typing import Any

from ..context.transcripts import PI_STREAM_TYPES, pi_stream_messages, text_field
from ..errors import WorkerFailed

_CODEX_MESSAGE_ITEMS = ("agent_message", "assistant_message")


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


def final_message(records: list[dict[str, Any]], *, in_document: bool) -> tuple[str, str] | None:
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
        f"the agent run failed ({source}): {excerpt(detail, 300)}",
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
        raise _agent_error(
            "pi-json", detail if isinstance(detail, str) and detail else f"stopReason {last['stopReason']}"
        )
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


def excerpt(value: Any, limit: int = 60) -> str:
    """A short, single-line, quoted excerpt: enough to recognise the output, never a dump of it."""
    text = " ".join(str(value).split())
    text = "".join(ch for ch in text if ch.isprintable())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)
