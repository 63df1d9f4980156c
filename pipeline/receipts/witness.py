"""The chain witness: the receipt log's head, written into the mirror by every transaction, and its checks.

The head names the newest receipt (sequence number and RFC 8785 digest). In the mirror it is tracked by
git, so the history of the head file holds every head that was committed: a receipt rewritten or dropped
after its head was committed no longer matches. The file is named after the chain (the digest of its
first receipt), so the heads of teammates' stores, which share the mirror, never collide.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import Issue, UnsafePath
from ..frozen import Frozen
from ..fsutil import dump_json, read_bounded
from ..paths import MIRROR_DIR
from ..safetext import counted
from ..store.jsontext import loads_bounded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..store.statecache import StateCache
    from .verify import Report

HEAD_KIND = "memfold-chain-head"
MAX_HEAD_BYTES = 4096
_NAME = re.compile(r"^chain-head-[0-9a-f]{16}\.json$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
# A run id as a receipt may name it (the engine's own, or an imported log's): no path separators.
RUN_ID_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_KEYS = {"kind", "schemaVersion", "chain", "seq", "runId", "receipt"}
_MAX_REPORTED = 5


def head_name(chain: str) -> str:
    return f"chain-head-{chain[:16]}.json"


def is_head_name(name: str) -> bool:
    """A chain head file of the mirror (never a memory name: those end in ``.md``)."""
    return _NAME.match(name) is not None


class Head(Frozen):
    """One chain head: the chain it belongs to and the receipt it names (immutable)."""

    __slots__ = ("chain", "seq", "run_id", "receipt")
    chain: str
    seq: int
    run_id: str
    receipt: str

    def __init__(self, chain: str, seq: int, run_id: str, receipt: str) -> None:
        self._set(chain=chain, seq=seq, run_id=run_id, receipt=receipt)

    def to_bytes(self) -> bytes:
        return dump_json({"kind": HEAD_KIND, "schemaVersion": 1, "chain": self.chain, "seq": self.seq,
                          "runId": self.run_id, "receipt": self.receipt})

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "seq": self.seq, "runId": self.run_id, "receipt": self.receipt}


def parse_head(raw: bytes) -> Head | None:
    """The head in ``raw``, or None unless it has exactly the shape memfold writes."""
    try:
        data = loads_bounded(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != _KEYS or data["kind"] != HEAD_KIND or data["schemaVersion"] != 1:
        return None
    chain, seq, run_id, receipt = data["chain"], data["seq"], data["runId"], data["receipt"]
    if not all(isinstance(v, str) and pattern.match(v) for v, pattern in
               ((chain, _HEX64), (receipt, _HEX64), (run_id, RUN_ID_NAME))):
        return None
    if type(seq) is not int or seq < 1:
        return None
    return Head(chain, seq, run_id, receipt)


def read_head_file(folder: Path, name: str) -> bytes | None:
    """The head file's bytes, None if absent. A link or special file there is refused, never followed."""
    path = folder / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{path} is not a regular file; memfold refuses links in the mirror",
                         code="path.symlink", hint="remove it: the next transaction writes the chain head again")
    return read_bounded(path, MAX_HEAD_BYTES)


DigestAt = Callable[[int], "str | None"]


def check_witness(mirror: Path | None, project_root: Path, chain: str | None, newest: int, digest_at: DigestAt,
                  report: Report, *, committed: bool, newest_here: int | None = None) -> None:
    """The private chain against the head in the mirror and (``committed``) every head git holds.

    A head that names a receipt the chain lacks, or another digest at that place, is an error; a
    missing or older head in the working tree (a checkout of older mirror files) only a warning.
    ``newest_here`` is the newest receipt written from this work tree, when the chain says: the
    receipts after it were written from other worktrees sharing the store, and leave this head as it is.
    """
    if mirror is None:
        report.witness = {"available": False,
                          "reason": "the global store has no mirror; `memfold attest` signatures are its witness"}
        return
    if chain is None:
        report.witness = {"available": True, "head": None, "committed": None}
        return
    name = head_name(chain)
    head = _check_working_head(mirror, name, chain, newest, digest_at, report, newest_here)
    report.witness = {"available": True, "file": f"{MIRROR_DIR}/{name}",
                      "head": None if head is None else head.as_dict(),
                      "committed": _check_committed(project_root, name, chain, newest, digest_at, report)
                      if committed else None}


def _check_working_head(mirror: Path, name: str, chain: str, newest: int, digest_at: DigestAt,
                        report: Report, newest_here: int | None = None) -> Head | None:
    where = f"{MIRROR_DIR}/{name}"
    try:
        raw = read_head_file(mirror, name)
    except UnsafePath:
        report.fail("witness.head-invalid", where, "the mirror's head is a link or special file, not a chain head")
        return None
    if raw is None:
        report.warn("witness.missing", where, "the mirror holds no chain head for this store "
                    "(the next transaction writes it)")
        return None
    head = _judge(parse_head(raw), chain, newest, digest_at, where, "witness.head", "the mirror's head")
    if isinstance(head, Issue):
        report.fail(head.code, head.path, head.message)
        return None
    if head.seq < newest and head.seq == newest_here:
        report.checks.append(f"witness: the mirror's head names the newest receipt written from this work tree "
                             f"({head.seq}; {counted(newest - head.seq, 'later receipt')} came from other "
                             "worktrees sharing the store)")
    elif head.seq < newest:
        report.warn("witness.behind", where, f"the mirror's head names receipt {head.seq}, the log ends at "
                    f"{newest} (older mirror files checked out?)")
    else:
        report.checks.append(f"witness: the mirror's head names the newest receipt ({newest})")
    return head


def _check_committed(project_root: Path, name: str, chain: str, newest: int, digest_at: DigestAt,
                     report: Report) -> int | None:
    """How many committed heads were checked; None without git history."""
    from ..mirror import gitinfo  # only audit reads git; a write never starts a process

    versions = gitinfo.committed_versions(project_root, f"{MIRROR_DIR}/{name}")
    if versions is None:
        report.checks.append("witness: no git history to check (not a git work tree, or no commit yet)")
        return None
    wrong: list[Issue] = []
    checked = 0
    for commit, raw in versions:
        if raw is None:
            continue  # that commit deleted the file; the versions before it are still checked
        checked += 1
        problem = _judge(parse_head(raw), chain, newest, digest_at, f"git {commit[:12]}:{MIRROR_DIR}/{name}",
                         "witness.committed", f"the head committed in {commit[:12]}")
        if isinstance(problem, Issue):
            wrong.append(problem)
    for issue in wrong[:_MAX_REPORTED]:
        report.fail(issue.code, issue.path, issue.message)
    if len(wrong) > _MAX_REPORTED:
        report.fail("witness.committed-more", f"git:{MIRROR_DIR}/{name}",
                    f"{len(wrong) - _MAX_REPORTED} more committed heads disagree with the chain")
    if not wrong:
        report.checks.append(f"witness: {checked} committed heads are receipts of the chain")
    return checked


def _judge(head: Head | None, chain: str, newest: int, digest_at: DigestAt, where: str, code: str,
           what: str) -> Head | Issue:
    """The head if it names a receipt of the chain, else the issue saying why not."""
    if head is None or head.chain != chain:
        return Issue(f"{code}-invalid", where, f"{what} is not a chain head of this store")
    if head.seq > newest:
        return Issue(f"{code}-ahead", where, f"{what} names receipt {head.seq} ({head.run_id}), but the log ends "
                     f"at {newest}: receipts were dropped")
    if digest_at(head.seq) != head.receipt:
        return Issue(f"{code}-mismatch", where, f"{what} names receipt {head.seq} ({head.run_id}) with another "
                     f"digest: that receipt was rewritten")
    return head


def written_here(receipts: Path, mirror: Path | None, cache: StateCache | None = None) -> dict[str, str] | None:
    """The mirror files as the newest transaction run in this work tree left them (name to sha256).

    Linked worktrees share one private store but each has its own mirror, and the head a transaction
    writes lands in the mirror of the work tree it ran in: so this mirror's head names the receipt
    whose ``finalHashes.public`` is what memfold last wrote here. A mirror file with exactly those
    bytes is behind the store (changed since from another worktree, or an older checkout), not a hand
    edit. None when that is unknown: no chain, no head here, or a head the log does not vouch for.
    """
    from .receipt import file_digest, genesis_digest, load_receipt, log_name, normalize_maps

    if mirror is None:
        return None
    try:
        chain = genesis_digest(receipts, cache)
        if chain is None:
            return None
        head = parse_head(read_head_file(mirror, head_name(chain)) or b"")
        if head is None or head.chain != chain:
            return None
        path = receipts / log_name(head.seq, head.run_id)
        if file_digest(path, cache) != head.receipt:
            return None
        return normalize_maps(load_receipt(path).get("finalHashes"))["public"]
    except (OSError, ValueError, UnsafePath):
        return None
