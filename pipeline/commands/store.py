"""Commands that create and read memories: init, add, update, forget, list, show, search."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ._app import GlobalOpt, JsonOpt, app, emit, layout, lock_timeout, services, use_global, want_json, warn


def _body(body: str | None, body_file: Path | None) -> str | None:
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


def _print_tx(result: Any, as_json: bool) -> int:
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


TypeOpt = typer.Option(None, "--type", "-t", help="user | feedback | project | reference")
VisOpt = typer.Option(None, "--visibility", help="safe (mirrored to .memory/) | private (default)")
BodyOpt = typer.Option(None, "--body", "-b", help="the memory text")
BodyFileOpt = typer.Option(None, "--body-file", help="read the text from a file ('-' for stdin)")
ExpiresOpt = typer.Option(None, "--expires", help="YYYY-MM-DD after which the memory is stale")


@app.command()
def init(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Create the project home, both roots and their indexes (idempotent)."""
    use_global(global_)
    from ..init import init_project

    created = init_project(services(), lock_timeout())
    lay = layout()
    data = {"ok": True, "created": created, "projectHome": str(lay.project_home), "harness": str(lay.harness),
            "mirror": str(lay.mirror), "scopeKey": lay.scope_key}
    emit(data, f"{'initialised' if created else 'already initialised'}: {lay.project_root}\n"
         f"  private store: {lay.harness}\n  mirror: {lay.mirror}", as_json=want_json(json_out))
    return 0


@app.command()
def add(
    name: str = typer.Argument(..., help="file name, e.g. project_deploy-target (.md is added)"),
    description: str = typer.Option(None, "--description", "-d", help="one self-contained line"),
    type_: str = TypeOpt, visibility: str = VisOpt, body: str = BodyOpt, body_file: Path = BodyFileOpt,
    expires: str = ExpiresOpt, global_: bool = GlobalOpt, json_out: bool = JsonOpt,
) -> int:
    """Create a memory, or overwrite the one with exactly this name (keeping its created date)."""
    use_global(global_)
    from ..edits import MemoryInput, add_ops, direct_transaction
    from ..store.memory import normalize_name

    svc = services()
    file = normalize_name(name)
    data = MemoryInput(description, type_, visibility, _body(body, body_file), expires)
    result = direct_transaction(svc, "add", add_ops(file, data, svc.clock()), lock_timeout=lock_timeout())
    return _print_tx(result, want_json(json_out))


@app.command()
def update(
    name: str = typer.Argument(...), description: str = typer.Option(None, "--description", "-d"),
    type_: str = TypeOpt, visibility: str = VisOpt, body: str = BodyOpt, body_file: Path = BodyFileOpt,
    expires: str = ExpiresOpt, global_: bool = GlobalOpt, json_out: bool = JsonOpt,
) -> int:
    """Change fields or the body of an existing memory."""
    use_global(global_)
    from ..edits import MemoryInput, direct_transaction, update_ops
    from ..store.memory import normalize_name

    svc = services()
    data = MemoryInput(description, type_, visibility, _body(body, body_file), expires)
    build = update_ops(normalize_name(name), data, svc.clock())
    return _print_tx(direct_transaction(svc, "update", build, lock_timeout=lock_timeout()), want_json(json_out))


@app.command()
def forget(name: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Delete a memory from the private store and the mirror."""
    use_global(global_)
    from ..edits import direct_transaction, forget_ops
    from ..store.memory import normalize_name

    svc = services()
    build = forget_ops(normalize_name(name))
    return _print_tx(direct_transaction(svc, "forget", build, lock_timeout=lock_timeout()), want_json(json_out))


def _memories() -> tuple[Any, dict[str, Any]]:
    from ..store.state import parse_all, read_root

    svc = services(privacy=False)
    return svc, parse_all(read_root(svc.layout.harness, svc.limits))


def _row(name: str, m: Any) -> dict[str, Any]:
    return {"file": name, "name": m.name, "description": m.description, "type": m.type,
            "visibility": m.visibility, "created": m.created, "modified": m.modified, "expires": m.expires}


@app.command("list")
def list_(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """List the memories of this project."""
    use_global(global_)
    _, memories = _memories()
    rows = [_row(n, memories[n]) for n in sorted(memories)]
    human = "\n".join(f"{r['file']:<40} {r['type']:<9} {r['visibility']:<7} {r['description']}" for r in rows)
    emit({"ok": True, "memories": rows}, human or "no memories yet", as_json=want_json(json_out))
    return 0


@app.command()
def show(name: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Print one memory."""
    use_global(global_)
    from ..edits import require
    from ..engine import read_pre

    svc = services(privacy=False)
    pre = read_pre(svc.layout, svc.limits)
    from ..store.memory import normalize_name

    actual = require(pre, normalize_name(name))
    data = pre.harness.files[actual]
    emit({"ok": True, **_row(actual, pre.memories[actual]), "body": pre.memories[actual].body},
         data.decode("utf-8"), as_json=want_json(json_out))
    return 0


@app.command()
def search(query: str = typer.Argument(...), limit: int = typer.Option(20, "--limit"), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Find memories by words in their name, description and body."""
    use_global(global_)
    from ..store.search import rank

    _, memories = _memories()
    hits = rank(query, memories)[:limit]
    rows = [{**_row(n, memories[n]), "score": s} for n, s in hits]
    human = "\n".join(f"{r['file']:<40} {r['score']:>3}  {r['description']}" for r in rows)
    emit({"ok": True, "query": query, "results": rows}, human or "no match", as_json=want_json(json_out))
    return 0
