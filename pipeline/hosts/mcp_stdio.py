"""The MCP server's transport: the client's lines on stdio, each bounded in size, and the serving loop.

A request line over the bound is never held whole: it is answered with a JSON-RPC error that names the
bound, and the server goes on with the next line.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

MAX_REQUEST_BYTES = 16 << 20  # the config's mcp.max_request_bytes
_EDGE = 4096  # what is kept of each end of a line over the bound, to find its request id
# A request id where the SDKs write it: first (after "jsonrpc" and "method") or last in the top-level object.
_ID_FIRST = re.compile(
    rb'^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*\s*"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")')
_ID_LAST = re.compile(rb',\s*"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")\s*\}\s*$')

Reply = Callable[[Any], Awaitable[None]]


class StdinLines:
    """The client's lines from a private copy of fd 0, read only once it is readable, so a cancelled
    server never waits for one more line; fd 0 itself points at the null device while serving (what
    the SDK's own reader does), so nothing the tools start can read the protocol.

    Each byte is looked at once (a line of any length costs linear time), and a line longer than
    ``max_line`` is never held: its middle is dropped as it arrives, the client is answered with a
    JSON-RPC error naming the bound (through ``reply``, set once the server's write stream exists), and
    the next line is served as usual.
    """

    def __init__(self, max_line: int = MAX_REQUEST_BYTES, fd: int | None = None) -> None:
        import os

        if fd is None:
            fd = os.dup(0)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
        self.fd = fd
        self.pending = bytearray()
        self.pos = 0  # where the unread lines in ``pending`` start
        self.scanned = 0  # ``pending`` holds no newline before this offset
        self.max_line = max_line
        self.pollable = True
        self.reply: Reply | None = None
        self.skipping: tuple[bytes, bytearray, int] | None = None  # a long line: (head, tail, bytes so far)

    def __aiter__(self) -> StdinLines:
        return self

    async def _chunk(self) -> bytes:
        import os

        import anyio

        if self.pollable:
            try:
                await anyio.wait_readable(self.fd)
            except OSError:  # a regular file or /dev/null as stdin: always readable, never polled
                self.pollable = False
        return os.read(self.fd, 1 << 16)

    async def __anext__(self) -> str:
        while True:
            line = self._line()
            if line is not None:
                if len(line) <= self.max_line:
                    return line.decode("utf-8", "replace") + "\n"
                await self._refuse(line[:_EDGE], line[-_EDGE:], len(line))
                continue
            chunk = await self._chunk()
            end_of_input = not chunk
            if self.skipping is not None:
                chunk = await self._skip(chunk)
                if self.skipping is not None:
                    continue  # still inside the line over the bound
            if not end_of_input:
                self.pending += chunk
                continue
            rest = bytes(self.pending[self.pos:])
            self.pending.clear()
            self.pos = self.scanned = 0
            if not rest:
                raise StopAsyncIteration
            if len(rest) <= self.max_line:
                return rest.decode("utf-8", "replace")
            await self._refuse(rest[:_EDGE], rest[-_EDGE:], len(rest))

    def _line(self) -> bytes | None:
        """The next whole line in ``pending``, else None; a line growing past the bound starts a skip."""
        end = self.pending.find(b"\n", self.scanned)
        if end >= 0:
            line = bytes(self.pending[self.pos:end])
            self.pos = self.scanned = end + 1
            return line
        if self.pos:
            del self.pending[:self.pos]
            self.pos = 0
        self.scanned = len(self.pending)
        if len(self.pending) > self.max_line:
            self.skipping = (bytes(self.pending[:_EDGE]), bytearray(self.pending[-_EDGE:]), len(self.pending))
            self.pending.clear()
            self.scanned = 0
        return None

    async def _skip(self, chunk: bytes) -> bytes:
        """Drop ``chunk`` up to the end of the line over the bound, keeping its last bytes; once the line
        ends (or the input does: an empty ``chunk``), answer it and return what follows it."""
        assert self.skipping is not None
        head, tail, size = self.skipping
        end = chunk.find(b"\n")
        part = chunk if end < 0 else chunk[:end]
        tail += part
        del tail[:-_EDGE]
        if end < 0 and chunk:
            self.skipping = (head, tail, size + len(part))
            return b""
        self.skipping = None
        await self._refuse(head, bytes(tail), size + len(part))
        return chunk[end + 1:] if end >= 0 else b""

    async def _refuse(self, head: bytes, tail: bytes, size: int) -> None:
        from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

        found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
        request_id: Any = None
        if found is not None:
            text = found.group(1).decode("utf-8", "replace")
            request_id = text[1:-1] if text.startswith('"') else int(text)
        message = (f"[mcp.request-too-large] the request is {size} bytes, over the {self.max_line}-byte bound "
                   "of one request; it was not read (raise mcp.max_request_bytes in the config for larger "
                   "transcripts)")
        if self.reply is not None:
            error = ErrorData(code=INVALID_REQUEST, message=message,
                              data={"code": "mcp.request-too-large", "bytes": size, "maxBytes": self.max_line})
            await self.reply(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def serve_stdio(server: MCPServer, max_request_bytes: int = MAX_REQUEST_BYTES) -> None:
    """Serve on stdio until the client closes stdin or SIGINT/SIGTERM arrives; both end it cleanly."""
    import signal

    import anyio
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async, with a stdin a cancel can interrupt
    async with anyio.create_task_group() as group:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    group.cancel_scope.cancel()
                    return

        group.start_soon(stop_on_signal)
        lines = StdinLines(max_request_bytes)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            from mcp.shared.message import SessionMessage

            async def reply(message: Any) -> None:
                await write_stream.send(SessionMessage(message))

            lines.reply = reply
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()
