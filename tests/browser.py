"""Headless Chromium for the report tests: the DevTools protocol over a small stdlib websocket, and PNG checks."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Socket:
    """Just enough RFC 6455 for one DevTools session: masked text frames out, whole frames in."""

    def __init__(self, url: str) -> None:
        match = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        assert match, url
        host, port, path = match.group(1), int(match.group(2)), match.group(3)
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.next_id = 0

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "DevTools closed the connection"
            data += chunk
        return data

    def send(self, method: str, **params: Any) -> int:
        self.next_id += 1
        payload = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        mask = os.urandom(4)
        size = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | size]) if size < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", size) if size < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", size))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        return self.next_id

    def receive(self) -> dict[str, Any]:
        message = b""
        while True:
            first, second = self._exact(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack(">H", self._exact(2))[0]
            elif size == 127:
                size = struct.unpack(">Q", self._exact(8))[0]
            message += self._exact(size)
            if first & 0x80:
                value = json.loads(message)
                assert isinstance(value, dict)
                return value

    def call(self, method: str, events: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer; the events that arrive meanwhile go to ``events``."""
        wanted = self.send(method, **params)
        while True:
            message = self.receive()
            if message.get("id") == wanted:
                assert "error" not in message, message
                result = message.get("result", {})
                assert isinstance(result, dict)
                return result
            events.append(message)


@contextmanager
def devtools(binary: str, profile: Path) -> Iterator[Socket]:
    """A headless browser on a blank page and a DevTools session attached to that page."""
    proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            port = found.group(1) if found else None
            assert line or proc.poll() is None, "chromium exited before DevTools listened"
        assert port, "chromium never printed its DevTools address"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            targets = json.loads(answer.read())
        page = next(t for t in targets if t.get("type") == "page")
        session = Socket(page["webSocketDebuggerUrl"])
        try:
            yield session
        finally:
            session.sock.close()
    finally:
        proc.kill()
        proc.wait(timeout=30)


def load(session: Socket, url: str) -> list[dict[str, Any]]:
    """Navigate with network, console and log reporting on; every event until the load has fired."""
    events: list[dict[str, Any]] = []
    for domain in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
        session.call(domain, events)
    session.call("Page.navigate", events, url=url)
    while not any(e.get("method") == "Page.loadEventFired" for e in events):
        events.append(session.receive())
    return events


def evaluate(session: Socket, expression: str, events: list[dict[str, Any]]) -> Any:
    result = session.call("Runtime.evaluate", events, expression=expression, returnByValue=True)
    return result["result"].get("value")


def screenshot(binary: str, profile: Path, url: str, png: Path) -> None:
    subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}", "--window-size=1280,800",
                    url], check=True, capture_output=True, timeout=120)


def png_pixels(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the set of distinct pixels of an 8-bit RGB or RGBA PNG (filters undone)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, b"", b""
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + size
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), (depth, colour)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(chunks)
    stride = width * bpp
    previous = bytearray(stride)
    pixels: set[bytes] = set()
    for row in range(height):
        kind = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        pixels.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp * 16))
        previous = line
    return width, height, pixels
