"""What a process knows of a post-state it proved: the files with every hash kept (``PostFiles``), the
proof that it passed the whole post-state check (``Proven``), and how a later post-state was derived from
such a proof (``Derived``), so the next check looks only where that state differs.

A proof outlives its process as a record in the home's state cache (``record_proof``): the digest of
both roots' hash maps of the committed state, the bounds it was checked under, its files that do not
parse, the privacy scan scope it was found clean under, and the identity of the modules whose code
made the check. The next process that reads a state with the same digest (hashes name the bytes) is
holding that very state: ``restored_proof`` rebuilds the proof from the record and the two indexes as
they are on disk, so a CLI write checks only what it changes, as a warm server's does. Any change by
hand, a forget, a recovery or an upgrade changes the digest or the code identity, and the state is
checked in full. The record is advisory like the rest of the cache: one that does not fit is unused."""

from __future__ import annotations

import os

from .files import Files
from .index import HEADER, IndexText, index_text
from .memory import INDEX_NAME
from .state import Limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..receipts.maptext import MapText
    from ..receipts.receipt import HashMaps
    from ..state import PostState, PreState
    from .memory import Memory
    from .statecache import StateCache


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


# The last post-state proven in this process (a long-lived one writes from it next).
_PROVEN: list[Proven] = []


def proof_for(pre: PreState) -> Proven | None:
    """The proof that ``pre`` passed the post-state check, when this process holds one."""
    if _PROVEN and _PROVEN[0].holds_for(pre):
        return _PROVEN[0]
    return None


def keep_proof(post: PostState, limits: Limits, as_derived: bool | None = None) -> None:
    """Record that ``post`` passed the whole post-state check under ``limits`` (and, when ``post.clean``
    is set, the privacy scan): the next state derived from it is checked where it differs.

    ``as_derived``: whether the check just made found ``post`` still exactly as derived (None: look)."""
    derived = post.derived
    if as_derived is None:
        as_derived = derived is not None and derived.holds_for(post)
    if derived is not None and as_derived:
        # Files that do not parse: a touched name was parsed or deleted, so it is not one any more.
        _PROVEN[:] = [Proven(post, post.hash_maps(), limits, derived.indexes,
                             derived.proof.broken.difference(derived.touched), derived)]
        return
    indexes = (index_text(post.memories, mirror=False),
               index_text(post.memories, mirror=True) if post.mirrored else None)
    if post.harness.get(INDEX_NAME) != indexes[0].data or \
            (indexes[1] is not None and post.public.get(INDEX_NAME) != indexes[1].data):
        _PROVEN.clear()
        return
    broken = frozenset(post.harness.keys() - post.memories.keys() - {INDEX_NAME})
    _PROVEN[:] = [Proven(post, post.hash_maps(), limits, indexes, broken)]


def forget_proofs() -> None:
    _PROVEN.clear()


PROOF_VERSION = 1
# The modules whose code decides the post-state check, the files it holds to the bounds and those that
# do not parse, and the indexes it compares against.
_CHECKED_BY = ("files.py", "index.py", "memory.py", "proven.py", "state.py", "stored.py",
               os.path.join("..", "mirror", "guard.py"), os.path.join("..", "state.py"))


def _code() -> list[Any]:
    from .filecache import identity

    here = os.path.dirname(os.path.abspath(__file__))
    return [identity(os.path.join(here, name)) for name in _CHECKED_BY]


def proven_maps(maps: HashMaps) -> Proven | None:
    """This process's proof of the state whose hash maps are ``maps``, when it holds one."""
    if _PROVEN and _PROVEN[0].harness == maps.get("harness") and _PROVEN[0].public == maps.get("public"):
        return _PROVEN[0]
    return None


def maps_digest(texts: MapText, maps: HashMaps) -> str:
    """The digest a proof record binds: of both roots' hash maps, through the run's own encodings."""
    return texts.digest({"maps": maps}, keys=("maps",))


def record_proof(cache: StateCache, proof: Proven, maps_digest: str) -> None:
    """Keep in ``cache`` that the state whose hash maps have ``maps_digest`` passed the whole check."""
    limits = proof.limits
    cache.put_proof([PROOF_VERSION, maps_digest, [limits.max_file_bytes, limits.max_files, limits.index_lines,
                                                  limits.index_bytes], sorted(proof.broken), proof.mirrored,
                     proof.clean, _code()])


def restored_proof(pre: PreState, maps_digest: str) -> Proven | None:
    """The proof of ``pre`` kept by an earlier process (its hash maps have ``maps_digest``), or None."""
    record = pre.cache.proof if pre.cache is not None else None
    if type(record) is not list or len(record) != 7 or record[0] != PROOF_VERSION or record[1] != maps_digest:
        return None
    _version, _digest, bounds, broken, mirrored, clean, code = record
    if mirrored is not pre.mirrored or broken != sorted(pre.broken) or not (clean is None or type(clean) is str) \
            or type(bounds) is not list or len(bounds) != 4 or set(map(type, bounds)) != {int}:
        return None
    if code != _code():
        return None  # another version of the code made the check
    own = _index_on_disk(pre.harness.files, pre.memories, mirror=False)
    mirror = _index_on_disk(pre.public.files, pre.memories, mirror=True) if pre.mirrored else None
    if own is None or (pre.mirrored and mirror is None):
        return None
    proof = Proven.__new__(Proven)
    proof.harness, proof.public = dict(pre.harness.hashes), dict(pre.public.hashes)
    proof.memories = dict(pre.memories)
    proof.ids = list(map(id, proof.memories.values()))
    proof.broken = frozenset(pre.broken)
    proof.mirrored = pre.mirrored
    proof.limits = Limits(*bounds)
    proof.clean = clean
    proof.indexes = (own, mirror)
    _PROVEN[:] = [proof]
    return proof


def _index_on_disk(files: Files, memories: dict[str, Memory], *, mirror: bool) -> IndexText | None:
    """The index in ``files`` as an ``IndexText`` of ``memories``: its lines taken from its bytes, which
    the proof says are the rendering of exactly these memories (None when they cannot be)."""
    if INDEX_NAME not in files:
        return None
    data = files[INDEX_NAME]
    names = [name for name in sorted(memories) if not mirror or memories[name].is_safe]
    head = HEADER.encode("ascii")
    if not data.startswith(head):
        return None
    try:
        body = data[len(head):].decode("utf-8")
    except UnicodeDecodeError:
        return None
    # The text is "\n" + the lines joined by "\n" + "\n"; a "\n" byte is never inside a UTF-8 sequence,
    # so the bytes split where the text does, and each line's bytes are its encoding (as ``after`` wants).
    lines = body[1:-1].split("\n") if names else []
    encoded = data[len(head) + 1:-1].split(b"\n") if names else []
    if len(lines) != len(names) or len(encoded) != len(names):
        return None
    index = IndexText(mirror, names, dict(zip(names, lines, strict=True)), dict(zip(names, encoded, strict=True)))
    return index if index.data == data else None  # joined again, it is the file byte for byte
