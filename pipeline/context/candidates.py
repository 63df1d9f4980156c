"""Memory candidates in a session: memory-tool calls, memory file writes, remember:/note: lines."""

from __future__ import annotations

import re
from typing import Any

from ..store.yamltext import load_yaml

Record = dict[str, Any]
Entry = dict[str, Any]

_REMEMBER_LINE = re.compile(r"^[ \t]*(?:remember|note)[ \t]*:(.*)$", re.IGNORECASE | re.MULTILINE)
_USER_MEMORY_INPUT = re.compile(r"<user-memory-input>(.*?)</user-memory-input>", re.DOTALL)
_MEMORY_TOOL = re.compile(r"^(?:memory[_-]?(?:add|create|save|write|store)|(?:add|create|save|store)[_-]?memory)$")
_FIELDS = ("name", "description", "type", "visibility")
MAX_FRONTMATTER_CHARS = 65536


def split_frontmatter(text: str) -> tuple[dict[str, str], str]:
    """String fields of a leading ``---`` YAML block, and the body after it (text unchanged if none)."""
    normal = text.replace("\r\n", "\n")
    if not normal.startswith("---\n"):
        return {}, text
    end = normal.find("\n---", 3)
    if end < 0 or end > MAX_FRONTMATTER_CHARS:
        return {}, text
    close = normal.find("\n", end + 4)
    body = "" if close < 0 else normal[close + 1 :]
    try:
        meta = load_yaml(normal[4:end])
    except Exception:
        return {}, body
    if not isinstance(meta, dict):
        return {}, body
    fields = {k: meta[k].strip() for k in _FIELDS if isinstance(meta.get(k), str) and meta[k].strip()}
    nested = meta.get("metadata")
    if "type" not in fields and isinstance(nested, dict) and isinstance(nested.get("type"), str):
        fields["type"] = nested["type"]
    return fields, body


def _is_memory_file(path: Any) -> bool:
    if not isinstance(path, str):
        return False
    norm = path.replace("\\", "/")
    base = norm.rsplit("/", 1)[-1].lower()
    return "/memory/" in norm and base.endswith(".md") and base != "memory.md"


def _stem(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1][:-3]


def _file_candidate(path: str, text: str) -> Record:
    fields, body = split_frontmatter(text)
    cand: Record = {"name": _stem(path), **fields, "body": body, "origin": "tool-call"}
    return cand


def tool_candidate(name: str, args: Any) -> Record | None:
    """A candidate from a memory write (Claude/Pi file tools, memory_add-like tools), else None."""
    if not isinstance(args, dict):
        return None
    lname = name.lower()
    path = args.get("file_path", args.get("path"))
    if lname in ("write", "edit", "multiedit") and _is_memory_file(path):
        if lname == "write":
            new = [args.get("content")]
        elif isinstance(args.get("edits"), list):
            new = [e.get("new_string", e.get("newText")) for e in args["edits"] if isinstance(e, dict)]
        else:
            new = [args.get("new_string", args.get("newText"))]
        text = "\n".join(t for t in new if isinstance(t, str))
        return _file_candidate(str(path), text) if text.strip() else None
    last = re.split(r"__|[./:]", lname)[-1]
    body = args.get("body", args.get("content"))
    if _MEMORY_TOOL.match(last) and isinstance(body, str) and body.strip():
        cand: Record = {k: args[k] for k in _FIELDS if isinstance(args.get(k), str)}
        cand.update(body=body, origin="tool-call")
        return cand
    return None


def remember_candidates(text: str) -> list[Record]:
    """``remember:``/``note:`` lines and the ``#`` shortcut's ``<user-memory-input>`` text."""
    out: list[Record] = []
    for match in _REMEMBER_LINE.finditer(text):
        body = match.group(1).strip()
        if body:
            out.append({"body": body, "origin": "remember-line"})
    for match in _USER_MEMORY_INPUT.finditer(text):
        body = match.group(1).strip()
        if body:
            out.append({"body": body, "origin": "remember-line"})
    return out


def given_candidate(item: Any, origin: str) -> Record | None:
    """A host-supplied candidate (record or array item); a record names the memory type ``memoryType``."""
    if not isinstance(item, dict):
        return None
    body = item.get("body", item.get("content"))
    if not isinstance(body, str) or not body.strip():
        return None
    cand: Record = {k: item[k] for k in _FIELDS if isinstance(item.get(k), str)}
    if origin == "record":
        cand.pop("type", None)
        if isinstance(item.get("memoryType"), str):
            cand["type"] = item["memoryType"]
    cand.update(body=body, origin=origin)
    return cand


_WORDS = re.compile(r"[^\w]+")


def _fact(cand: Record) -> str:
    """The words of a candidate's body, case and punctuation aside: what two mentions of one fact share."""
    return " ".join(_WORDS.sub(" ", str(cand.get("body", "")).lower()).split())


def _richness(cand: Record) -> int:
    return sum(1 for k in _FIELDS if cand.get(k))


def fold_duplicates(cands: list[Record]) -> list[Record]:
    """One candidate per fact: a fact said in passing ("remember: …") and then written by a memory
    tool arrives twice, and the bare mention must not win over the record that names and describes it.

    Two candidates are one fact when the words of one body contain the other's. The one with more
    fields (name, description, type, visibility) is kept, at the place of the first mention, and
    takes the other's fields it lacks; on a tie the longer body is kept.
    """
    out: list[Record] = []
    facts: list[str] = []
    for cand in cands:
        fact = _fact(cand)
        same = next((i for i, known in enumerate(facts)
                     if fact and known and (f" {fact} " in f" {known} " or f" {known} " in f" {fact} ")), None)
        if same is None:
            out.append(cand)
            facts.append(fact)
            continue
        old = out[same]
        keep, other = (cand, old) if (_richness(cand), len(fact)) > (_richness(old), len(facts[same])) else (old, cand)
        out[same] = {**{k: other[k] for k in _FIELDS if other.get(k)}, **keep}
        facts[same] = _fact(keep)
    return out


def entry_candidates(entries: list[Entry]) -> list[Record]:
    out: list[Record] = []
    for entry in entries:
        tool = entry.get("tool")
        if entry["role"] == "assistant" and tool is not None:
            cand = tool_candidate(tool["name"], tool["input"])
            if cand is not None:
                out.append(cand)
        elif entry["role"] == "user":
            out.extend(remember_candidates(entry["text"]))
    return fold_duplicates(out)
