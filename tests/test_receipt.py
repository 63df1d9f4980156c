"""The receipt log's head: its digest is always the one of the newest receipt's bytes on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.fsutil import dump_json
from pipeline.receipt import chain_head, genesis_digest, receipt_digest, remember_written


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
