"""What the MCP tools return: the structured output of each tool, as the schemas clients are shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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


class Citation(BaseModel):
    path: str
    lines: str | None = None
    sha256: str | None = None
    cited: str
    status: str = Field(description="holds | moved | changed | gone | renamed | unchecked")
    now: str | None = Field(None, description="where the cited text is now (moved, renamed)")


class Checked(BaseModel):
    evidence: list[Citation] = Field(default_factory=list, description="the repository text the memory cites")
    marks: list[str] = Field(default_factory=list,
                             description="cited code that changed or is gone: check before relying on the memory")


class SearchRow(MemoryRow, Checked):
    score: float = Field(description="BM25 relevance, higher is better")
    body: str


class ShowOut(MemoryRow, Checked):
    ok: bool
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
