"""The bodies of the everyday memory commands (add, update, forget, list, search), without typer.

``store`` registers them as typer commands; ``quick`` runs a plain invocation of them without
importing typer at all (typer imports pydantic for its own argument coercion: ~0.3 s per command).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .context import emit, lock_timeout, services, use_global, want_json, warn


def read_body(body: str | None, body_file: Path | None) -> str | None:
    if body is not None and body_file is not None:
        from ..errors import UsageError

        raise UsageError("give --body or --body-file, not both", code="usage.body")
    if body_file is not None:
        from ..errors import InputRejected

        if str(body_file) == "-":
            data = sys.stdin.buffer.read(16 << 20)
        else:
            from ..fsutil import read_bounded

            data = read_bounded(body_file, 16 << 20)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InputRejected(f"{body_file} is not UTF-8 text", code="memory.encoding") from None
    return body


def print_tx(result: Any, as_json: bool) -> int:
    for message in result.warnings:
        if result.run_id is not None:
            warn(message)
    if result.run_id is None:
        emit(result.as_dict(), "unchanged: nothing to do", as_json=as_json)
        return 0
    lines = [f"{op['kind']} {op['name']} ({op['classification'] or 'removed'})" for op in result.operations]
    lines.append(f"receipt: {result.receipt}")
    emit(result.as_dict(), "\n".join(lines), as_json=as_json)
    return 0


def add(name: str, description: str | None, type_: str | None, visibility: str | None, body: str | None,
        body_file: Path | None, expires: str | None, global_: bool, json_out: bool, allow_publish: bool = False) -> int:
    use_global(global_)
    from ..edits import MemoryInput, add_ops, direct_transaction
    from ..store.memory import normalize_name

    svc = services()
    file = normalize_name(name)
    data = MemoryInput(description, type_, visibility, read_body(body, body_file), expires)
    result = direct_transaction(svc, "add", add_ops(file, data, svc.clock()), lock_timeout=lock_timeout(),
                                publish=_publish(allow_publish))
    return print_tx(result, want_json(json_out))


def update(name: str, description: str | None, type_: str | None, visibility: str | None, body: str | None,
           body_file: Path | None, expires: str | None, global_: bool, json_out: bool,
           allow_publish: bool = False) -> int:
    use_global(global_)
    from ..edits import MemoryInput, direct_transaction, update_ops
    from ..store.memory import normalize_name

    svc = services()
    data = MemoryInput(description, type_, visibility, read_body(body, body_file), expires)
    build = update_ops(normalize_name(name), data, svc.clock())
    result = direct_transaction(svc, "update", build, lock_timeout=lock_timeout(), publish=_publish(allow_publish))
    return print_tx(result, want_json(json_out))


def _publish(allow_publish: bool) -> str:
    """A person may make the memory they name safe; carrying another private memory needs the flag."""
    return "any" if allow_publish else "named"


def forget(name: str, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..edits import direct_transaction, forget_ops
    from ..store.memory import normalize_name

    svc = services()
    build = forget_ops(normalize_name(name))
    return print_tx(direct_transaction(svc, "forget", build, lock_timeout=lock_timeout()), want_json(json_out))


def read_memories() -> tuple[Any, dict[str, Any]]:
    from ..store.state import parse_all, read_root

    svc = services(privacy=False)
    return svc, parse_all(read_root(svc.layout.harness, svc.limits))


def row(name: str, m: Any) -> dict[str, Any]:
    return {"file": name, "name": m.name, "description": m.description, "type": m.type,
            "visibility": m.visibility, "created": m.created, "modified": m.modified, "expires": m.expires}


def list_memories(global_: bool, json_out: bool) -> int:
    use_global(global_)
    _, memories = read_memories()
    rows = [row(n, memories[n]) for n in sorted(memories)]
    human = "\n".join(f"{r['file']:<40} {r['type']:<9} {r['visibility']:<7} {r['description']}" for r in rows)
    emit({"ok": True, "memories": rows}, human or "no memories yet", as_json=want_json(json_out))
    return 0


def search(query: str, limit: int, global_: bool, json_out: bool) -> int:
    use_global(global_)
    from ..errors import UsageError

    if not query.strip():
        raise UsageError("search needs words to look for", code="usage.query",
                         hint="give a query, e.g. `memfold search deploy`; `memfold list` shows every memory")
    from ..store.searchcache import search_hits

    svc = services(privacy=False)
    hits = search_hits(svc.layout.harness, svc.layout.project_home, query, limit, svc.limits)
    rows = [{**row(r.file, r), "score": s} for r, s in hits]
    human = "\n".join(f"{r['file']:<40} {r['score']:>8.4g}  {r['description']}" for r in rows)
    emit({"ok": True, "query": query, "results": rows}, human or "no match", as_json=want_json(json_out))
    return 0
