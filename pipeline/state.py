"""The state model every transaction shares: pre-state read from disk, operations, the post-state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import InputRejected
from .frozen import FrozenValue
from .fsutil import sha256_bytes
from .paths import Layout
from .receipts.receipt import HashMaps
from .store.index import render_index
from .store.memory import INDEX_NAME, Memory, parse_memory
from .store.state import Broken, Limits, RootState, broken_file, read_root

KINDS = ("create", "rewrite", "delete")


class Operation(FrozenValue):
    """One memory-level change. ``content`` is the whole new file for create and rewrite (immutable)."""

    __slots__ = ("name", "kind", "classification", "content")
    name: str
    kind: str
    classification: str | None
    content: bytes | None

    def __init__(self, name: str, kind: str, classification: str | None = None,
                 content: bytes | None = None) -> None:
        self._set(name=name, kind=kind, classification=classification, content=content)

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "classification": self.classification,
            "contentSha256": sha256_bytes(self.content) if self.content is not None else None,
        }


class PreState:
    """Both roots as read under the lock, and the parsed private memories."""

    __slots__ = ("harness", "public", "memories", "mirrored", "broken")
    harness: RootState
    public: RootState
    memories: dict[str, Memory]
    mirrored: bool
    # Private-store files that do not parse: no operation touches them and the mirror never holds them.
    broken: dict[str, Broken]

    def __init__(self, harness: RootState, public: RootState, memories: dict[str, Memory],
                 mirrored: bool = True, broken: dict[str, Broken] | None = None) -> None:
        self.harness = harness
        self.public = public
        self.memories = memories
        self.mirrored = mirrored
        self.broken = {} if broken is None else broken

    def __repr__(self) -> str:
        return (f"PreState(harness={self.harness!r}, public={self.public!r}, memories={self.memories!r}, "
                f"mirrored={self.mirrored!r})")

    def hash_maps(self) -> HashMaps:
        return {"harness": dict(self.harness.hashes), "public": dict(self.public.hashes)}


class PostState:
    """Both roots' files after the operations, and the resulting private memories."""

    __slots__ = ("harness", "public", "memories", "operations", "mirrored", "known")
    harness: dict[str, bytes]
    public: dict[str, bytes]
    memories: dict[str, Memory]
    operations: list[Operation]
    mirrored: bool
    # Digests already known for bytes objects, by id (compute_post fills it from the pre-state, whose
    # unchanged files it shares): those need not be hashed again. Each entry holds its object, so the
    # id cannot be reused by other bytes meanwhile.
    known: dict[int, tuple[bytes, str]]

    def __init__(self, harness: dict[str, bytes], public: dict[str, bytes], memories: dict[str, Memory],
                 operations: list[Operation] | None = None, mirrored: bool = True,
                 known: dict[int, tuple[bytes, str]] | None = None) -> None:
        self.harness = harness
        self.public = public
        self.memories = memories
        self.operations = [] if operations is None else operations
        self.mirrored = mirrored
        self.known = {} if known is None else known

    def __repr__(self) -> str:
        return (f"PostState(harness={self.harness!r}, public={self.public!r}, memories={self.memories!r}, "
                f"operations={self.operations!r}, mirrored={self.mirrored!r})")

    def hash_maps(self) -> HashMaps:
        return {
            "harness": {n: self.digest(b) for n, b in sorted(self.harness.items())},
            "public": {n: self.digest(b) for n, b in sorted(self.public.items())},
        }

    def digest(self, data: bytes) -> str:
        hit = self.known.get(id(data))
        if hit is not None and hit[0] is data:
            return hit[1]
        digest = sha256_bytes(data)
        self.known[id(data)] = (data, digest)
        return digest


def read_pre(layout: Layout, limits: Limits) -> PreState:
    harness = read_root(layout.harness, limits)
    public = read_root(layout.mirror, limits) if layout.mirror is not None else RootState(layout.project_home)
    memories, broken = parsed_root(harness)
    return PreState(harness=harness, public=public, memories=memories, mirrored=layout.mirror is not None,
                    broken=broken)


def parsed_memories(state: RootState) -> dict[str, Memory]:
    """The memory files of a root read with its bytes, parsed (each distinct file once per process)."""
    return parsed_root(state)[0]


def parsed_root(state: RootState) -> tuple[dict[str, Memory], dict[str, Broken]]:
    """``parsed_memories`` and the files that do not parse, each with its problem and fix."""
    memories: dict[str, Memory] = {}
    broken: dict[str, Broken] = {}
    for name, data in state.memories().items():
        try:
            memories[name] = _parsed(name, data, state.hashes[name])
        except InputRejected as exc:
            broken[name] = broken_file(state.path, name, exc)
    return memories, broken


_PARSED: dict[tuple[str, str], Memory] = {}
_PARSED_MAX = 20_000


def _parsed(name: str, data: bytes, digest: str) -> Memory:
    """Parse once per (name, content hash): a long-lived process (the MCP server) re-reads the store
    on every write, and unchanged files need not be parsed again. Memory values are immutable."""
    key = (name, digest)
    memory = _PARSED.get(key)
    if memory is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        memory = _PARSED[key] = parse_memory(data, name)
    return memory


def current_hashes(layout: Layout, limits: Limits) -> HashMaps:
    """Both roots re-hashed from disk now (the stale check, post-commit check and verify use it)."""
    return {"harness": read_root(layout.harness, limits, with_bytes=False).hashes,
            "public": read_root(layout.mirror, limits, with_bytes=False).hashes if layout.mirror else {}}


def compute_post(pre: PreState, operations: list[Operation]) -> PostState:
    """Apply operations to the harness, then derive the whole mirror and both indexes from it."""
    files = pre.harness.memories()
    memories = dict(pre.memories)
    for op in operations:
        if op.kind == "delete":
            files.pop(op.name, None)
            memories.pop(op.name, None)
            continue
        if op.content is None:
            raise InputRejected(f"operation {op.kind} {op.name} has no content", code="plan.content")
        memory = parse_memory(op.content, op.name)
        if op.classification is not None and memory.visibility != op.classification:
            raise InputRejected(
                f"{op.name}: content says visibility {memory.visibility} but the operation says "
                f"{op.classification}",
                code="plan.content-disagrees",
            )
        files[op.name] = op.content
        memories[op.name] = memory
    harness = dict(files)
    harness[INDEX_NAME] = render_index(memories, mirror=False)
    public: dict[str, bytes] = {}
    if pre.mirrored:
        # A file that does not parse has no visibility: it is never mirrored (fail closed).
        safe = {name for name, parsed in memories.items() if parsed.is_safe}
        public = {name: data for name, data in files.items() if name in safe}
        public[INDEX_NAME] = render_index(memories, mirror=True)
    known = {id(data): (data, root.hashes[name]) for root in (pre.harness, pre.public)
             for name, data in root.files.items() if name in root.hashes}
    return PostState(harness=harness, public=public, memories=memories, operations=list(operations),
                     mirrored=pre.mirrored, known=known)


def changed_files(pre: RootState, post: dict[str, bytes],
                  digest: Callable[[bytes], str] = sha256_bytes) -> list[tuple[str, bytes | None, str | None]]:
    """(name, new bytes or None for delete, pre-hash or None) for every file that differs."""
    out: list[tuple[str, bytes | None, str | None]] = []
    for name in sorted(set(pre.hashes) | set(post)):
        before = pre.hashes.get(name)
        data = post.get(name)
        if data is None:
            out.append((name, None, before))
        elif before != digest(data):
            out.append((name, data, before))
    return out
