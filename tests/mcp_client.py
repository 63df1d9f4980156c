"""A tiny driver for memfold's MCP server through the official SDK client over stdio (used by tests)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent


def server_params(home: Path, project: Path) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "MEMFOLD_NOW", "TMPDIR")}
    env["PYTHONPATH"] = str(REPO)
    return StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "--home", str(home), "mcp"],
                                 env=env, cwd=str(project))


def with_session(home: Path, project: Path, body: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with stdio_client(server_params(home, project)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)

    return anyio.run(main)


def with_initialize(home: Path, project: Path) -> Any:
    """The server's answer to ``initialize`` (serverInfo, capabilities)."""
    async def main() -> Any:
        async with stdio_client(server_params(home, project)) as (read, write):
            async with ClientSession(read, write) as session:
                return await session.initialize()

    return anyio.run(main)


async def timed(session: ClientSession, name: str, args: dict[str, Any], n: int) -> list[float]:
    out = []
    for i in range(n):
        call_args = {k: (v.format(i=i) if isinstance(v, str) else v) for k, v in args.items()}
        started = time.perf_counter()
        result = await session.call_tool(name, call_args)
        out.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content
    return out


def tool_error(result: Any) -> dict[str, str]:
    """A tool error as every client sees it: ``isError`` and one text block ``[code] message`` with an
    optional ``hint:`` line, and no structured content (it would have to match the output schema)."""
    assert result.is_error and result.structured_content is None, result
    (block,) = result.content
    head, _, hint = block.text.partition("\nhint: ")
    assert head.startswith("["), head
    code, _, message = head[1:].partition("] ")
    return {"code": code, "message": message, "hint": hint}
