"""The receipt log's head: its digest is always the one of the newest receipt's bytes on disk."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from pipeline.receipts.receipt import (
    RECEIPT_SCHEMA,
    chain_head,
    genesis_digest,
    receipt_digest,
    remember_written,
    schema_issues,
)
from pipeline.resources import load_schema
from pipeline.store.jsontext import dump_json
from pipeline.validation.schema import fast_check


def _receipt(run_id: str, operations: list[Any]) -> dict[str, Any]:
    return {"kind": "memory-consolidation-receipt", "runId": run_id, "operations": operations,
            "worker": {"durationSeconds": 0.125}, "previous": None}


def test_the_head_digest_follows_a_receipt_rewritten_behind_its_back(tmp_path: Path) -> None:
    path = tmp_path / "00000001-20261130T120000Z-0a0b0c0d.json"
    first = _receipt("20261130T120000Z-0a0b0c0d", [])
    path.write_bytes(dump_json(first))
    assert chain_head(tmp_path) == (2, receipt_digest(first))
    tampered = _receipt("20261130T120000Z-0a0b0c0d", [{"name": "x"}])
    path.write_bytes(dump_json(tampered))
    assert chain_head(tmp_path) == (2, receipt_digest(tampered))


def test_a_receipt_remembered_as_written_has_the_digest_a_reader_computes(tmp_path: Path) -> None:
    receipt = _receipt("20261130T120000Z-0a0b0c0e", [{"name": "a", "kind": "create"}])
    data = dump_json(receipt)
    remember_written(receipt, data)
    (tmp_path / "00000007-20261130T120000Z-0a0b0c0e.json").write_bytes(data)
    assert chain_head(tmp_path) == (8, receipt_digest(json.loads(data)))


def test_the_digest_of_a_written_receipt_is_the_one_a_reader_computes_even_from_tuples(tmp_path: Path) -> None:
    receipt = _receipt("20261130T120000Z-0a0b0c0f", [("a", "create")])
    data = dump_json(receipt)
    digest = remember_written(receipt, data)
    (tmp_path / "00000001-20261130T120000Z-0a0b0c0f.json").write_bytes(data)
    assert digest == receipt_digest(json.loads(data)) == genesis_digest(tmp_path)
    assert genesis_digest(tmp_path / "absent") is None


# The schema pre-check: receipts of a large store are validated without jsonschema's per-node cost,
# so it must never accept what jsonschema refuses.

_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False, width=16),
                    st.sampled_from(["", "x", "pre", "post", "safe", "private", "create", "a.md", "MEMORY.md",
                                     "sha256:" + "0" * 64, "0" * 64, "Z" * 64]),
                    st.just([]), st.just({}))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, sub in value.items():
            found += _paths(sub, (*prefix, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found += _paths(sub, (*prefix, i))
    return found


@st.composite
def _mutated(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(value)))
        if not path:
            return draw(_LEAVES)
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "a.md", "b.md", "kind"]))] = draw(_LEAVES)
        elif action == "add" and isinstance(parent, list):
            parent.append(draw(_LEAVES) if not parent else copy.deepcopy(parent[0]))
        else:
            parent[path[-1]] = draw(_LEAVES)
    return value


@pytest.fixture
def real_receipt(env: Env) -> dict[str, Any]:
    assert env.run("add", "project_ports", "-d", "dev server on 8080", "--visibility", "safe").code == 0
    assert env.run("add", "user_editor", "-d", "uses vim", "--visibility", "private").code == 0
    newest = max((env.project_home / "receipts").iterdir())
    return json.loads(newest.read_text())  # type: ignore[no-any-return]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_receipt_pre_check_never_accepts_what_jsonschema_refuses(real_receipt: dict[str, Any],
                                                                    data: st.DataObject) -> None:
    base = real_receipt
    fast = fast_check(RECEIPT_SCHEMA)
    assert fast is not None and fast(base)
    value = data.draw(_mutated(base))
    validator = Draft202012Validator(load_schema(RECEIPT_SCHEMA))
    if fast(value):
        assert validator.is_valid(value), value
    assert (schema_issues(value, "r") == []) == validator.is_valid(value)


def test_a_receipt_of_a_large_store_passes_the_pre_check_without_jsonschema(real_receipt: dict[str, Any]) -> None:
    receipt = real_receipt
    names = {f"project_topic-{i:05d}.md": "sha256:" + f"{i:064x}" for i in range(20_000)}
    receipt["sourceHashes"] = receipt["finalHashes"] = {"harness": names, "public": names}
    fast = fast_check(RECEIPT_SCHEMA)
    assert fast is not None and fast(receipt)
    assert Draft202012Validator(load_schema(RECEIPT_SCHEMA)).is_valid(receipt)
    bad = copy.deepcopy(receipt)
    bad["finalHashes"]["public"]["not a memory name.txt"] = "sha256:" + "0" * 64
    issues = schema_issues(bad, "r")
    assert not fast(bad) and issues and {i.code for i in issues} == {"receipt.schema"}


def test_a_receipt_digest_kept_by_file_identity_is_not_served_after_an_in_place_edit(tmp_path: Path) -> None:
    import os
    import time

    from pipeline.receipts.receipt import file_digest
    from pipeline.store.jsontext import digest_json
    from pipeline.store.statecache import StateCache

    path = tmp_path / "00000001-r.json"
    path.write_bytes(json.dumps({"kind": "k", "finalHashes": {"harness": {"a.md": "0" * 64}}}).encode())
    time.sleep(2.1)  # settled: its identity may vouch for it
    cache = StateCache(str(tmp_path / "cache" / "state.json"))
    first = file_digest(path, cache)
    assert first == digest_json(json.loads(path.read_bytes()))
    assert cache.get("receipt", f"{path.name} @")[5] == first
    before = path.stat()
    with open(path, "r+b") as fh:
        fh.write(path.read_bytes().replace(b"0" * 64, b"1" + b"0" * 63))  # same size, in place
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    second = file_digest(path, cache)
    assert second == digest_json(json.loads(path.read_bytes())) != first
