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

from ..store.files import Files
from ..store.index import HEADER, IndexText, index_text, mirror_index_bytes
from ..store.memory import INDEX_NAME
from ..store.state import Limits
from .model import PostState, PreState, Proven

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store.memory import Memory
    from ..store.statecache import StateCache
    from .maps import HashMaps


_PROVEN: list[Proven] = []


def proof_for(pre: PreState) -> Proven | None:
    """The proof that ``pre`` passed the post-state check, when this process holds one."""
    if _PROVEN and _PROVEN[0].holds_for(pre):
        return _PROVEN[0]
    return None


def keep_proof(post: PostState, limits: Limits, as_derived: bool | None = None) -> None:
    """Record that ``post`` passed the whole post-state check under ``limits`` (and, when ``post.clean``
    is set, the privacy scan): the next state derived from it is checked where it differs.

    ``as_derived``: whether the check just made found ``post`` still exactly as derived (None: look).
    A state whose mirror keeps a teammate's files is not kept: a derivation assumes the mirror holds the
    store's safe memories and nothing else."""
    if post.kept:
        _PROVEN.clear()
        return
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
            (indexes[1] is not None and post.public.get(INDEX_NAME) != mirror_index_bytes(indexes[1])):
        _PROVEN.clear()
        return
    broken = frozenset(post.harness.keys() - post.memories.keys() - {INDEX_NAME})
    _PROVEN[:] = [Proven(post, post.hash_maps(), limits, indexes, broken)]


def forget_proofs() -> None:
    _PROVEN.clear()


PROOF_VERSION = 1
# The modules whose code decides the post-state check, the files it holds to the bounds and those that
# do not parse, and the indexes it compares against.
_CHECKED_BY = (*(os.path.join("..", "store", name) for name in ("files.py", "index.py", "memory.py", "state.py",
                                                                 "stored.py")),
               "proven.py", "model.py", os.path.join("..", "mirror", "guard.py"))


def _code() -> list[Any]:
    from ..store.filecache import identity

    here = os.path.dirname(os.path.abspath(__file__))
    return [identity(os.path.join(here, name)) for name in _CHECKED_BY]


def proven_maps(maps: HashMaps) -> Proven | None:
    """This process's proof of the state whose hash maps are ``maps``, when it holds one."""
    if _PROVEN and _PROVEN[0].harness == maps.get("harness") and _PROVEN[0].public == maps.get("public"):
        return _PROVEN[0]
    return None


def record_proof(cache: StateCache, proof: Proven, maps_digest: str) -> None:
    """Keep in ``cache`` that the state whose hash maps have ``maps_digest`` passed the whole check."""
    limits = proof.limits
    cache.put_proof([PROOF_VERSION, maps_digest, [limits.max_file_bytes, limits.max_files, limits.index_lines,
                                                  limits.index_bytes, limits.mirror_bytes], sorted(proof.broken),
                     proof.mirrored, proof.clean, _code()])


def restored_proof(pre: PreState, maps_digest: str) -> Proven | None:
    """The proof of ``pre`` kept by an earlier process (its hash maps have ``maps_digest``), or None."""
    record = pre.cache.proof if pre.cache is not None else None
    if type(record) is not list or len(record) != 7 or record[0] != PROOF_VERSION or record[1] != maps_digest:
        return None
    _version, _digest, bounds, broken, mirrored, clean, code = record
    if mirrored is not pre.mirrored or broken != sorted(pre.broken) or not (clean is None or type(clean) is str) \
            or type(bounds) is not list or len(bounds) != 5 or set(map(type, bounds)) != {int}:
        return None
    if code != _code():
        return None  # another version of the code made the check
    own = _index_on_disk(pre.harness.files, pre.memories, mirror=False)
    mirror = None
    if pre.mirrored:
        empty = INDEX_NAME not in pre.public.files and not any(m.is_safe for m in pre.memories.values())
        # A mirror without a memory file has no index on disk: its (empty) rendering stands for it.
        mirror = index_text({}, mirror=True) if empty else _index_on_disk(pre.public.files, pre.memories, mirror=True)
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
