"""``memfold mcp``: serve the project's memory to an MCP client over stdio."""

from __future__ import annotations

import os

from ._app import app, config, services


@app.command()
def mcp() -> int:
    """Run the MCP server on stdio (the project is --project or the working directory)."""
    import anyio

    from ..hosts.cron import DuePolicy
    from ..hosts.mcp_server import Backend, build_server, serve_stdio

    cfg = config()
    section = cfg.consolidate
    backend = Backend(svc=services(), lock_timeout=float(cfg.lock.timeout), workers=cfg.workers,
                      due_policy=DuePolicy(section.due_hours, section.due_writes), parent_env=dict(os.environ),
                      extract_limits=cfg.extract_limits(), allow_publish=bool(cfg.mcp.allow_publish))
    anyio.run(serve_stdio, build_server(backend))
    return 0
