"""Per-host transcript normalisers (see HOST-FORMATS.md): Claude Code, Pi and Codex."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .boundedjson import loads_bounded

Record = dict[str, Any]
Entry = dict[str, Any]

def text_field(rec: Record, key: str) -> str | None:
    """``rec[key]`` if it is a string: JSON values of other types must not reach set lookups."""
    value = rec.get(key)
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------------
# Content blocks shared by Claude, Pi, Codex and plain messages.

_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_TOOL_CALL_BLOCKS = frozenset({"tool_use", "toolCall", "server_tool_use"})


def result_text(content: Any) -> str:
    """Text of a tool result: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return ""


def blocks_to_entries(role: str, content: Any) -> list[Entry]:
    """Turn one message's content into entries; adjacent text blocks become one entry."""
    if role == "tool":
        text = result_text(content)
        return [{"role": "tool", "text": text}] if text.strip() else []
    if isinstance(content, str):
        return [{"role": role, "text": content}] if content.strip() else []
    if not isinstance(content, list):
        return []
    out: list[Entry] = []
    texts: list[str] = []

    def flush() -> None:
        joined = "\n".join(texts)
        if joined.strip():
            out.append({"role": role, "text": joined})
        texts.clear()

    for block in content:
        if not isinstance(block, dict):
            continue
        kind = text_field(block, "type")
        if kind in _TEXT_BLOCKS and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind in _TOOL_CALL_BLOCKS and isinstance(block.get("name"), str):
            flush()
            tool_input = block.get("input", block.get("arguments"))
            out.append({"role": "assistant", "text": "", "tool": {"name": block["name"], "input": tool_input}})
        elif kind == "tool_result":
            flush()
            text = result_text(block.get("content"))
            if text.strip():
                out.append({"role": "tool", "text": text})
    flush()
    return out


_ROLE_MAP = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "tool": "tool",
    "toolResult": "tool",
    "function": "tool",
}


def message_entries(records: Iterable[Record]) -> list[Entry]:
    """Plain ``{role, content}`` messages; unknown roles (system, developer) are dropped."""
    out: list[Entry] = []
    for rec in records:
        raw_role = rec.get("role")
        role = _ROLE_MAP.get(raw_role) if isinstance(raw_role, str) else None
        if role is not None:
            out.extend(blocks_to_entries(role, rec.get("content")))
    return out


# ---------------------------------------------------------------------------
# Claude Code transcripts.


def _claude_visible(rec: Record) -> bool:
    # Sidechain, meta, compact-summary and team lines are injected or belong to
    # another agent; they are not the user's conversation.
    return (
        rec.get("type") in ("user", "assistant")
        and isinstance(rec.get("message"), dict)
        and not rec.get("isSidechain")
        and not rec.get("isMeta")
        and not rec.get("isCompactSummary")
        and not rec.get("teamName")
    )


def _message_id(rec: Record) -> str | None:
    mid = rec["message"].get("id") if rec.get("type") == "assistant" else None
    return mid if isinstance(mid, str) else None


def _is_tool_result_line(rec: Record) -> bool:
    content = rec["message"].get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _claude_main_chain(records: list[Record]) -> list[Record]:
    """Visible lines on the branch ending at the newest leaf, in file order."""
    by_uuid: dict[str, Record] = {}
    parents: set[str] = set()
    for rec in records:
        uid, parent = rec.get("uuid"), rec.get("parentUuid")
        if isinstance(uid, str):
            by_uuid.setdefault(uid, rec)
        if isinstance(parent, str):
            parents.add(parent)
    visible = [r for r in records if _claude_visible(r)]
    leaves = [r for r in visible if isinstance(r.get("uuid"), str) and r["uuid"] not in parents]
    if not leaves:
        # Stream-json output and old files carry no chain links: keep file order.
        return visible
    chain: set[str] = set()
    current: Any = leaves[-1]["uuid"]
    while isinstance(current, str) and current in by_uuid and current not in chain:
        chain.add(current)
        current = by_uuid[current].get("parentUuid")
    chain_ids = {m for r in visible if text_field(r, "uuid") in chain and (m := _message_id(r))}
    kept: list[Record] = []
    for rec in visible:
        uid = text_field(rec, "uuid")
        # Parallel tool calls fan out: split assistant lines of a kept response
        # and tool results hanging off kept lines sit beside the walked path.
        sibling = text_field(rec, "parentUuid") in chain and (
            _message_id(rec) in chain_ids or (rec["type"] == "user" and _is_tool_result_line(rec))
        )
        if uid in chain or sibling:
            kept.append(rec)
            if uid is not None:
                chain.add(uid)
    return kept


def claude_entries(records: list[Record]) -> list[Entry]:
    """Main-chain entries; split assistant lines are rejoined by ``message.id``."""
    groups: list[tuple[str, list[Any]]] = []
    by_id: dict[str, list[Any]] = {}
    for rec in _claude_main_chain(records):
        role = rec["type"]
        content = rec["message"].get("content")
        mid = _message_id(rec)
        if mid is not None and mid in by_id:
            by_id[mid].extend(content if isinstance(content, list) else [])
            continue
        blocks: list[Any] = list(content) if isinstance(content, list) else [{"type": "text", "text": content}]
        if mid is not None:
            by_id[mid] = blocks
        groups.append((role, blocks))
    out: list[Entry] = []
    for role, blocks in groups:
        out.extend(blocks_to_entries(role, blocks))
    return out


# ---------------------------------------------------------------------------
# Pi sessions and --mode json streams.


def _pi_message_entries(message: Any) -> list[Entry]:
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    if role in ("user", "assistant"):
        return blocks_to_entries(str(role), message.get("content"))
    if role == "toolResult":
        return blocks_to_entries("tool", message.get("content"))
    if role == "bashExecution":
        text = message.get("output") if isinstance(message.get("output"), str) else ""
        entry: Entry = {"role": "tool", "text": text}
        if isinstance(message.get("command"), str):
            entry["tool"] = {"name": "bash", "input": {"command": message["command"]}}
        return [entry]
    return []


def pi_session_entries(records: list[Record]) -> list[Entry]:
    """Messages on the branch that ends at the last appended entry."""
    by_id: dict[str, Record] = {}
    last: str | None = None
    for rec in records:
        rid = rec.get("id")
        if rec.get("type") != "session" and isinstance(rid, str):
            by_id.setdefault(rid, rec)
            last = rid
    path: list[Record] = []
    seen: set[str] = set()
    current: Any = last
    while isinstance(current, str) and current in by_id and current not in seen:
        seen.add(current)
        path.append(by_id[current])
        current = by_id[current].get("parentId")
    out: list[Entry] = []
    for rec in reversed(path):
        if rec.get("type") == "message":
            out.extend(_pi_message_entries(rec.get("message")))
    return out


def pi_stream_messages(records: list[Record]) -> list[Any]:
    """Completed messages of a Pi json stream: ``message_end`` events, else the last ``agent_end``."""
    ended = [r.get("message") for r in records if r.get("type") == "message_end"]
    if ended:
        return ended
    for rec in reversed(records):
        if rec.get("type") == "agent_end" and isinstance(rec.get("messages"), list):
            return list(rec["messages"])
    return []


def pi_stream_entries(records: list[Record]) -> list[Entry]:
    out: list[Entry] = []
    for message in pi_stream_messages(records):
        out.extend(_pi_message_entries(message))
    return out


# ---------------------------------------------------------------------------
# Codex rollouts (wrapped ``{timestamp, type, payload}`` and early flat records).

CODEX_WRAPPED = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CODEX_ITEMS = frozenset({
    "message", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "reasoning",
})
# Codex stores its environment and AGENTS.md preamble as user messages.
_CODEX_INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


def _codex_arguments(raw: Any, max_depth: int) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return loads_bounded(raw, max_depth)
    except ValueError:
        return raw


def _codex_item_entries(item: Record, max_depth: int) -> list[Entry]:
    kind = item.get("type")
    if kind == "message" and item.get("role") in ("user", "assistant"):
        entries = blocks_to_entries(str(item["role"]), item.get("content"))
        return [e for e in entries if not (e["role"] == "user" and e["text"].lstrip().startswith(_CODEX_INJECTED))]
    if kind in ("function_call", "custom_tool_call") and isinstance(item.get("name"), str):
        raw = item.get("arguments") if kind == "function_call" else item.get("input")
        return [
            {"role": "assistant", "text": "", "tool": {"name": item["name"], "input": _codex_arguments(raw, max_depth)}}
        ]
    if kind == "local_shell_call" and isinstance(item.get("action"), dict):
        return [{"role": "assistant", "text": "", "tool": {"name": "local_shell", "input": item["action"]}}]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, dict):
            output = output.get("content", output.get("output"))
        return blocks_to_entries("tool", output)
    return []


def codex_entries(records: list[Record], max_depth: int) -> list[Entry]:
    items: list[Record] = []
    events: list[Record] = []
    for rec in records:
        kind, payload = text_field(rec, "type"), rec.get("payload")
        if kind == "response_item" and isinstance(payload, dict):
            items.append(payload)
        elif kind == "event_msg" and isinstance(payload, dict):
            events.append(payload)
        elif kind in CODEX_ITEMS and "payload" not in rec:
            items.append(rec)
    out: list[Entry] = []
    for item in items:
        out.extend(_codex_item_entries(item, max_depth))
    if any(i.get("type") == "message" for i in items):
        # event_msg user/agent messages repeat the response items; use them only alone.
        return out
    for event in events:
        role = {"user_message": "user", "agent_message": "assistant"}.get(str(event.get("type")))
        if role and isinstance(event.get("message"), str):
            out.extend(blocks_to_entries(role, event["message"]))
    return out


# ---------------------------------------------------------------------------
# Format detection.

PI_STREAM_TYPES = frozenset({
    "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
    "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
})
_PI_SESSION_TYPES = frozenset({
    "message", "model_change", "thinking_level_change", "compaction", "branch_summary",
    "custom", "custom_message", "label", "session_info",
})


def _vote(rec: Record) -> str | None:
    kind = text_field(rec, "type")
    if kind in PI_STREAM_TYPES:
        return "pi-json"
    if kind in CODEX_WRAPPED and "payload" in rec:
        return "codex-rollout"
    if kind in ("user", "assistant") and isinstance(rec.get("message"), dict):
        return "claude-jsonl"
    if kind == "session" and "version" in rec:
        return "pi-session"
    if kind in _PI_SESSION_TYPES and "parentId" in rec:
        return "pi-session"
    if kind in CODEX_ITEMS or "record_type" in rec:
        return "codex-rollout"
    if "role" in rec and "content" in rec:
        return "json"
    return None


def detect_format(records: list[Record]) -> str:
    """The format most records vote for; a Pi stream event outranks a session header."""
    votes: dict[str, int] = {}
    for rec in records:
        fmt = _vote(rec)
        if fmt is not None:
            votes[fmt] = votes.get(fmt, 0) + 1
    if votes.get("pi-json"):
        return "pi-json"
    order = ["claude-jsonl", "pi-session", "codex-rollout", "json"]
    return max(order, key=lambda f: (votes.get(f, 0), -order.index(f))) if votes else "json"


def normaliser(fmt: str, max_depth: int) -> Callable[[list[Record]], list[Entry]]:
    table: dict[str, Callable[[list[Record]], list[Entry]]] = {
        "claude-jsonl": claude_entries,
        "pi-session": pi_session_entries,
        "pi-json": pi_stream_entries,
        "codex-rollout": lambda records: codex_entries(records, max_depth),
        "json": message_entries,
    }
    return table[fmt]
