"""Hash-bound receipts: building them, their digests, and the append-only chained log."""

from __future__ import annotations

import os
import time
from functools import lru_cache
from pathlib import Path

from .. import __version__
from ..errors import Issue
from ..fsutil import read_bounded, sha256_bytes
from ..resources import load_schema
from ..state.maps import HashMaps
from ..store.jsontext import digest_json, loads_bounded
from ..store.statecache import SETTLED_NS
from .log import LogEntry, log_entries, log_name
from .maptext import MAP_KEYS, MapText
from .newest import read_newest

RECEIPT_SCHEMA = "receipt.schema.json"
RECEIPT_KIND = "memory-consolidation-receipt"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store.statecache import StateCache


def strip_prefix(value: str) -> str:
    return value[7:] if value.startswith("sha256:") else value


def normalize_maps(maps: Any) -> HashMaps:
    """Hash maps with any ``sha256:`` prefixes removed, for comparison."""
    out: HashMaps = {}
    for root in ("harness", "public"):
        files = maps.get(root, {}) if isinstance(maps, dict) else {}
        out[root] = {str(k): strip_prefix(str(v)) for k, v in files.items()} if isinstance(files, dict) else {}
    return out


def build_receipt(
    *,
    phase: str,
    run_id: str,
    scope_key: str,
    scope_digest: str,
    artifact_hash: str,
    plan_digest: str,
    selected: list[str],
    source_hashes: HashMaps,
    final_hashes: HashMaps,
    operations: list[dict[str, Any]],
    worker: dict[str, Any],
    sandbox: dict[str, Any],
    created_at: str,
    previous: str | None,
    command: str,
    outcome: dict[str, Any] | None = None,
    sync: dict[str, Any] | None = None,
) -> dict[str, Any]:
    receipt = {
        "kind": RECEIPT_KIND,
        "schemaVersion": 1,
        "phase": phase,
        "runId": run_id,
        "command": command,
        "scopeKey": scope_key,
        "scopeDigest": scope_digest,
        "artifactHash": artifact_hash,
        "planDigest": plan_digest,
        "selected": sorted(selected),
        "sourceHashes": source_hashes,
        "finalHashes": final_hashes,
        "operations": operations,
        "worker": worker,
        "sandbox": sandbox,
        "toolVersion": f"memfold {__version__}",
        "createdAt": created_at,
        "previous": previous,
    }
    if outcome is not None:
        receipt["outcome"] = outcome
    if sync is not None:
        receipt["sync"] = sync
    return receipt


def receipt_digest(receipt: dict[str, Any]) -> str:
    return digest_json(receipt)


def load_receipt(path: Path) -> dict[str, Any]:
    return parse_receipt(read_bounded(path, 256 << 20))


def parse_receipt(raw: bytes) -> dict[str, Any]:
    data = loads_bounded(raw)
    if not isinstance(data, dict):
        raise ValueError("receipt is not a JSON object")
    # Its digest (the next receipt's `previous`) needs RFC 8785 form: an integer past 2**53 or a NaN
    # has none, so such a file is an unreadable receipt, not a crash of `audit` or the next commit.
    digest_json(data)
    return data


def log_ends(receipts: Path) -> tuple[LogEntry, LogEntry] | None:
    """The first and the newest entry of the log (None for an empty log).

    From the log's pointer (``newest.py``) when it holds: one small read and two stats, whatever the
    length of the log. Otherwise from a listing, as ``log_entries``.
    """
    pointed = read_newest(receipts)
    if pointed is not None:
        seq, run_id, first = pointed
        return (LogEntry(1, first, receipts / log_name(1, first)),
                LogEntry(seq, run_id, receipts / log_name(seq, run_id)))
    entries = log_entries(receipts)
    return (entries[0], entries[-1]) if entries else None


def chain_head(receipts: Path, cache: StateCache | None = None) -> tuple[int, str | None]:
    """The next sequence number and the digest of the newest receipt (None for an empty log)."""
    ends = log_ends(receipts)
    if ends is None:
        return 1, None
    last = ends[1]
    return last.seq + 1, head_digest(last.path, cache)


def genesis_digest(receipts: Path, cache: StateCache | None = None) -> str | None:
    """The digest of the first receipt of the log: it names the chain (None for an empty log)."""
    ends = log_ends(receipts)
    return file_digest(ends[0].path, cache) if ends is not None else None


def file_digest(path: Path, cache: StateCache | None = None) -> str:
    """The digest of the receipt stored at ``path``; raises ValueError for an unreadable receipt.

    With ``cache``, a digest computed from the same bytes (by their sha256), or from the same settled
    file (by its identity), in an earlier process is used.
    """
    st = None
    if cache is not None:
        # A receipt file that has settled is vouched for by its identity (the state cache's racy rule):
        # the head and the chain's first receipt are read back by every commit, and each holds the
        # whole store's hash maps twice.
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            st = None
        at = cache.get("receipt", f"{path.name} @") if st is not None else None
        if st is not None and type(at) is list and len(at) == 7 and type(at[5]) is str and len(at[5]) == 64 \
                and at[:5] == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]:
            cache.seen.add(str(at[6]))
            return at[5]
    started = time.time_ns()
    data = read_bounded(path, 256 << 20)
    key = sha256_bytes(data)
    digest = _DIGESTS.get(key)
    slot = f"{path.name} {key}"
    if cache is not None:
        cache.seen.add(key)
    if digest is None and cache is not None:
        stored = cache.get("receipt", slot)
        digest = stored if isinstance(stored, str) and len(stored) == 64 else None
    if digest is None:
        digest = receipt_digest(parse_receipt(data))
        _remember(key, digest)
    if cache is not None:
        cache.put("receipt", slot, digest)
        if st is not None and len(data) == st.st_size and started - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_NS:
            cache.put("receipt", f"{path.name} @",
                      [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest, key])
    return digest


# Receipt digests by the sha256 of the file's exact bytes: the head is read back on every commit, and
# parsing it (a hash map of the whole store, twice) costs more than hashing its bytes.
_DIGESTS: dict[str, str] = {}
_DIGESTS_MAX = 1024


def _remember(key: str, digest: str) -> None:
    if len(_DIGESTS) >= _DIGESTS_MAX:
        _DIGESTS.clear()
    _DIGESTS[key] = digest


# Receipts this process committed, by path: (their identity right after the commit, their digest). The
# newest is the next commit's chain head, still within the racy window, and a warm server would read
# and hash it back (0.7 MB at 2,000 memories). Its digest is that of the bytes this process wrote: if
# they were changed in place since, within one clock tick so the identity stayed, the next receipt
# links to what was committed, and `audit` reports the changed one as a break of the chain.
_LANDED: dict[str, tuple[tuple[int, int, int, int, int], str]] = {}


def _identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def head_digest(path: Path, cache: StateCache | None = None) -> str:
    """``file_digest`` of the chain head a commit links to; the receipt this process committed there last
    is not read back while its identity is unchanged (never used by ``verify`` or ``audit``)."""
    landed = _LANDED.get(str(path))
    if landed is not None:
        try:
            now = os.stat(path, follow_symlinks=False)
        except OSError:
            now = None
        if now is not None and _identity(now) == landed[0]:
            return landed[1]
    return file_digest(path, cache)


def remember_landed(path: Path, digest: str, size: int) -> None:
    """Record the receipt this process just committed at ``path`` (``size`` bytes) under its digest."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    if st.st_size != size:
        return
    if len(_LANDED) >= 64:
        _LANDED.clear()
    _LANDED[str(path)] = (_identity(st), digest)


def remember_written(receipt: dict[str, Any], data: bytes, *, texts: MapText | None = None,
                     data_sha: str | None = None) -> str:
    """The digest of a receipt about to be written as ``data``, recorded for later reads of the file.

    From the value itself only when JSON reads it back as equal (str keys, lists, no tuples), so the
    digest is the one a later reader computes from the file; otherwise from the bytes, as a reader does.
    ``texts`` holds the canonical form of its hash maps if already made; ``data_sha`` is the sha256
    of ``data`` if the caller has it.
    """
    # The hash maps are checked for plain string pairs in C; the rest of the receipt is walked.
    texts = MapText() if texts is None else texts
    rest = {k: (None if k in MAP_KEYS and texts.hash_map(v) else v) for k, v in receipt.items()}
    if _json_native(rest):
        digest = texts.digest(receipt)
    else:
        digest = receipt_digest(parse_receipt(data))
    _remember(sha256_bytes(data) if data_sha is None else data_sha, digest)
    return digest


def _json_native(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if not all(type(k) is str for k in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif not (item is None or kind in (str, int, float, bool)):
            return False
    return True


@lru_cache(maxsize=1)
def _receipt_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(RECEIPT_SCHEMA))


def schema_issues(receipt: Any, where: str) -> list[Issue]:
    from ..validation.schema import fast_check

    check = fast_check(RECEIPT_SCHEMA)
    if check is not None and check(receipt):
        return []  # the pre-check is sound: jsonschema would find nothing either
    validator = _receipt_validator()
    return [
        Issue("receipt.schema", f"{where}$" + "".join(f"[{p!r}]" for p in err.absolute_path), err.message[:300])
        for err in sorted(validator.iter_errors(receipt), key=lambda e: list(map(str, e.absolute_path)))
    ]


def diff_maps(before: HashMaps, after: HashMaps) -> list[str]:
    """Human lines for every file whose hash differs between two hash maps."""
    lines = []
    for root in ("harness", "public"):
        a, b = before.get(root, {}), after.get(root, {})
        if a == b:
            continue  # compared in C: the answer after every commit that landed as staged
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                state = "added" if name not in a else "removed" if name not in b else "changed"
                lines.append(f"{root}/{name} {state}")
    return lines
