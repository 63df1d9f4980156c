"""A tiny driver for memfold's MCP server through the official SDK client over stdio (used by tests)."""

from __future__ import annotations

import json
import os
import subprocess
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


def raw_server(home: Path, project: Path) -> subprocess.Popen[bytes]:
    """``memfold mcp``, initialized, spoken to line by line (past what the SDK client would send)."""
    params = server_params(home, project)
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=params.env, cwd=params.cwd)
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert answer(proc)["id"] == 1
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def send(proc: subprocess.Popen[bytes], message: dict[str, Any] | bytes) -> None:
    assert proc.stdin is not None
    proc.stdin.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]


def close_server(proc: subprocess.Popen[bytes]) -> bytes:
    """Close stdin, expect a clean exit; the server's stderr."""
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    try:
        assert proc.wait(30) == 0
    finally:
        proc.kill()
    return proc.stderr.read()
