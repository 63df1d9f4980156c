"""``memfold mcp``: serve the project's memory to an MCP client over stdio."""

from __future__ import annotations

import os

from ._app import app, config, services


@app.command()
def mcp() -> int:
    """Run the MCP server on stdio (the project is --project or the working directory)."""
    import anyio

    from ..hosts.cron import DuePolicy
    from ..hosts.mcp_server import Backend, build_server
    from ..transaction import consolidate_request

    cfg = config()
    section = cfg.consolidate
    backend = Backend(svc=services(), lock_timeout=float(cfg.lock.timeout), workers=cfg.workers,
                      due_policy=DuePolicy(section.due_hours, section.due_writes),
                      request=consolidate_request(cfg, os.environ), allow_publish=bool(cfg.mcp.allow_publish))
    anyio.run(build_server(backend).run_stdio_async)
    return 0
