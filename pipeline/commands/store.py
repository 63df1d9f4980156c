"""The command that creates a store: init (add, update, forget, list, show, search: ``spec``)."""

from __future__ import annotations

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
