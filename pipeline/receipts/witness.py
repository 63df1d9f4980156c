"""The chain witness: the receipt log's head, written beside the mirror by every transaction, and its checks.

The head names the newest receipt (sequence number and RFC 8785 digest). It lives in
``<project>/.memfold/heads/<chain>.json``, tracked by git with the mirror, so the history of the head
file holds every head that was committed: a receipt rewritten or dropped after its head was committed
no longer matches. The file is named after the chain (the digest of its first receipt), so the heads
of teammates' stores, which share the repository, never collide. Stores from before the heads moved
kept theirs in the mirror (``.memory/chain-head-<chain>.json``): it is read there until the next
transaction moves it.

A head is one line of JSON, so a merge of two versions of it leaves whole heads: ``merge=union`` lines,
or the two sides of a text conflict. The reader takes the newest head of the chain that the log vouches
for, and the next transaction writes one line again.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from ..errors import Issue, UnsafePath
from ..frozen import Frozen
from ..fsutil import read_bounded
from ..paths import HEADS_DIR, MIRROR_DIR, STATE_DIR
from ..safetext import counted
from ..store.jsontext import loads_bounded
from .log import RUN_ID_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

    from .findings import Report
else:
    Protocol = object

HEAD_KIND = "memfold-chain-head"
MAX_HEAD_BYTES = 4096
HEADS_PATH = f"{STATE_DIR}/{HEADS_DIR}"
_LEGACY_NAME = re.compile(r"^chain-head-[0-9a-f]{16}\.json$")
_NAME = re.compile(r"^[0-9a-f]{16}\.json$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_KEYS = {"kind", "schemaVersion", "chain", "seq", "runId", "receipt"}
_MAX_REPORTED = 5

DigestAt = Callable[[int], "str | None"]


class GitFacts(Protocol):
    """What audit and verify ask of git, handed in by the caller (``mirror.gitinfo``, which never runs a
    program a repository configures): reading git is the mirror's business, not the receipts'."""

    def committed_versions(self, root: Path, path: str) -> list[tuple[str, bytes | None]] | None:
        """(commit, bytes or None where it deleted the file) for each commit that touched ``path``."""

    def provenance(self, root: Path, files: Mapping[str, bytes | None]) -> dict[str, dict[str, str]]:
        """Where each mirror file came from: a commit (and its author) or the working tree."""


def head_name(chain: str) -> str:
    """The head file's name in ``.memfold/heads/``."""
    return f"{chain[:16]}.json"


def legacy_head_name(chain: str) -> str:
    """Where stores from before ``.memfold/heads/`` kept the head: in the mirror itself."""
    return f"chain-head-{chain[:16]}.json"


def is_head_name(name: str) -> bool:
    """A chain head file of ``.memfold/heads/``."""
    return _NAME.match(name) is not None


def is_legacy_head_name(name: str) -> bool:
    """A chain head left in the mirror by an older memfold (never a memory name: those end in ``.md``)."""
    return _LEGACY_NAME.match(name) is not None


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
        """One line of canonical JSON: a merge keeps whole heads (see the module docstring)."""
        return (json.dumps({"chain": self.chain, "kind": HEAD_KIND, "receipt": self.receipt, "runId": self.run_id,
                            "schemaVersion": 1, "seq": self.seq}, sort_keys=True, separators=(",", ":"))
                + "\n").encode("ascii")

    def as_dict(self) -> dict[str, Any]:
        return {"chain": self.chain, "seq": self.seq, "runId": self.run_id, "receipt": self.receipt}


def parse_head(raw: bytes) -> Head | None:
    """The head in ``raw``, or None unless it has exactly the shape memfold writes."""
    if len(raw) > MAX_HEAD_BYTES:
        return None
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


def heads_in(raw: bytes) -> list[Head]:
    """Every head ``raw`` holds: the file as memfold writes it, or the lines a merge left (both sides of
    a union merge, or of a conflict between git's markers)."""
    one = parse_head(raw)
    if one is not None:
        return [one]
    return [head for line in raw.splitlines()[:64] if line.startswith(b"{")
            for head in [parse_head(line)] if head is not None]


def newest_vouched(heads: list[Head], chain: str, digest_at: DigestAt) -> Head | None:
    """Of ``heads``, the newest of ``chain`` whose receipt the log holds with that very digest."""
    good = [h for h in heads if h.chain == chain and digest_at(h.seq) == h.receipt]
    return max(good, key=lambda h: h.seq) if good else None


def read_head_file(folder: Path, name: str) -> bytes | None:
    """The head file's bytes, None if absent. A link or special file there is refused, never followed."""
    path = folder / name
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"{path} is not a regular file; memfold refuses links beside the mirror",
                         code="path.symlink", hint="remove it: the next transaction writes the chain head again")
    return read_bounded(path, MAX_HEAD_BYTES)


class HeadFile(Frozen):
    """Where this store's head is now (the heads folder, or the mirror for an older store) and its bytes."""

    __slots__ = ("where", "data", "legacy")
    where: str
    data: bytes | None
    legacy: bytes | None  # the head an older memfold left in the mirror, while it is there

    def __init__(self, where: str, data: bytes | None, legacy: bytes | None) -> None:
        self._set(where=where, data=data, legacy=legacy)


def head_file(heads: Path, mirror: Path, chain: str) -> HeadFile:
    """This chain's head as it is in the work tree: ``.memfold/heads/`` first, else the mirror's old place."""
    data = read_head_file(heads, head_name(chain))
    legacy = read_head_file(mirror, legacy_head_name(chain))
    if data is not None:
        return HeadFile(f"{HEADS_PATH}/{head_name(chain)}", data, legacy)
    return HeadFile(f"{MIRROR_DIR}/{legacy_head_name(chain)}" if legacy is not None
                    else f"{HEADS_PATH}/{head_name(chain)}", legacy, legacy)


def check_witness(heads: Path | None, mirror: Path | None, project_root: Path, chain: str | None, newest: int,
                  digest_at: DigestAt, report: Report, *, git: GitFacts | None = None,
                  newest_here: int | None = None) -> None:
    """The private chain against the head in the work tree and (with ``git``) every head git holds.

    A head that names a receipt the chain lacks, or another digest at that place, is an error; a
    missing or older head in the working tree (a checkout of older files) only a warning.
    ``newest_here`` is the newest receipt written from this work tree, when the chain says: the
    receipts after it were written from other worktrees sharing the store, and leave this head as it is.
    """
    if heads is None or mirror is None:
        report.witness = {"available": False,
                          "reason": "the global store has no mirror; `memfold attest` signatures are its witness"}
        return
    if chain is None:
        report.witness = {"available": True, "head": None, "committed": None}
        return
    head, where = _check_working_head(heads, mirror, chain, newest, digest_at, report, newest_here)
    committed = None
    if git is not None:
        committed = _check_committed(project_root, (f"{HEADS_PATH}/{head_name(chain)}",
                                                    f"{MIRROR_DIR}/{legacy_head_name(chain)}"),
                                     chain, newest, digest_at, report, git)
    report.witness = {"available": True, "file": where, "head": None if head is None else head.as_dict(),
                      "committed": committed}


def _check_working_head(heads: Path, mirror: Path, chain: str, newest: int, digest_at: DigestAt,
                        report: Report, newest_here: int | None) -> tuple[Head | None, str]:
    where = f"{HEADS_PATH}/{head_name(chain)}"
    try:
        found = head_file(heads, mirror, chain)
    except UnsafePath:
        report.fail("witness.head-invalid", where, "the chain head is a link or special file, not a chain head")
        return None, where
    where = found.where
    if found.data is None:
        report.warn("witness.missing", where, "the work tree holds no chain head for this store "
                    "(the next transaction writes it)")
        return None, where
    candidates = heads_in(found.data)
    vouched = newest_vouched(candidates, chain, digest_at)
    if vouched is None:
        judged = _judge(candidates[0] if candidates else None, chain, newest, digest_at, where, "witness.head",
                        "the work tree's head")
        assert isinstance(judged, Issue)
        report.fail(judged.code, judged.path, judged.message)
        return None, where
    if len(candidates) > 1:
        report.warn("witness.merged", where, f"the head file holds {len(candidates)} heads left by a git merge; "
                    "the newest is used and the next transaction writes it alone")
    if vouched.seq < newest and vouched.seq == newest_here:
        report.checks.append(f"witness: the work tree's head names the newest receipt written from this work "
                             f"tree ({vouched.seq}; {counted(newest - vouched.seq, 'later receipt')} came from "
                             "other worktrees sharing the store)")
    elif vouched.seq < newest:
        report.warn("witness.behind", where, f"the work tree's head names receipt {vouched.seq}, the log ends at "
                    f"{newest} (older files checked out?)")
    else:
        report.checks.append(f"witness: the work tree's head names the newest receipt ({newest})")
    return vouched, where


def _check_committed(project_root: Path, paths: tuple[str, ...], chain: str, newest: int, digest_at: DigestAt,
                     report: Report, git: GitFacts) -> int | None:
    """How many committed heads were checked, at either place a head was ever kept; None without git history."""
    wrong: list[Issue] = []
    checked = 0
    known = False
    for path in paths:
        versions = git.committed_versions(project_root, path)
        if versions is None:
            continue
        known = True
        for commit, raw in versions:
            if raw is None:
                continue  # that commit deleted the file; the versions before it are still checked
            checked += 1
            where = f"git {commit[:12]}:{path}"
            candidates = heads_in(raw)
            if newest_vouched(candidates, chain, digest_at) is None:
                problem = _judge(candidates[0] if candidates else None, chain, newest, digest_at, where,
                                 "witness.committed", f"the head committed in {commit[:12]}")
                assert isinstance(problem, Issue)
                wrong.append(problem)
    if not known:
        report.checks.append("witness: no git history to check (not a git work tree, or no commit yet)")
        return None
    for issue in wrong[:_MAX_REPORTED]:
        report.fail(issue.code, issue.path, issue.message)
    if len(wrong) > _MAX_REPORTED:
        report.fail("witness.committed-more", f"git:{paths[0]}",
                    f"{len(wrong) - _MAX_REPORTED} more committed heads disagree with the chain")
    if not wrong:
        report.checks.append(f"witness: {counted(checked, 'committed head')} checked, each a receipt of the chain"
                             if checked else "witness: no head of this chain is committed yet")
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
