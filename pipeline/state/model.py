"""The state model's values: operations, the pre-state read under the lock, the post-state, and proofs.

A ``Proven`` state passed the whole post-state check; a ``Derived`` post-state came from one by a few
operations, so the next check looks only where it differs (``proven.py`` keeps the proofs).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

from ..frozen import Frozen, FrozenValue
from ..fsutil import sha256_bytes
from ..store.files import Files, known_digest
from ..store.index import IndexText
from ..store.state import Limits, RootState
from ..store.statecache import StateCache
from ..store.stored import Broken
from .maps import HashMaps

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from ..store.memory import Memory

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


class Kept(Frozen):
    """Mirror files a transaction leaves exactly as they are: a teammate's file held back or in conflict
    (see ``mirror.sync``). ``files``: each name's bytes as the pre-state read them, or None where the
    mirror has no file and must stay without one (a teammate deleted it, the private copy changed);
    ``lines``: each kept file's line in the mirror index (none for a name without a file)."""

    __slots__ = ("files", "lines")
    files: dict[str, bytes | None]
    lines: dict[str, str]

    def __init__(self, files: dict[str, bytes | None] | None = None, lines: dict[str, str] | None = None) -> None:
        self._set(files={} if files is None else files, lines={} if lines is None else lines)

    def __bool__(self) -> bool:
        return bool(self.files)


NOTHING_KEPT = Kept()


class PostState:
    """Both roots' files after the operations, and the resulting private memories."""

    __slots__ = ("harness", "public", "memories", "operations", "mirrored", "known", "derived", "clean", "kept")
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
    # Mirror files left as they are (held, in conflict): never written, never scanned as this write's.
    kept: Kept

    def __init__(self, harness: MutableMapping[str, bytes], public: MutableMapping[str, bytes],
                 memories: dict[str, Memory],
                 operations: list[Operation] | None = None, mirrored: bool = True,
                 known: dict[int, tuple[bytes, str]] | None = None, derived: Derived | None = None,
                 kept: Kept = NOTHING_KEPT) -> None:
        self.harness = harness
        self.public = public
        self.memories = memories
        self.operations = [] if operations is None else operations
        self.mirrored = mirrored
        self.known = {} if known is None else known
        self.derived = derived
        self.clean = None
        self.kept = kept

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


class PostFiles(Files):
    """A post-state root's files with every file's hash, once known, kept as ``put`` and ``drop``
    change them (a state derived from a proven one knows them all from the start): hash maps and
    changed files are then a copy and set operations in C, not a hash or a lookup per file. Any
    other change (``files[name] = data``) forgets the hashes, so they are never served for bytes
    they do not describe."""

    __slots__ = ("hashes",)
    hashes: dict[str, str] | None

    def __init__(self, base: Files, hashes: dict[str, str] | None = None) -> None:
        super().__init__()
        self._entries = base._entries.copy()
        self._digests = base._digests.copy()
        self.hashes = None if hashes is None else dict(hashes)

    def put(self, name: str, data: bytes, digest: str) -> None:
        Files.__setitem__(self, name, data)
        if self.hashes is not None:
            self.hashes[name] = digest

    def drop(self, name: str) -> None:
        Files.__delitem__(self, name)
        if self.hashes is not None:
            del self.hashes[name]

    def __setitem__(self, name: str, data: bytes) -> None:
        self.hashes = None
        super().__setitem__(name, data)

    def __delitem__(self, name: str) -> None:
        self.hashes = None
        super().__delitem__(name)

    def digest_of(self, name: str) -> str | None:
        if self.hashes is not None:
            return self.hashes.get(name)
        return super().digest_of(name)

    def known_digests(self) -> dict[str, str]:
        return dict(self.hashes) if self.hashes is not None else super().known_digests()


class Proven:
    """A post-state that passed the whole post-state check: both roots' hash maps, its memories (the
    very objects), the bounds it was held to, the scan scope its mirror was found clean under, and
    its two indexes as rendered.

    A pre-state with the same hash maps and the same memory objects is that state (hashes name the
    bytes, and a memory is the parse of its file): what was proven of it holds, and the next post-state
    needs checking only where the operations change it. Memories are compared by identity: a pre-state
    matches only when it holds this process's very objects (a warm server's kept state, or a re-read
    that found every file as proven and was handed the same parsed memories); anything else is
    checked in full.
    """

    __slots__ = ("harness", "public", "memories", "ids", "broken", "mirrored", "limits", "clean", "indexes")

    def __init__(self, post: PostState, maps: HashMaps, limits: Limits,
                 indexes: tuple[IndexText, IndexText | None], broken: frozenset[str],
                 derived: Derived | None = None) -> None:
        self.harness, self.public = maps["harness"], maps["public"]
        if derived is not None:
            # ``post`` was just found to hold exactly these (the derivation's own copy, never changed).
            self.memories, self.ids = derived.memories, derived.ids
        else:
            self.memories = dict(post.memories)  # held: the ids below stay theirs
            self.ids = list(map(id, self.memories.values()))
        self.broken = broken
        self.mirrored = post.mirrored
        self.limits = limits
        self.clean = post.clean
        self.indexes = indexes

    def __repr__(self) -> str:
        return f"Proven(files={len(self.harness)}+{len(self.public)}, clean={self.clean!r})"

    def holds_for(self, pre: PreState) -> bool:
        """Whether ``pre`` is this very state (compared in C: maps, names, memory identities)."""
        memories = pre.memories
        return (pre.mirrored == self.mirrored and len(memories) == len(self.memories)
                and pre.harness.hashes == self.harness and pre.public.hashes == self.public
                and memories.keys() == self.memories.keys() and list(map(id, memories.values())) == self.ids
                and pre.broken.keys() == self.broken)


class Derived:
    """How a post-state came from a proven pre-state: the proof, the names the operations touched,
    the memories as derived (to tell a later change of the mapping) and both indexes as rendered."""

    __slots__ = ("proof", "touched", "memories", "ids", "indexes")

    def __init__(self, proof: Proven, touched: list[str], memories: dict[str, Memory],
                 indexes: tuple[IndexText, IndexText | None]) -> None:
        self.proof = proof
        self.touched = touched
        self.memories = dict(memories)
        self.ids = list(map(id, self.memories.values()))
        self.indexes = indexes

    def __repr__(self) -> str:
        return f"Derived(touched={self.touched!r})"

    def holds_for(self, post: PostState) -> bool:
        """Whether ``post`` is still exactly what was derived (nothing assigned to it since)."""
        memories = post.memories
        return (isinstance(post.harness, PostFiles) and post.harness.hashes is not None
                and isinstance(post.public, PostFiles) and post.public.hashes is not None
                and memories.keys() == self.memories.keys() and list(map(id, memories.values())) == self.ids)
