"""The body of ``memfold mcp`` without typer: a client waits for ``initialize`` while this starts, and
typer (with the pydantic it imports) would add a fifth to the MCP SDK's own import time."""

from __future__ import annotations

import os

from .context import config, services


def serve() -> int:
    import gc

    import anyio

    from ..apply.due import DuePolicy
    from ..hosts.mcp_server import Backend, build_server
    from ..hosts.mcp_stdio import serve_stdio
    from ..transaction import consolidate_request

    # The plain-command path turns the cyclic collector off for short processes; this one lives long.
    gc.enable()
    cfg = config()
    section = cfg.consolidate
    backend = Backend(svc=services(), lock_timeout=float(cfg.lock.timeout), workers=cfg.workers,
                      due_policy=DuePolicy(section.due_hours, section.due_writes),
                      request=consolidate_request(cfg, os.environ), allow_publish=bool(cfg.mcp.allow_publish))
    anyio.run(serve_stdio, build_server(backend), int(cfg.mcp.max_request_bytes))
    return 0
