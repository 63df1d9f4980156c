"""The run manifest: the identity, scope, inputs and protections a consolidation is bound to."""

from __future__ import annotations

from pathlib import Path

from ..paths import Layout
from ..state.maps import HashMaps
from ..store.jsontext import digest_json
from ..store.state import Limits

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .artifacts import Writer

MANIFEST_KIND = "memory-consolidation-manifest"


def scope_digest(run_id: str, scope_key: str, snapshot_digest: str, context_mode: str, selected: list[str]) -> str:
    return digest_json({"runId": run_id, "scopeKey": scope_key, "snapshotDigest": snapshot_digest,
                        "contextMode": context_mode, "selected": sorted(selected)})


def write_manifest(run_dir: Path, manifest: dict[str, Any], write: Writer | None = None) -> None:
    """``manifest.json``, written once before anything reads the run (by ``write``, as ``snapshot_run``)."""
    from ..store.jsontext import dump_json

    if write is None:
        from ..fsutil import write_artifact

        write = write_artifact
    write(run_dir, "manifest.json", dump_json(manifest))


def build_manifest(
    *, layout: Layout, run_id: str, run_dir: Path, snapshot_digest: str, context_mode: str, scope: str,
    selected: list[str], source: HashMaps, worker: dict[str, Any], sandbox: dict[str, Any], limits: Limits,
    extract_limits: dict[str, int], allow_publish: bool, created_at: str, command: str | None = None,
) -> dict[str, Any]:
    """The manifest of any run: a consolidation, or (``command`` given) a direct edit the parent planned."""
    manifest = {
        "kind": MANIFEST_KIND,
        "schemaVersion": 1,
        "runId": run_id,
        "scopeKey": layout.scope_key,
        "scopeDigest": scope_digest(run_id, layout.scope_key, snapshot_digest, context_mode, selected),
        "artifactHash": snapshot_digest,
        "snapshotDigest": snapshot_digest,
        "contextMode": context_mode,
        "snapshotPath": "snapshot.json",
        "scope": scope,
        "selected": sorted(selected),
        "allowPublish": allow_publish,
        "roots": {"harness": str(layout.harness), "public": str(layout.mirror) if layout.mirror else None,
                  "project": str(layout.project_root), "runDir": str(run_dir)},
        "sourceHashes": source,
        "worker": worker,
        "sandbox": sandbox,
        "limits": {"maxFileBytes": limits.max_file_bytes, "maxFiles": limits.max_files,
                   "indexLines": limits.index_lines, "indexBytes": limits.index_bytes, **extract_limits},
        "createdAt": created_at,
    }
    if command is not None:
        manifest["command"] = command
    return manifest
