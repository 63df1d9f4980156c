"""Reading a root through the state cache: a vouched file is one whose identity is the one entered, and
every check the whole scan makes still holds for the files the cache answers for."""

from __future__ import annotations

import hashlib
import marshal
import os
import time
from pathlib import Path

import pytest

from pipeline.errors import InputRejected, UnsafePath
from pipeline.store import statecache
from pipeline.store.cachefile import MAGIC, crc
from pipeline.store.files import Stored
from pipeline.store.state import Limits, read_root
from pipeline.store.statecache import VERSION, StateCache, _load

_MEMORY = b"---\nname: a\ndescription: the a note\ntype: project\nvisibility: private\n---\nbody of a\n"


@pytest.fixture(autouse=True)
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enter every file at once (no two-second wait): the cache then answers for every unchanged file."""
    monkeypatch.setattr(statecache, "SETTLED_NS", -(1 << 62))


def _store(tmp_path: Path, count: int = 5) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    for i in range(count):
        (root / f"project_n{i}.md").write_bytes(_MEMORY.replace(b"body of a", f"body {i}".encode()))
    return root


def _entered(root: Path) -> StateCache:
    cache = StateCache(None)
    read_root(root, Limits(), cache=cache)
    assert set(cache.roots[str(root)]) == {p.name for p in root.iterdir()}
    return cache


def test_vouched_files_are_not_read_and_carry_the_entered_hashes(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    state = read_root(root, Limits(), cache=cache)
    assert list(state.files.loaded()) == []
    assert all(type(state.files._entries[name]) is Stored for name in state.files)
    assert state.hashes == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir())}
    assert list(state.hashes) == sorted(state.hashes)
    assert state.files["project_n3.md"] == (root / "project_n3.md").read_bytes()


def test_a_rewrite_in_place_keeping_size_and_mtime_is_read_again(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    path = root / "project_n2.md"
    before = path.stat()
    time.sleep(0.02)  # past one timestamp tick: the ctime moves
    with open(path, "r+b") as fh:
        fh.write(b"---\nname: A")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    state = read_root(root, Limits(), cache=cache)
    assert state.hashes["project_n2.md"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert dict(state.files.loaded()) == {"project_n2.md": path.read_bytes()}


def test_a_forgotten_file_leaves_the_state_and_the_entries(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    (root / "project_n1.md").unlink()
    state = read_root(root, Limits(), cache=cache)
    assert "project_n1.md" not in state.hashes and "project_n1.md" not in state.files
    assert "project_n1.md" not in cache.roots[str(root)] and "project_n1.md" not in cache.digests[str(root)]


def test_a_vouched_file_replaced_by_a_symlink_is_refused(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    (root / "project_n0.md").unlink()
    (root / "project_n0.md").symlink_to(root / "project_n1.md")
    with pytest.raises(UnsafePath) as caught:
        read_root(root, Limits(), cache=cache)
    assert caught.value.code == "path.symlink"


def test_a_new_file_that_differs_from_a_vouched_one_only_by_case_is_refused(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    (root / "Project_n0.md").write_bytes(_MEMORY)
    with pytest.raises(InputRejected) as caught:
        read_root(root, Limits(), cache=cache)
    assert caught.value.code == "store.case-collision"


def test_bounds_lowered_below_a_vouched_file_refuse_it_as_without_a_cache(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    small = Limits(max_file_bytes=16)
    with pytest.raises(InputRejected) as without:
        read_root(root, small)
    with pytest.raises(InputRejected) as vouched:
        read_root(root, small, cache=cache)
    assert vouched.value.code == without.value.code
    with pytest.raises(InputRejected) as counted:
        read_root(root, Limits(max_files=4), cache=cache)
    assert counted.value.code == "bounds.file-count"


def test_temps_and_strays_are_reported_beside_vouched_files(tmp_path: Path) -> None:
    root = _store(tmp_path)
    cache = _entered(root)
    (root / ".memfold-tmp-x").write_bytes(b"partial")
    (root / "notes.txt").write_bytes(b"not a memory")
    state = read_root(root, Limits(), cache=cache)
    assert state.temps == [".memfold-tmp-x"] and state.ignored == ["notes.txt"]
    assert len(state.hashes) == 5


def _write_payload(path: Path, payload: object) -> None:
    data = marshal.dumps(payload)
    path.write_bytes(MAGIC + crc(data) + data)


def test_a_checksummed_cache_whose_entries_have_another_shape_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "state.bin"
    good = (VERSION, {"r": {"a.md": (1, 2, 3, 4, 5)}}, {"r": {"a.md": "0" * 64}}, {}, "\n", {}, {})
    _write_payload(path, good)
    assert _load(str(path), (1,)).digests == {"r": {"a.md": "0" * 64}}
    for bad in ((VERSION, {"r": {"a.md": (1, 2, 3, 4, 5)}}, {"r": {"a.md": 7}}, {}, "\n", {}, {}),
                (VERSION, {"r": {"a.md": (1, 2, 3, 4, 5)}}, {"r": {}}, {}, "\n", {}, {}),
                (VERSION, {}, {}, {"a.md": ("x",)}, "\n", {}, {}),
                (VERSION, {}, {}, {}, {"k": ()}, {}, {}),
                (VERSION, {}, {}, {}, "\n", {}, {"scope": {"a.md": 1}}),
                (VERSION + 1, *good[1:])):
        _write_payload(path, bad)
        loaded = _load(str(path), (1,))
        assert loaded.roots == {} and loaded.digests == {} and loaded.memory == {}, bad
    data = marshal.dumps(good)
    path.write_bytes(MAGIC + crc(data) + data[:-3])  # torn
    assert _load(str(path), (1,)).roots == {}


def test_a_privacy_verdict_holds_for_its_rule_set_name_and_content_only(tmp_path: Path) -> None:
    cache = StateCache(str(tmp_path / "cache" / "state.bin"))
    cache.digests = {"r": {"a.md": "1" * 64}}
    cache.roots = {"r": {"a.md": (1, 2, 3, 4, 5)}}
    cache.put("clean", f"{'s' * 64} a.md {'1' * 64}", 1)
    assert cache.get("clean", f"{'s' * 64} a.md {'1' * 64}") == 1
    assert cache.get("clean", f"{'s' * 64} a.md {'2' * 64}") is None  # other bytes
    assert cache.get("clean", f"{'t' * 64} a.md {'1' * 64}") is None  # other rules
    assert cache.get("clean", f"{'s' * 64} b.md {'1' * 64}") is None  # other file
    cache.put("clean", f"{'s' * 64} gone.md {'9' * 64}", 1)  # a content no file holds any more
    cache.flush()
    loaded = _load(str(tmp_path / "cache" / "state.bin"), (1,))
    assert loaded.clean == {"s" * 64: {"a.md": "1" * 64}}, "verdicts of other rule sets and gone contents go"


def test_memories_built_from_cached_fields_equal_the_parsed_ones(tmp_path: Path) -> None:
    import pickle

    from pipeline.state import read as state_model
    from pipeline.store.memory import parse_memory
    from pipeline.store.stored import StoredMemory

    root = _store(tmp_path)
    cache = _entered(root)
    state_model.parsed_root(read_root(root, Limits(), cache=cache), cache)  # parses, keeps the fields
    state_model._PARSED.clear()
    again = read_root(root, Limits(), cache=cache)
    memories, broken = state_model.parsed_root(again, cache)
    assert broken == {} and list(again.files.loaded()) == []  # no file read for the fields
    for name, memory in memories.items():
        parsed = parse_memory((root / name).read_bytes(), name)
        assert type(memory) is StoredMemory and memory == parsed and parsed == memory
        assert memory.body == parsed.body and memory.extra == {} and memory.extra is not parsed.extra
        assert pickle.loads(pickle.dumps(memory)) == parsed
        assert type(memory.with_changes(description="other")) is not StoredMemory
    assert len({id(m.extra) for m in memories.values()}) == len(memories)
