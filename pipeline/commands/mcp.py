"""``memfold mcp``: serve the project's memory to an MCP client over stdio."""

from __future__ import annotations

from ._app import app
from .mcp_run import serve


@app.command()
def mcp() -> int:
    """Run the MCP server on stdio (the project is --project or the working directory)."""
    return serve()
