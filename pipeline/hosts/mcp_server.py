"""The MCP server: memfold's store and transactions as tools, in one long-lived process on stdio."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from ..apply.commit import Services
from ..errors import InputRejected, MemfoldError
from ..store.memory import Memory
from ..store.state import read_root
from .cron import DuePolicy

SERVER_NAME = "memfold"


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class OpOut(BaseModel):
    name: str
    kind: str
    classification: str | None = None
    contentSha256: str | None = None


class TxOut(BaseModel):
    ok: bool
    command: str
    runId: str | None = Field(description="null when nothing changed (no transaction, no receipt)")
    operations: list[OpOut]
    receipt: str | None
    warnings: list[str]


class MemoryRow(BaseModel):
    file: str
    name: str
    description: str
    type: str
    visibility: str
    created: str | None = None
    modified: str | None = None
    expires: str | None = None


class ListOut(BaseModel):
    ok: bool
    memories: list[MemoryRow]


class SearchRow(MemoryRow):
    score: int
    body: str


class SearchOut(BaseModel):
    ok: bool
    query: str
    results: list[SearchRow]


class ConsolidateOut(_Out):
    ok: bool
    runId: str
    dryRun: bool
    noOp: bool | None = None
    verified: bool | None = None
    receipt: str | None = None


class StatusOut(_Out):
    ok: bool
    projectRoot: str
    memories: int
    safe: int
    private: int
    due: bool
    lock: str | None = None


class VerifyOut(BaseModel):
    ok: bool
    target: str | None
    checks: list[str]
    errors: list[dict[str, str]]
    drift: list[dict[str, Any]]
    receipts: int
    warnings: list[dict[str, str]] = []
    witness: dict[str, Any] | None = None


def _row(file: str, m: Memory) -> dict[str, Any]:
    return {"file": file, "name": m.name, "description": m.description, "type": m.type, "visibility": m.visibility,
            "created": m.created, "modified": m.modified, "expires": m.expires}


@dataclass
class Backend:
    """The tool bodies, free of MCP types: everything loaded once, each call one core function."""

    svc: Services
    lock_timeout: float
    workers: Mapping[str, Any]
    due_policy: DuePolicy
    parent_env: Mapping[str, str] = field(default_factory=dict)
    extract_limits: Any = None  # the config's worker output bounds (ExtractLimits); None: the defaults
    allow_publish: bool = False  # the config's mcp.allow_publish

    def edit(self, command: str, build: Callable[..., Any]) -> dict[str, Any]:
        from ..edits import direct_transaction

        # The agent is not the person who decides what the team's repository shows.
        publish = "named" if self.allow_publish else "none"
        return direct_transaction(self.svc, command, build, lock_timeout=self.lock_timeout,
                                  publish=publish).as_dict()

    def add(self, name: str, description: str, body: str, type_: str, visibility: str,
            expires: str | None) -> dict[str, Any]:
        from ..edits import MemoryInput, add_ops

        data = MemoryInput(description, type_, visibility, body, expires)
        return self.edit("add", add_ops(name, data, self.svc.clock()))

    def update(self, name: str, **fields: Any) -> dict[str, Any]:
        from ..edits import MemoryInput, update_ops

        return self.edit("update", update_ops(name, MemoryInput(**fields), self.svc.clock()))

    def forget(self, name: str) -> dict[str, Any]:
        from ..edits import forget_ops

        return self.edit("forget", forget_ops(name))

    def memories(self) -> dict[str, Memory]:
        """The store as it is now. Unchanged files are neither read nor parsed again: ``read_root`` and
        ``parsed_memories`` keep them by file identity and content hash across calls."""
        from ..state import parsed_memories

        return parsed_memories(read_root(self.svc.layout.harness, self.svc.limits))

    def list_memories(self) -> dict[str, Any]:
        memories = self.memories()
        return {"ok": True, "memories": [_row(n, memories[n]) for n in sorted(memories)]}

    def search(self, query: str, limit: int) -> dict[str, Any]:
        from ..store.search import rank

        memories = self.memories()
        hits = rank(query, memories)[: max(limit, 0)]
        return {"ok": True, "query": query,
                "results": [{**_row(n, memories[n]), "score": s, "body": memories[n].body} for n, s in hits]}

    def consolidate(self, context: str | None, scope: str | None, worker: str, dry_run: bool) -> dict[str, Any]:
        from ..transaction import ConsolidateRequest, consolidate
        from ..worker.extract import ExtractLimits

        if worker != "builtin":
            spec = self.workers.get(worker)
            if spec is None or getattr(spec, "network", True):
                raise InputRejected(f"worker {worker!r} is not available over MCP",
                                    code="mcp.worker", hint="use builtin, or a configured worker without network")
        request = ConsolidateRequest(
            context=context.encode("utf-8") if context is not None else None,
            context_source="mcp" if context is not None else "none", scope=scope, worker=worker,
            workers=self.workers, dry_run=dry_run, parent_env=dict(self.parent_env), lock_timeout=0.0,
            extract_limits=self.extract_limits or ExtractLimits(), refuse_emptying=True)
        # One worker run: the emptying check sits between validation and the commit.
        return {"ok": True, **consolidate(self.svc, request)}

    def status(self) -> dict[str, Any]:
        from ..status import project_status

        return {"ok": True, **project_status(self.svc, self.due_policy)}

    def verify(self, target: str | None, audit: bool) -> dict[str, Any]:
        from ..receipts.receipt import log_entries
        from ..receipts.verify import audit as run_audit
        from ..receipts.verify import verify_receipt

        layout, limits = self.svc.layout, self.svc.limits
        if audit:
            return {**run_audit(layout, limits).as_dict(), "target": None}
        if target is None:
            entries = log_entries(layout.receipts)
            if not entries:
                return {"ok": True, "target": None, "checks": [], "errors": [], "drift": [], "receipts": 0}
            target = str(entries[-1].path)
        return {**verify_receipt(layout, limits, target).as_dict(), "target": target}


def _call(run: Callable[[], dict[str, Any]]) -> CallToolResult:
    """Success carries structured content; a MemfoldError becomes a tool error carrying its stable code."""
    import json

    try:
        data = run()
    except MemfoldError as exc:
        text = f"[{exc.code}] {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else "")
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=exc.as_dict(),
                              is_error=True)
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data,
                          is_error=not data.get("ok", True))


def _hints(read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=False)


Name = Annotated[str, Field(description="the memory's title in words (e.g. Deploy target), its slug or its file name")]
Kind = Annotated[str | None, Field(description="user | feedback | project | reference")]
Vis = Annotated[str | None, Field(description="safe (mirrored to .memory/, privacy-checked) | private")]


def build_server(backend: Backend) -> MCPServer:
    server: MCPServer = MCPServer(SERVER_NAME, instructions=(
        "Durable project memory. Every write is a receipted transaction; private memories never reach "
        "the shared .memory/ mirror. Search before adding: near-duplicates are refused."))

    @server.tool(annotations=_hints(False, destructive=True))
    def memory_add(name: Name, description: Annotated[str, Field(description="one self-contained line")],
                   body: str = "", type: Kind = None, visibility: Vis = None,
                   expires: Annotated[str | None, Field(description="YYYY-MM-DD")] = None,
                   ) -> Annotated[CallToolResult, TxOut]:
        """Create a memory, or overwrite the one with exactly this name (a near-duplicate is refused)."""
        return _call(lambda: backend.add(name, description, body, type or "project", visibility or "private",
                                         expires))

    @server.tool(annotations=_hints(False, destructive=True))
    def memory_update(name: Name, description: str | None = None, body: str | None = None, type: Kind = None,
                      visibility: Vis = None, expires: str | None = None) -> Annotated[CallToolResult, TxOut]:
        """Change fields or the body of an existing memory."""
        return _call(lambda: backend.update(name, description=description, body=body, type=type,
                                            visibility=visibility, expires=expires))

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
        worker: str = "builtin", dry_run: bool = False,
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
