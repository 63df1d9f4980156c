"""Commands that create and read memories: init and show (add, update, forget, list, search: ``spec``)."""

from __future__ import annotations

import typer

from . import memories
from ._app import GlobalOpt, JsonOpt, app, emit, layout, lock_timeout, services, use_global, want_json


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
