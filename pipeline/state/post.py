"""The post-state: operations applied to the private store, the mirror and both indexes derived."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import InputRejected
from ..fsutil import sha256_bytes
from ..store.files import Files
from ..store.index import mirror_index, mirror_index_bytes, render_index
from ..store.memory import INDEX_NAME, Memory, parse_memory
from ..store.state import RootState
from .model import NOTHING_KEPT, Derived, Kept, Operation, PostFiles, PostState, PreState, Proven
from .proven import proof_for, restored_proof


def compute_post(pre: PreState, operations: list[Operation], maps_digest: str | None = None,
                 kept: Kept = NOTHING_KEPT) -> PostState:
    """Apply operations to the harness, then derive the whole mirror and both indexes from it; the mirror
    files in ``kept`` stay as they are (held back, in conflict) and keep their lines in its index.

    From a pre-state this process proved (see ``Proven``), or one an earlier process proved whose hash
    maps have ``maps_digest`` (``restored_proof``), the mirror and indexes are derived where the
    operations change them, and every hash is carried along; the result is the same state."""
    if not kept:
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
        public = PostFiles(files.subset(name for name in files if name in memories and memories[name].is_safe
                                        and name not in kept.files))
        for name, data in sorted(kept.files.items()):
            if data is not None:
                public[name] = data
        index = mirror_index_bytes(mirror_index(memories, kept.lines, kept.files.keys()))
        if index is not None:
            public[INDEX_NAME] = index
    known = {id(data): (data, root.hashes[name]) for root in (pre.harness, pre.public)
             for name, data in root.files.loaded() if name in root.hashes}
    return PostState(harness=harness, public=public, memories=memories, operations=list(operations),
                     mirrored=pre.mirrored, known=known, kept=kept)


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
    if indexes[1] is not None and mirror_index_bytes(indexes[1]) is not None:
        public.put(INDEX_NAME, indexes[1].data, indexes[1].digest())
    elif INDEX_NAME in public:
        public.drop(INDEX_NAME)
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
