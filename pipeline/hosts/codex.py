"""Codex: the ``hooks.json`` SessionStart hook that injects memfold context, and Codex's two trust gates."""

from __future__ import annotations

import json
import select
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import InputRejected

EVENTS = ("SessionStart",)
APP_SERVER_TIMEOUT = 30.0


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    """``$CODEX_HOME`` or ``<home>/.codex``."""
    configured = env.get("CODEX_HOME")
    return Path(configured) if configured else home / ".codex"


def hooks_path(project_root: Path, home: Path, env: Mapping[str, str], *, user: bool) -> Path:
    """Codex reads ``hooks.json`` next to each config layer: ``<repo>/.codex/`` and ``~/.codex/``.

    The handler shape (``{"hooks": {"SessionStart": [{"hooks": [{"type": "command", ...}]}]}}``) and the
    SessionStart output (``hookSpecificOutput.additionalContext``) are the ones Claude Code uses, so the
    merge and removal rules of :mod:`pipeline.hosts.claude` apply unchanged.
    """
    return (codex_home(home, env) if user else project_root / ".codex") / "hooks.json"


def trust_steps(project_root: Path, user: bool, result: TrustResult | None) -> list[str]:
    """What is left to run for Codex to use the hook, given what memfold could record itself.

    Codex loads a project's ``.codex/`` only once the project is trusted, and runs any hook, the
    user's own included, only once that hook is trusted; ``codex exec`` never asks for either.
    """
    if result is not None and (result.trusted or result.already):
        return []
    where = "" if user else f" --project {_quote(project_root)}"
    return [f"memfold{where} hooks install codex{' --user' if user else ''} --trust"
            + ("" if user else " --trust-project"),
            "or start `codex` in the project once, trust the folder, and choose \"Trust all and continue\" "
            "at \"Hooks need review\"",
            "or, per run: codex exec --dangerously-bypass-hook-trust ..."]


def _quote(path: Path) -> str:
    import shlex

    return shlex.quote(str(path))


@dataclass
class TrustResult:
    trusted: list[str] = field(default_factory=list)  # hook keys memfold recorded as trusted now
    already: list[str] = field(default_factory=list)  # memfold's hooks Codex trusted before
    project_trusted: bool = False  # memfold wrote the project's trust_level
    warnings: list[str] = field(default_factory=list)


class AppServer:
    """A minimal JSON-RPC client for ``codex app-server`` on stdio (one request at a time)."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], timeout: float = APP_SERVER_TIMEOUT) -> None:
        self.timeout = timeout
        # Unbuffered: select() sees the pipe, so no line may wait in a reader's buffer.
        self.proc = subprocess.Popen(tuple(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(env), bufsize=0)
        self.next_id = 0

    def __enter__(self) -> AppServer:
        self.request("initialize", {"clientInfo": {"name": "memfold", "version": _version()}})
        self.notify("initialized")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def notify(self, method: str) -> None:
        self._send({"method": method})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        while True:
            line = _readline(self.proc.stdout, deadline)
            if line is None:
                raise InputRejected(f"codex app-server gave no answer to {method}", code="hooks.codex-trust",
                                    hint="trust the hook in `codex` (\"Hooks need review\") instead")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == self.next_id:
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    raise InputRejected(f"codex app-server refused {method}: {str(error.get('message'))[:300]}",
                                        code="hooks.codex-trust",
                                        hint="trust the hook in `codex` (\"Hooks need review\") instead")
                return message.get("result")


def _readline(stream: IO[bytes], deadline: float) -> bytes | None:
    """One line, or None at end of stream or past the deadline (a silent server never hangs install)."""
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            return None
        chunk = stream.readline()
        if not chunk:
            return None
        line += chunk
    return line


def _version() -> str:
    from .. import __version__

    return __version__


def trust_hooks(start: Callable[[], AppServer], project_root: Path, ours: Callable[[str], bool], *,
                trust_project: bool) -> TrustResult:
    """Record Codex's trust for memfold's own hooks, with the hash Codex itself computed.

    Only handlers whose command is memfold's hook are trusted; everything else stays for the user to
    review. The project's ``trust_level`` (which enables all of its ``.codex/`` config) is written
    only when asked, by one app server; a fresh one then lists the hooks with that config loaded.
    """
    result = TrustResult()
    root = str(project_root)
    if trust_project:
        with start() as server:
            server.request("config/batchWrite", {"edits": [
                {"keyPath": "projects", "mergeStrategy": "upsert", "value": {root: {"trust_level": "trusted"}}}]})
        result.project_trusted = True
    with start() as server:
        listing = server.request("hooks/list", {"cwds": [root]}) or {}
        pending: dict[str, str] = {}
        for entry in listing.get("data") or []:
            for hook in entry.get("hooks") or []:
                if not (isinstance(hook, dict) and ours(str(hook.get("command", "")))):
                    continue
                key, digest = str(hook.get("key", "")), str(hook.get("currentHash", ""))
                if hook.get("trustStatus") == "trusted":
                    result.already.append(key)
                elif key and digest:
                    pending[key] = digest
            result.warnings += [str(w) for w in entry.get("warnings") or []]
        if pending:
            server.request("config/batchWrite", {"edits": [
                {"keyPath": "hooks.state", "mergeStrategy": "upsert",
                 "value": {key: {"trusted_hash": digest} for key, digest in pending.items()}}]})
            result.trusted = sorted(pending)
    return result
