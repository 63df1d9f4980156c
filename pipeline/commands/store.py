"""Commands that create and read memories: init, add, update, forget, list, show, search."""

from __future__ import annotations

from pathlib import Path

import typer

from . import memories
from ._app import GlobalOpt, JsonOpt, app, emit, layout, lock_timeout, services, use_global, want_json

TypeOpt = typer.Option(None, "--type", "-t", help="user | feedback | project | reference")
VisOpt = typer.Option(None, "--visibility", help="safe (mirrored to .memory/) | private (default)")
BodyOpt = typer.Option(None, "--body", "-b", help="the memory text")
BodyFileOpt = typer.Option(None, "--body-file", help="read the text from a file ('-' for stdin)")
ExpiresOpt = typer.Option(None, "--expires", help="YYYY-MM-DD after which the memory is stale")
PublishOpt = typer.Option(False, "--allow-publish",
                          help="let a safe memory carry the wording of another, private memory")


@app.command()
def init(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Create the project home, both roots and their indexes (idempotent)."""
    use_global(global_)
    from ..apply.init import init_project

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
    expires: str = ExpiresOpt, global_: bool = GlobalOpt, json_out: bool = JsonOpt, allow_publish: bool = PublishOpt,
) -> int:
    """Create a memory, or overwrite the one with exactly this name (keeping its created date)."""
    return memories.add(name, description, type_, visibility, body, body_file, expires, global_, json_out,
                        allow_publish=allow_publish)


@app.command()
def update(
    name: str = typer.Argument(...), description: str = typer.Option(None, "--description", "-d"),
    type_: str = TypeOpt, visibility: str = VisOpt, body: str = BodyOpt, body_file: Path = BodyFileOpt,
    expires: str = ExpiresOpt, global_: bool = GlobalOpt, json_out: bool = JsonOpt, allow_publish: bool = PublishOpt,
) -> int:
    """Change fields or the body of an existing memory."""
    return memories.update(name, description, type_, visibility, body, body_file, expires, global_, json_out,
                           allow_publish=allow_publish)


@app.command()
def forget(name: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Delete a memory from the private store and the mirror."""
    return memories.forget(name, global_, json_out)


@app.command("list")
def list_(global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """List the memories of this project."""
    return memories.list_memories(global_, json_out)


@app.command()
def show(name: str = typer.Argument(...), global_: bool = GlobalOpt, json_out: bool = JsonOpt) -> int:
    """Print one memory."""
    use_global(global_)
    from ..edits import require
    from ..state import read_pre

    svc = services(privacy=False)
    pre = read_pre(svc.layout, svc.limits)
    actual = require(pre, name, parsed=True)
    data = pre.harness.files[actual]
    emit({"ok": True, **memories.row(actual, pre.memories[actual]), "body": pre.memories[actual].body},
         data.decode("utf-8"), as_json=want_json(json_out))
    return 0


@app.command()
def search(
    query: str = typer.Argument(...),
    limit: int = typer.Option(20, "--limit"),
    global_: bool = GlobalOpt,
    json_out: bool = JsonOpt,
) -> int:
    """Find memories by words in their name, description and body."""
    return memories.search(query, limit, global_, json_out)
