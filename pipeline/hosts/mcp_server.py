"""The MCP server: memfold's store and transactions as tools, in one long-lived process on stdio."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from ..apply.commit import Services
from ..apply.due import DuePolicy
from ..errors import InputRejected, MemfoldError, UsageError
from ..transaction import ConsolidateRequest
from .mcp_models import (
    ConsolidateOut,
    ListOut,
    SearchOut,
    ShowOut,
    StatusOut,
    TxOut,
    VerifyOut,
)

SERVER_NAME = "memfold"


def _row(file: str, m: Any) -> dict[str, Any]:  # a Memory or a search index row
    return {"file": file, "name": m.name, "description": m.description, "type": m.type, "visibility": m.visibility,
            "created": m.created, "modified": m.modified, "expires": m.expires}


@dataclass
class Backend:
    """The tool bodies, free of MCP types: everything loaded once, each call one core function."""

    svc: Services
    lock_timeout: float
    workers: Mapping[str, Any]
    due_policy: DuePolicy
    # ``transaction.consolidate_request`` of the config: workers, worker output bounds, environment.
    request: ConsolidateRequest = field(default_factory=ConsolidateRequest)
    allow_publish: bool = False  # the config's mcp.allow_publish
    # The store as the last write left it, kept while the kernel reports no other change to it.
    warm: Any = field(default=None, repr=False)
    # What reads show (``mirror.team.LiveView``), kept the same way between calls.
    live: Any = field(default=None, repr=False)
    searched: Any = field(default=None, repr=False)  # the view the last search checked the index against

    def edit(self, command: str, build: Callable[..., Any]) -> dict[str, Any]:
        from ..edits import direct_transaction
        from ..state.warm import WarmState

        if self.warm is None:
            self.warm = WarmState(self.svc.layout, self.svc.limits)
        # The agent is not the person who decides what the team's repository shows.
        publish = "named" if self.allow_publish else "none"
        return direct_transaction(self.svc, command, build, lock_timeout=self.lock_timeout,
                                  publish=publish, warm=self.warm).as_dict()

    def _citing(self, cite: list[str] | None) -> Any:
        from ..evidence.cite import Citing

        layout = self.svc.layout
        return Citing(None if layout.is_global else layout.project_root, cite)

    def add(self, name: str, description: str, body: str, type_: str, visibility: str,
            expires: str | None, cite: list[str] | None = None) -> dict[str, Any]:
        from ..state.ops import MemoryInput, add_ops
        from ..store.memory import Memory, sanitize_line

        evidence = self._citing(cite)(Memory(name, sanitize_line(description) or "-", body=body))
        data = MemoryInput(description, type_, visibility, body, expires, evidence)
        return self.edit("add", add_ops(name, data, self.svc.clock()))

    def update(self, name: str, cite: list[str] | None = None, **fields: Any) -> dict[str, Any]:
        from ..state.ops import MemoryInput, update_ops

        citing = self._citing(cite)
        done = self.edit("update", update_ops(name, MemoryInput(**fields), self.svc.clock(), anchor=citing))
        return {**done, "warnings": [*done["warnings"], *citing.notes]}

    def _root(self) -> Any:
        layout = self.svc.layout
        return None if layout.is_global else layout.project_root

    def _used(self, kind: str, files: list[str]) -> None:
        from ..store import usage

        usage.record(str(self.svc.layout.project_home), kind, files)

    def forget(self, name: str) -> dict[str, Any]:
        from ..state.ops import forget_ops

        return self.edit("forget", forget_ops(name))

    def view(self) -> Any:
        """The store as reads show it (``mirror.team``): as the next sync leaves it, teammates' pending
        memories labelled. While the kernel reports no change to either root, the view read last is
        answered again (``LiveView``); otherwise unchanged files are neither read nor parsed again: the
        home's state cache keeps them by file identity and content hash, across calls and processes."""
        from ..mirror.team import LiveView

        if self.live is None:
            self.live = LiveView(self.svc.layout, self.svc.limits)
        return self.live.read(lambda: self.svc.ruleset)

    def list_memories(self) -> dict[str, Any]:
        view = self.view()
        memories = view.memories
        return {"ok": True, "memories": [{**_row(n, memories[n]), **view.origin(n)} for n in sorted(memories)]}

    def search(self, query: str, limit: int) -> dict[str, Any]:
        from ..mirror.team import team_hits

        if not query.strip():
            raise UsageError("memory_search needs words to look for", code="usage.query",
                             hint="pass a query; memory_list shows every memory")
        from ..evidence.cite import Follower, checked
        from ..store.evidence import from_row

        view = self.view()
        # A kept view is one this server searched already: its index was checked against its files then,
        # and no file changed since (or the view would have been read again).
        hits = team_hits(self.svc.layout, self.svc.limits, view, query, limit, checked=view is self.searched)
        self.searched = view
        root = self._root()
        follow = Follower(root) if root is not None else None
        self._used("search", [r.file for r, _ in hits])
        return {"ok": True, "query": query,
                "results": [{**_row(r.file, r), **view.origin(r.file), "score": s, "body": r.body,
                             **checked(root, from_row(r.evidence), follow)} for r, s in hits]}

    def show(self, name: str) -> dict[str, Any]:
        from ..evidence.cite import checked
        from ..state.ops import require_in

        view = self.view()
        actual = require_in(view.memories, view.broken, name, parsed=True)
        memory = view.memories[actual]
        self._used("read", [actual])
        return {"ok": True, **_row(actual, memory), **view.origin(actual), "body": memory.body,
                **checked(self._root(), memory.evidence)}

    def consolidate(self, context: str | None, scope: str | None, worker: str | None,
                    dry_run: bool) -> dict[str, Any]:
        from ..transaction import consolidate
        from ..worker.task import BUILTIN, resolve_worker

        # The same allow-list as the CLI; no name means the configured default (the request's worker).
        worker = resolve_worker(worker, self.request.worker, self.workers)
        if worker != BUILTIN and getattr(self.workers.get(worker), "network", True):
            raise InputRejected(f"worker {worker!r} is not available over MCP",
                                code="mcp.worker", hint="use builtin, or a configured worker without network")
        # The lock wait is the request's (consolidate.lock_wait): a consolidation waits out a short write.
        request = self.request.with_changes(
            context=context.encode("utf-8") if context is not None else None,
            context_source="mcp" if context is not None else "none", scope=scope, worker=worker,
            dry_run=dry_run, refuse_emptying=True)
        # One worker run: the emptying check sits between validation and the commit.
        return {"ok": True, **consolidate(self.svc, request)}

    def status(self) -> dict[str, Any]:
        from ..status import project_status

        return {"ok": True, **project_status(self.svc, self.due_policy)}

    def verify(self, target: str | None, audit: bool) -> dict[str, Any]:
        from ..mirror import gitinfo
        from ..receipts.log import log_entries
        from ..receipts.verify import audit as run_audit
        from ..receipts.verify import verify_receipt

        layout, limits = self.svc.layout, self.svc.limits
        if audit:
            return {**run_audit(layout, limits, git=gitinfo).as_dict(), "target": None}
        if target is None:
            entries = log_entries(layout.receipts)
            if not entries:
                return {"ok": True, "target": None, "checks": [], "errors": [], "drift": [], "receipts": 0}
            target = str(entries[-1].path)
        else:
            target = store_receipt(layout, target)
        return {**verify_receipt(layout, limits, target, gitinfo).as_dict(), "target": target}


def store_receipt(layout: Any, target: str) -> str:
    """``target`` as ``memory_verify`` may name it: a run id, or a receipt of this store (a log entry, a run's
    pre or post receipt) by file name or path. Anything else is refused the same way whether or not it
    exists, so an agent cannot learn through the tool which files exist elsewhere or what they hold."""
    import os

    from ..apply.runs import RUN_ID_RE
    from ..receipts.log import log_entries

    if RUN_ID_RE.match(target):
        return target
    folder, name = os.path.split(os.path.normpath(target)) if target.strip() else ("", "")
    receipts, runs = os.fspath(layout.receipts), os.fspath(layout.runs)
    if folder in ("", receipts) and name in {entry.path.name for entry in log_entries(layout.receipts)}:
        return os.path.join(receipts, name)
    run, kind = os.path.split(folder)
    if kind and run == runs and RUN_ID_RE.match(kind) and name in ("post-receipt.json", "pre-receipt.json"):
        return os.path.join(runs, kind, name)
    raise InputRejected("memory_verify reads receipts of this project's store only", code="mcp.verify-target",
                        hint="pass a run id (memory_status names the last run), a receipt file name of the log, "
                        "or nothing for the newest receipt")


def error_result(code: str, message: str, hint: str | None) -> CallToolResult:
    """A tool error as the MCP spec has it: text only, ``isError: true``.

    No structured content: it would have to match the tool's ``outputSchema``, and a client that
    validates it (the TypeScript SDK does) drops the whole result when it does not, message and all.
    """
    text = f"[{code}] {message}" + (f"\nhint: {hint}" if hint else "")
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _call(run: Callable[[], dict[str, Any]]) -> CallToolResult:
    """Success carries structured content; a MemfoldError becomes a tool error carrying its stable code."""
    import json

    try:
        data = run()
    except MemfoldError as exc:
        return error_result(exc.code, exc.message, exc.hint)
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data,
                          is_error=not data.get("ok", True))


def _hints(read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=False)


Name = Annotated[str, Field(description="the memory's title in words (e.g. Deploy target), its slug or its file name")]
Kind = Annotated[str | None, Field(description="user | feedback | project | reference")]
Vis = Annotated[str | None, Field(description="safe (mirrored to .memory/, privacy-checked) | private")]
Cite = Annotated[list[str] | None, Field(
    description="repository text the memory rests on, each PATH or PATH:LINE or PATH:FIRST-LAST (relative to "
                "the project root); checked before each later use", max_length=32)]


def argument_error(tool: str, exc: ValidationError) -> CallToolResult:
    """Rejected arguments in memfold's error shape: which argument and why, never the value sent."""
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        problems.append(f"'{where}' is required" if error.get("type") == "missing"
                        else f"'{where}': {error.get('msg', 'invalid')}")
    return error_result("mcp.arguments", f"{tool}: " + "; ".join(problems),
                        "the tool's inputSchema in tools/list names every argument and its type")


class _Server(MCPServer):
    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return argument_error(name, exc.__cause__)
            if self._tool_manager.get_tool(name) is None:
                return error_result("mcp.unknown-tool", f"there is no tool {name[:80]!r}",
                                    "tools/list names the tools this server has")
            raise


def build_server(backend: Backend) -> MCPServer:
    from .. import __version__

    server: MCPServer = _Server(SERVER_NAME, version=__version__, instructions=(
        "Durable project memory. Every write is a receipted transaction; private memories never reach "
        "the shared .memory/ mirror. Search before adding: near-duplicates are refused."))

    @server.tool(annotations=_hints(False, destructive=True))
    def memory_add(name: Name, description: Annotated[str, Field(description="one self-contained line")],
                   body: str = "", type: Kind = None, visibility: Vis = None,
                   expires: Annotated[str | None, Field(description="YYYY-MM-DD")] = None,
                   cite: Cite = None) -> Annotated[CallToolResult, TxOut]:
        """Create a memory, or overwrite the one with exactly this name (a near-duplicate is refused)."""
        return _call(lambda: backend.add(name, description, body, type or "project", visibility or "private",
                                         expires, cite))

    @server.tool(annotations=_hints(False, destructive=True))
    def memory_update(name: Name, description: str | None = None, body: str | None = None, type: Kind = None,
                      visibility: Vis = None, expires: str | None = None,
                      cite: Cite = None) -> Annotated[CallToolResult, TxOut]:
        """Change fields or the body of an existing memory; its citations are re-anchored to the code now."""
        return _call(lambda: backend.update(name, description=description, body=body, type=type,
                                            visibility=visibility, expires=expires, cite=cite))

    @server.tool(annotations=_hints(True, idempotent=True))
    def memory_show(name: Name) -> Annotated[CallToolResult, ShowOut]:
        """Read one memory, with whether the code it cites changed since it was written."""
        return _call(lambda: backend.show(name))

    @server.tool(annotations=_hints(False, destructive=True, idempotent=True))
    def memory_forget(name: Name) -> Annotated[CallToolResult, TxOut]:
        """Delete one memory (from the private store and the mirror)."""
        return _call(lambda: backend.forget(name))

    @server.tool(annotations=_hints(True, idempotent=True))
    def memory_list() -> Annotated[CallToolResult, ListOut]:
        """List this project's memories (name, description, type, visibility, dates)."""
        return _call(backend.list_memories)

    @server.tool(annotations=_hints(True, idempotent=True))
    def memory_search(query: str, limit: Annotated[int, Field(ge=1, le=200)] = 10,
                      ) -> Annotated[CallToolResult, SearchOut]:
        """Find memories by words in their name, description and body; returns the bodies too."""
        return _call(lambda: backend.search(query, limit))

    @server.tool(annotations=_hints(False, destructive=True))
    def memory_consolidate(
        context: Annotated[str | None, Field(description="session transcript text (JSON/JSONL)")] = None,
        scope: Annotated[str | None, Field(description="all | related")] = None,
        worker: Annotated[str | None, Field(description="builtin, or a worker named in the user config "
                                                        "(default: consolidate.worker)")] = None,
        dry_run: bool = False,
    ) -> Annotated[CallToolResult, ConsolidateOut]:
        """Consolidate the store through the verified transaction (never publishes private memories)."""
        return _call(lambda: backend.consolidate(context, scope, worker, dry_run))

    @server.tool(annotations=_hints(True, idempotent=True))
    def memory_status() -> Annotated[CallToolResult, StatusOut]:
        """Roots, counts, capacity, lock holder, last run and whether consolidation is due."""
        return _call(backend.status)

    @server.tool(annotations=_hints(True, idempotent=True))
    def memory_verify(target: Annotated[str | None, Field(description="run id or receipt path")] = None,
                      audit: bool = False) -> Annotated[CallToolResult, VerifyOut]:
        """Verify a receipt (default: the newest) or, with audit, walk the whole receipt chain."""
        return _call(lambda: backend.verify(target, audit))

    return server
