"""The state model every transaction shares: pre-state read from disk, operations, the post-state."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, MutableMapping
from functools import partial

from .errors import InputRejected
from .frozen import FrozenValue
from .fsutil import sha256_bytes
from .paths import Layout
from .receipts.receipt import HashMaps
from .store.files import Files, known_digest, size_of
from .store.index import render_index
from .store.memory import INDEX_NAME, TYPES, VISIBILITIES, Memory, parse_memory
from .store.proven import Derived, PostFiles, Proven, proof_for, restored_proof
from .store.state import Limits, RootState, read_root
from .store.statecache import StateCache, cache_for
from .store.stored import Broken, broken_file, stored_memories

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

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


if TYPE_CHECKING:
    class Vouch(Protocol):
        def others_since(self, pre: PreState, ours: set[tuple[str, str]]) -> bool: ...

        def read_back(self, maps: dict[str, dict[str, str]]) -> None: ...


class PreState:
    """Both roots as read under the lock, and the parsed private memories."""

    __slots__ = ("harness", "public", "memories", "mirrored", "cache", "broken", "vouched")
    harness: RootState
    public: RootState
    memories: dict[str, Memory]
    mirrored: bool
    cache: StateCache | None  # where values derived from these files may be kept
    # Private-store files that do not parse: no operation touches them and the mirror never holds them.
    broken: dict[str, Broken]
    # What tells whether anyone else changed a store file since this state was read (a kernel watch
    # held by a long-lived process); None: only reading the files can tell.
    vouched: Vouch | None

    def __init__(self, harness: RootState, public: RootState, memories: dict[str, Memory],
                 mirrored: bool = True, cache: StateCache | None = None,
                 broken: dict[str, Broken] | None = None) -> None:
        self.harness = harness
        self.public = public
        self.memories = memories
        self.mirrored = mirrored
        self.cache = cache
        self.broken = {} if broken is None else broken
        self.vouched = None

    def __repr__(self) -> str:
        return (f"PreState(harness={self.harness!r}, public={self.public!r}, memories={self.memories!r}, "
                f"mirrored={self.mirrored!r})")

    def hash_maps(self) -> HashMaps:
        return {"harness": dict(self.harness.hashes), "public": dict(self.public.hashes)}


class PostState:
    """Both roots' files after the operations, and the resulting private memories."""

    __slots__ = ("harness", "public", "memories", "operations", "mirrored", "known", "derived", "clean")
    harness: MutableMapping[str, bytes]
    public: MutableMapping[str, bytes]
    memories: dict[str, Memory]
    operations: list[Operation]
    mirrored: bool
    # Digests already known for bytes objects, by id (compute_post fills it from the pre-state, whose
    # unchanged files it shares): those need not be hashed again. Each entry holds its object, so the
    # id cannot be reused by other bytes meanwhile.
    known: dict[int, tuple[bytes, str]]
    # How this state was derived from a proven one (``compute_post``), or None: checked in full.
    derived: Derived | None
    # The scan scope (rule set and scanner) under which every mirror file was found clean, once it was.
    clean: str | None

    def __init__(self, harness: MutableMapping[str, bytes], public: MutableMapping[str, bytes],
                 memories: dict[str, Memory],
                 operations: list[Operation] | None = None, mirrored: bool = True,
                 known: dict[int, tuple[bytes, str]] | None = None, derived: Derived | None = None) -> None:
        self.harness = harness
        self.public = public
        self.memories = memories
        self.operations = [] if operations is None else operations
        self.mirrored = mirrored
        self.known = {} if known is None else known
        self.derived = derived
        self.clean = None

    def __repr__(self) -> str:
        return (f"PostState(harness={self.harness!r}, public={self.public!r}, memories={self.memories!r}, "
                f"operations={self.operations!r}, mirrored={self.mirrored!r})")

    def hash_maps(self) -> HashMaps:
        return {"harness": self._digests(self.harness), "public": self._digests(self.public)}

    def _digests(self, files: Mapping[str, bytes]) -> dict[str, str]:
        if isinstance(files, PostFiles):
            if files.hashes is None:
                # Hashed as the files are now, and kept until any of them is assigned again.
                files.hashes = self._hashed(files)
            return dict(files.hashes)  # a copy in C (documents sort their keys)
        return self._hashed(files)

    def _hashed(self, files: Mapping[str, bytes]) -> dict[str, str]:
        known = files.known_digests() if isinstance(files, Files) else {}
        return {n: known[n] if n in known else self.digest(files[n]) for n in sorted(files)}

    def digest_of(self, files: Mapping[str, bytes], name: str) -> str:
        """A file's hash, without reading or hashing it when the state it came from knows it."""
        return known_digest(files, name) or self.digest(files[name])

    def digest(self, data: bytes) -> str:
        hit = self.known.get(id(data))
        if hit is not None and hit[0] is data:
            return hit[1]
        digest = sha256_bytes(data)
        self.known[id(data)] = (data, digest)
        return digest


def read_pre(layout: Layout, limits: Limits) -> PreState:
    cache = cache_for(layout.project_home)
    harness = read_root(layout.harness, limits, cache=cache)
    public = read_root(layout.mirror, limits, cache=cache) if layout.mirror is not None \
        else RootState(layout.project_home)
    memories, broken = parsed_root(harness, cache)
    return PreState(harness=harness, public=public, memories=memories, mirrored=layout.mirror is not None,
                    cache=cache, broken=broken)


def current_memories(layout: Layout, limits: Limits) -> dict[str, Memory]:
    """The private store's memories as they are now, for a command that only reads them (list, an
    agent's memory_list): through the home's state cache, as a write reads them, so an unchanged file
    is stat-ed, not read, hashed and parsed again. Nothing here takes the lock or changes the store."""
    return read_private(layout, limits)[1]


def read_private(layout: Layout, limits: Limits) -> tuple[RootState, dict[str, Memory], dict[str, Broken]]:
    """The private store alone, as ``read_pre`` reads it, with its parsed memories and broken files:
    for a command about one memory (show, edit) that has no use for the mirror's files."""
    cache = cache_for(layout.project_home)
    harness = read_root(layout.harness, limits, cache=cache)
    memories, broken = parsed_root(harness, cache)
    return harness, memories, broken


def parsed_root(state: RootState, cache: StateCache | None = None) -> tuple[dict[str, Memory], dict[str, Broken]]:
    """The memory files of a root, parsed (each distinct file once per process, and, with ``cache``,
    once until it changes: its fields come from the cache and its body is read when asked for), and
    the files that do not parse, each with its problem and fix."""
    names = [name for name in state.files if name != INDEX_NAME]
    kept = _from_cache(names, state, cache) if cache is not None else {}
    memories: dict[str, Memory] = {}
    broken: dict[str, Broken] = {}
    for name in names:
        memory = kept.get(name)
        if memory is not None:
            memories[name] = memory
            continue
        try:
            memories[name] = _parsed(name, state, cache)
        except InputRejected as exc:
            broken[name] = broken_file(state.path, name, exc)
    return memories, broken


_PARSED: dict[tuple[str, str], Memory] = {}
_PARSED_MAX = 20_000


def _parsed(name: str, state: RootState, cache: StateCache | None) -> Memory:
    """Parse once per (name, content hash): a long-lived process (the MCP server) re-reads the store
    on every write, and unchanged files need not be parsed again. Memory values are immutable."""
    key = (name, state.hashes[name])
    memory = _PARSED.get(key)
    if memory is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        data = state.files[name]
        memory = _PARSED[key] = parse_memory(data, name)
        if cache is not None:
            _keep_fields(cache, name, key[1], data, memory)
    return memory


def _keep_fields(cache: StateCache, name: str, digest: str, data: bytes, memory: Memory) -> None:
    """Keep the fields of a file the canonical shape describes exactly (its body is the file's tail)."""
    encoded = memory.body.encode("utf-8")
    if not memory.extra and b"\r" not in data and data.endswith(encoded):
        cache.put_fields(name, (digest, memory.name, memory.description, memory.type, memory.visibility,
                                memory.created, memory.modified, memory.expires, len(data) - len(encoded)))


_TYPES, _VISIBILITIES = frozenset(TYPES), frozenset(VISIBILITIES)
_TEXT, _OPTIONAL = {str}, {str, type(None)}


def _from_cache(names: list[str], state: RootState, cache: StateCache) -> dict[str, Memory]:
    """The memories whose fields were parsed from these very bytes before (bound to their hash), each
    with its body to be read at the offset recorded. Their shapes are checked column by column (in C),
    and a column that is not what this code writes is not used at all."""
    rows, hashes = cache.memory, state.hashes
    hits = [name for name in names if (row := rows.get(name)) is not None and row[0] == hashes[name]]
    if not hits:
        return {}
    columns = list(zip(*map(rows.__getitem__, hits), strict=True))[1:]
    title, description, mtype, visibility, created, modified, expires, offset = columns
    files = state.files
    if not (set(map(type, title)) <= _TEXT and set(map(type, description)) <= _TEXT
            and set(map(type, mtype)) <= _TEXT and set(mtype) <= _TYPES
            and set(map(type, visibility)) <= _TEXT and set(visibility) <= _VISIBILITIES
            and set(map(type, created)) <= _OPTIONAL and set(map(type, modified)) <= _OPTIONAL
            and set(map(type, expires)) <= _OPTIONAL and set(map(type, offset)) <= {int}
            and min(offset) >= 0 and all(map(operator.le, offset, _sizes(state, hits)))):
        return {}
    return dict(zip(hits, stored_memories(files, hits, columns), strict=True))


def _sizes(state: RootState, names: list[str]) -> Any:
    """The files' sizes: from their identities as read, else asked of the files one by one."""
    identities = state.identities
    if identities.keys() >= set(names):
        return map(operator.itemgetter(2), map(identities.__getitem__, names))
    return map(partial(size_of, state.files), names)


def compute_post(pre: PreState, operations: list[Operation], maps_digest: str | None = None) -> PostState:
    """Apply operations to the harness, then derive the whole mirror and both indexes from it.

    From a pre-state this process proved (see ``Proven``), or one an earlier process proved whose hash
    maps have ``maps_digest`` (``restored_proof``), the mirror and indexes are derived where the
    operations change them, and every hash is carried along; the result is the same state."""
    proof = proof_for(pre)
    if proof is None and maps_digest is not None:
        proof = restored_proof(pre, maps_digest)
    if proof is not None and (proof.indexes[1] is not None) == pre.mirrored:
        return _derived_post(pre, operations, proof)
    files = pre.harness.memories()
    memories = dict(pre.memories)
    for op in operations:
        if op.kind == "delete":
            if op.name in files:
                del files[op.name]  # not pop(): that would read the bytes it returns
            memories.pop(op.name, None)
            continue
        memories[op.name], files[op.name] = _parsed_op(op)
    harness = PostFiles(files)
    harness[INDEX_NAME] = render_index(memories, mirror=False)
    public = PostFiles(Files())
    if pre.mirrored:
        # A file that does not parse has no visibility: it is never mirrored (fail closed).
        public = PostFiles(files.subset(name for name in files if name in memories and memories[name].is_safe))
        public[INDEX_NAME] = render_index(memories, mirror=True)
    known = {id(data): (data, root.hashes[name]) for root in (pre.harness, pre.public)
             for name, data in root.files.loaded() if name in root.hashes}
    return PostState(harness=harness, public=public, memories=memories, operations=list(operations),
                     mirrored=pre.mirrored, known=known)


def _parsed_op(op: Operation) -> tuple[Memory, bytes]:
    """The memory a create or rewrite writes, and its bytes; refused unless it agrees with ``op``."""
    if op.content is None:
        raise InputRejected(f"operation {op.kind} {op.name} has no content", code="plan.content")
    memory = parse_memory(op.content, op.name)
    if op.classification is not None and memory.visibility != op.classification:
        raise InputRejected(
            f"{op.name}: content says visibility {memory.visibility} but the operation says "
            f"{op.classification}",
            code="plan.content-disagrees",
        )
    return memory, op.content


def _derived_post(pre: PreState, operations: list[Operation], proof: Proven) -> PostState:
    """``compute_post`` from a proven pre-state: its mirror holds exactly its safe memories, so only
    the names the operations touch can change there; hashes and index lines are carried over."""
    harness = PostFiles(pre.harness.files, pre.harness.hashes)
    public = PostFiles(pre.public.files, pre.public.hashes) if pre.mirrored else PostFiles(Files(), {})
    memories = dict(pre.memories)
    touched: list[str] = []
    digests: dict[str, str] = {}
    for op in operations:
        if op.name not in digests:
            touched.append(op.name)
        if op.kind == "delete":
            if op.name in harness:
                harness.drop(op.name)
            memories.pop(op.name, None)
            digests[op.name] = ""
            continue
        memory, content = _parsed_op(op)
        digests[op.name] = digest = sha256_bytes(content)
        harness.put(op.name, content, digest)
        memories[op.name] = memory
    for name in touched:
        now = memories.get(name)
        if now is not None and now.is_safe and pre.mirrored:
            public.put(name, harness[name], digests[name])
        elif name in public:
            public.drop(name)
    own, mirror = proof.indexes
    indexes = (own.after(memories, touched), mirror.after(memories, touched) if mirror is not None else None)
    harness.put(INDEX_NAME, indexes[0].data, indexes[0].digest())
    if indexes[1] is not None:
        public.put(INDEX_NAME, indexes[1].data, indexes[1].digest())
    derived = Derived(proof, touched, memories, indexes)
    return PostState(harness=harness, public=public, memories=memories,
                     operations=list(operations), mirrored=pre.mirrored, derived=derived)


def changed_files(pre: RootState, post: Mapping[str, bytes],
                  digest: Callable[[bytes], str] = sha256_bytes) -> list[tuple[str, bytes | None, str | None]]:
    """(name, new bytes or None for delete, pre-hash or None) for every file that differs. A file
    whose hash is known unchanged is not read."""
    out: list[tuple[str, bytes | None, str | None]] = []
    if isinstance(post, PostFiles) and post.hashes is not None:
        # Every hash known: the names that differ are a set operation in C.
        before_map = pre.hashes
        for name in sorted({name for name, _ in before_map.items() ^ post.hashes.items()}):
            out.append((name, post[name] if name in post else None, before_map.get(name)))
        return out
    digests = post.known_digests() if isinstance(post, Files) else {}
    for name in sorted(pre.hashes.keys() | post.keys()):
        before = pre.hashes.get(name)
        if name not in post:
            out.append((name, None, before))
            continue
        known = digests.get(name)
        if known is not None and known == before:
            continue
        data = post[name]
        if before != (known or digest(data)):
            out.append((name, data, before))
    return out
