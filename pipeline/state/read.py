"""Reading the state: both roots under the lock, or the private store alone, with parsed memories."""

from __future__ import annotations

import operator
from functools import partial

from ..errors import InputRejected
from ..paths import Layout
from ..store.files import size_of
from ..store.memory import INDEX_NAME, TYPES, VISIBILITIES, Memory, parse_memory
from ..store.state import Limits, RootState, read_root
from ..store.statecache import StateCache, cache_for
from ..store.stored import Broken, broken_file, stored_memories
from .model import PreState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def read_pre(layout: Layout, limits: Limits) -> PreState:
    cache = cache_for(layout.project_home)
    harness = read_root(layout.harness, limits, cache=cache)
    public = read_root(layout.mirror, limits, cache=cache, hold=True) if layout.mirror is not None \
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
    if not memory.extra and not memory.evidence and b"\r" not in data and data.endswith(encoded):
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
