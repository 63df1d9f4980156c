"""The safe mirror's guarantees: the privacy gate and post-state verification."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping

from ..errors import InputRejected, Issue, IssueList, PrivacyRejected, VerifyFailed
from ..fsutil import sha256_bytes
from ..state.model import PostFiles, PostState
from ..state.proven import keep_proof
from ..store.files import same_file, size_of
from ..store.index import PRIVATE_MARK, mirror_index, mirror_index_bytes, render_index
from ..store.memory import INDEX_NAME, is_memory_name, parse_memory
from ..store.state import Limits
from .shape import declared_visibility, has_conflict_markers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..privacy import RuleSet
    from ..store.statecache import StateCache


def refuse_safe_without_mirror(post: PostState) -> None:
    """The global store has no mirror: a memory there cannot be marked safe."""
    safe = sorted(n for n, m in post.memories.items() if m.is_safe)
    if safe:
        raise InputRejected(f"{safe[0]} is marked safe, but the global store is private only",
                            code="global.safe", hint="leave out --visibility safe for global memories")


def privacy_issues(post: PostState, ruleset: RuleSet, cache: StateCache | None = None) -> Iterator[Issue]:
    """Findings in every file the mirror will hold. With ``cache``, a (name, content) that this very
    rule set and scanner found clean before is not scanned again: a write scans what it changes, and
    a change of rules (or of the code applying them) scans everything once."""
    scope = _scan_scope(ruleset)
    derived = post.derived
    # A kept file is a teammate's, left as it is: never this write's to publish (sync held it, if it must).
    names: list[str] = sorted(name for name in post.public if name not in post.kept.files)
    if scope is not None and derived is not None and derived.proof.clean == scope and derived.holds_for(post):
        # Every other mirror file is the proven state's, found clean under this very scope.
        names = changed_names(post, "public")
    found = False
    for name in names:
        if cache is None or scope is None:
            issues = _file_issues(name, post.public[name], ruleset)
        else:
            key = f"{scope} {name} {post.digest_of(post.public, name)}"
            if cache.get("clean", key) == 1:
                continue
            issues = _file_issues(name, post.public[name], ruleset)
            if not issues:
                cache.put("clean", key, 1)
        found = found or bool(issues)
        yield from issues
    if not found:
        post.clean = scope


_SCOPES: list[tuple[RuleSet, str | None]] = []


def _scan_scope(ruleset: RuleSet) -> str | None:
    """The rule set's digest joined with this scanner's source, or None when either is unknown."""
    if _SCOPES and _SCOPES[0][0] is ruleset:
        return _SCOPES[0][1]
    scope = None
    if ruleset.digest is not None:
        try:
            with open(__file__, "rb") as fh:
                scope = sha256_bytes(ruleset.digest.encode("ascii") + fh.read())
        except OSError:
            scope = None
    _SCOPES[:] = [(ruleset, scope)]
    return scope


# The scan of one file is a pure function of its name, its bytes and the (immutable) rule set, and a
# long-lived process (the MCP server) gates the whole mirror on every write: each distinct
# (name, bytes) is scanned once per rule set. Bytes are compared in full on a hit, not by a hash.
_SCANNED: dict[tuple[str, bytes], tuple[Issue, ...]] = {}
_SCANNED_RULES: list[RuleSet] = []
_SCANNED_MAX_BYTES = 64 << 20
_scanned_bytes = [0]


def _file_issues(name: str, data: bytes, ruleset: RuleSet) -> tuple[Issue, ...]:
    if not _SCANNED_RULES or _SCANNED_RULES[0] is not ruleset or _scanned_bytes[0] > _SCANNED_MAX_BYTES:
        _SCANNED.clear()
        _SCANNED_RULES[:] = [ruleset]
        _scanned_bytes[0] = 0
    key = (name, data)
    issues = _SCANNED.get(key)
    if issues is None:
        issues = _SCANNED[key] = tuple(_scan(name, data, ruleset))
        _scanned_bytes[0] += len(data)
    return issues


def scan_issues(name: str, data: bytes, ruleset: RuleSet | None) -> tuple[Issue, ...]:
    """What the gate finds in one mirror file (invisible characters, then privacy findings); without rules,
    only the invisible characters."""
    if ruleset is None:
        hidden = _invisible(data.decode("utf-8", errors="replace"))
        return () if hidden is None else (_hidden_issue(name, hidden),)
    return _file_issues(name, data, ruleset)


def instruction_issues(name: str, data: bytes) -> list[Issue]:
    """Text aimed at the model as instructions (an override, a forged role, a hidden directive, a request to
    send data out): named by rule and line, never quoted."""
    from ..privacy.instructions import instruction_findings

    return [Issue("mirror.instructions", f".memory/{name}:{f.line}:{f.column}",
                  f"{name} line {f.line}: {f.rule} ({f.description})")
            for f in instruction_findings(data.decode("utf-8", errors="replace"))]


def _hidden_issue(name: str, hidden: tuple[int, int]) -> Issue:
    return Issue("mirror.invisible", f".memory/{name}:{hidden[0]}:{hidden[1]}",
                 f"{name} line {hidden[0]} holds a control or bidi character that can hide text")


def _scan(name: str, data: bytes, ruleset: RuleSet) -> Iterator[Issue]:
    text = data.decode("utf-8", errors="replace")
    hidden = _invisible(text)
    if hidden:
        yield _hidden_issue(name, hidden)
    yield from _file_name_issues(name, ruleset)
    for finding in ruleset.scan(text, f".memory/{name}"):
        yield Issue(
            f"privacy.{finding.category}",
            f".memory/{name}:{finding.line}:{finding.column}",
            f"{name} line {finding.line}: {finding.rule_id} ({finding.description}) {finding.preview}",
        )


_WITHHELD = "<name withheld>"


def _file_name_issues(name: str, ruleset: RuleSet, what: str = "a mirror file's name") -> Iterator[Issue]:
    """A credential in a file name (the name is withheld from the message: it holds the value)."""
    for finding in ruleset.scan_name(name):
        yield Issue(f"privacy.{finding.category}", f".memory/{_WITHHELD}",
                    f"{what} matches {finding.rule_id} ({finding.description}) {finding.preview}")


def withhold_names(issues: list[Issue], names: Collection[str], ruleset: RuleSet) -> list[Issue]:
    """``issues`` with every name that holds a credential replaced by a mark, in paths and messages."""
    flagged = sorted((n for n in names if ruleset.scan_name(n)), key=len, reverse=True)
    if not flagged:
        return issues

    def hide(text: str) -> str:
        for name in flagged:
            text = text.replace(name, _WITHHELD).replace(name.removesuffix(".md"), _WITHHELD)
        return text

    return [Issue(i.code, hide(i.path), hide(i.message)) for i in issues]


def name_issues(post: PostState, ruleset: RuleSet) -> Iterator[Issue]:
    """Credentials in the file names and titles of the memories ``post`` writes, whatever their
    visibility: names are shown in every index and injected block, private or not."""
    for op in post.operations:
        if op.kind == "delete":
            continue
        if op.name not in post.public:  # a mirror file's name is checked with its content
            yield from _file_name_issues(op.name, ruleset, "the file name of a memory")
        memory = post.memories.get(op.name)
        for finding in ruleset.scan_name(memory.name) if memory is not None and memory.name else ():
            yield Issue(f"privacy.{finding.category}", f"{_WITHHELD}:name",
                        f"the title of a memory matches {finding.rule_id} ({finding.description}) "
                        f"{finding.preview}")


def name_gate(post: PostState, ruleset: RuleSet) -> None:
    """A memory whose name or title holds a credential is refused, private or safe."""
    found = IssueList(name_issues(post, ruleset))
    found.raise_if_any(
        PrivacyRejected,
        "refused: a memory's name looks like it holds a credential (names are shown in every index and "
        "injected block, whatever the visibility)",
        hint="name the memory in words without the value; keep the value itself in the body of a private "
        "memory",
    )


def privacy_gate(post: PostState, ruleset: RuleSet, cache: StateCache | None = None) -> None:
    """Any finding in a name, or in what will be public, rejects the whole transaction."""
    name_gate(post, ruleset)
    found = IssueList()
    found.extend(privacy_issues(post, ruleset, cache))
    found.raise_if_any(
        PrivacyRejected,
        "refused: a memory that would be public (.memory/) looks like it holds a secret or personal data",
        hint="keep the memory private (--visibility private) or remove the value; the rule and line "
        "are named above",
    )


def post_issues(post: PostState, limits: Limits) -> Iterator[Issue]:
    """What keeps ``post`` from being committed. A state derived from a proven one is checked where the
    operations changed it (``derived_issues``); any other, or one changed since, in full."""
    return derived_issues(post, limits) if _as_derived(post, limits) else full_issues(post, limits)


def _as_derived(post: PostState, limits: Limits) -> bool:
    """Whether ``post`` is still exactly as derived from a state proven under ``limits``."""
    derived = post.derived
    return derived is not None and derived.proof.limits == limits and derived.holds_for(post)


def changed_names(post: PostState, root: str) -> list[str]:
    """The files of ``root`` that differ from the proven state ``post`` was derived from (sorted)."""
    derived = post.derived
    assert derived is not None
    files = post.harness if root == "harness" else post.public
    before = derived.proof.harness if root == "harness" else derived.proof.public
    after = files.hashes if isinstance(files, PostFiles) else None
    assert after is not None
    # Derivation copies every other file with its hash: only a touched name or the index can differ.
    return sorted(name for name in {*derived.touched, INDEX_NAME} if name in after and after[name] != before.get(name))


def derived_issues(post: PostState, limits: Limits) -> Iterator[Issue]:
    """``full_issues`` of a state derived from a proven one: every name the operations left alone holds
    what it held there (same bytes, same memory, same place in both indexes), so only the touched
    names and the two indexes can break a rule; they are checked as the full check checks them."""
    derived = post.derived
    assert derived is not None
    touched = sorted(set(derived.touched))
    if len(post.memories) > limits.max_files:
        yield Issue("bounds.file-count", "harness", f"{len(post.memories)} memories exceed {limits.max_files}")
    for root, files in (("harness", post.harness), ("public", post.public)):
        for name in touched:
            if name in files:
                yield from _size_issue(root, files, name, limits)
    own, mirror = derived.indexes
    if not post.mirrored:
        if post.public:
            yield Issue("mirror.unexpected", "public", "a scope without a mirror would write mirror files")
        if post.harness.get(INDEX_NAME) != own.data:
            yield Issue("index.harness", "harness/MEMORY.md", "the private index is not complete and current")
        return
    safe = {n for n in touched if n in post.memories and post.memories[n].is_safe}
    mirror_memories = {n for n in touched if n in post.public}
    yield from _mirror_issues(post, safe, mirror_memories)
    index = post.public.get(INDEX_NAME)
    if index is not None and PRIVATE_MARK.encode() in index:
        yield Issue("mirror.private-line", "public/MEMORY.md", f"the mirror index contains {PRIVATE_MARK}")
    if mirror is None or index != mirror_index_bytes(mirror):
        yield Issue("index.public", "public/MEMORY.md", "the mirror index is not complete and current")
    if post.harness.get(INDEX_NAME) != own.data:
        yield Issue("index.harness", "harness/MEMORY.md", "the private index is not complete and current")


def _mirror_issues(post: PostState, safe: set[str], mirror_memories: set[str]) -> Iterator[Issue]:
    for name in sorted(mirror_memories - safe):
        yield Issue("mirror.not-safe", f"public/{name}", f"{name} would be in the mirror but is not safe")
    for name in sorted(safe - mirror_memories):
        yield Issue("mirror.missing", f"public/{name}", f"safe memory {name} is missing from the mirror")
    for name in sorted(safe & mirror_memories):
        if not same_file(post.public, post.harness, name):
            yield Issue("mirror.differs", f"public/{name}", f"{name} in the mirror differs from the private copy")
    for name in sorted(mirror_memories):
        if not is_memory_name(name):
            yield Issue("mirror.name", f"public/{name}", f"{name} is not a memory file name")


def full_issues(post: PostState, limits: Limits) -> Iterator[Issue]:
    """Every rule the post-state must meet, checked on every file."""
    yield from _bound_issues(post, limits)
    if not post.mirrored:
        if post.public:
            yield Issue("mirror.unexpected", "public", "a scope without a mirror would write mirror files")
        if post.harness.get(INDEX_NAME) != render_index(post.memories, mirror=False):
            yield Issue("index.harness", "harness/MEMORY.md", "the private index is not complete and current")
        return
    kept = post.kept.files
    safe = {n for n, m in post.memories.items() if m.is_safe} - kept.keys()
    mirror_memories = {n for n in post.public if n != INDEX_NAME} - kept.keys()
    yield from _mirror_issues(post, safe, mirror_memories)
    yield from _kept_issues(post)
    index = post.public.get(INDEX_NAME)
    if index is not None and PRIVATE_MARK.encode() in index:
        yield Issue("mirror.private-line", "public/MEMORY.md", f"the mirror index contains {PRIVATE_MARK}")
    if index != mirror_index_bytes(mirror_index(post.memories, post.kept.lines, kept.keys())):
        yield Issue("index.public", "public/MEMORY.md", "the mirror index is not complete and current")
    if post.harness.get(INDEX_NAME) != render_index(post.memories, mirror=False):
        yield Issue("index.harness", "harness/MEMORY.md", "the private index is not complete and current")


def _kept_issues(post: PostState) -> Iterator[Issue]:
    """A kept file stays byte for byte as it was, and a kept absence stays without a file."""
    for name, data in sorted(post.kept.files.items()):
        now = post.public.get(name)
        if data is None and now is not None:
            yield Issue("mirror.kept", f"public/{name}", f"{name} must stay out of the mirror (kept: held or in "
                        "conflict)")
        elif data is not None and now != data:
            yield Issue("mirror.kept", f"public/{name}", f"{name} is held or in conflict and must stay as it is")


def _bound_issues(post: PostState, limits: Limits) -> Iterator[Issue]:
    if len(post.memories) > limits.max_files:
        yield Issue("bounds.file-count", "harness", f"{len(post.memories)} memories exceed {limits.max_files}")
    for root, files in (("harness", post.harness), ("public", post.public)):
        for name in sorted(files):
            if root == "harness" or name not in post.kept.files:
                yield from _size_issue(root, files, name, limits)


def _size_issue(root: str, files: Mapping[str, bytes], name: str, limits: Limits) -> Iterator[Issue]:
    size = size_of(files, name)
    if name != INDEX_NAME and size > limits.max_file_bytes:
        yield Issue("bounds.file-size", f"{root}/{name}", f"{name} is {size} bytes, over {limits.max_file_bytes}")


def verify_post(post: PostState, limits: Limits, ruleset: RuleSet | None) -> None:
    """The post-state check run on what is about to be committed; raises before the commit point.

    A state that passes is kept as proven (``state.keep_proof``): the next one derived from it in this
    process is checked where it differs."""
    found = IssueList()
    as_derived = _as_derived(post, limits)
    found.extend(derived_issues(post, limits) if as_derived else full_issues(post, limits))
    if ruleset is not None:
        found.extend(privacy_issues(post, ruleset))
    found.raise_if_any(VerifyFailed, "post-state verification failed; nothing was committed")
    keep_proof(post, limits, as_derived)


def check_disk_mirror(files: dict[str, bytes], private: Mapping[str, str], ruleset: RuleSet,
                      limits: Limits) -> list[Issue]:
    """`memfold mirror check`: each mirror file as it is on disk, as git would publish it. ``private`` holds
    the sha256 of every memory this user keeps private, by name: one of those in the mirror is a leak."""
    issues: list[Issue] = []
    for name, data in sorted(files.items()):
        where = f".memory/{name}"
        if name == INDEX_NAME:
            if PRIVATE_MARK.encode() in data:
                issues.append(Issue("mirror.private-line", where, f"the mirror index contains {PRIVATE_MARK}"))
            continue
        if len(data) > limits.max_file_bytes:
            issues.append(Issue("bounds.file-size", where, f"{name} is over the size bound"))
            continue
        if has_conflict_markers(data):
            issues.append(Issue("mirror.merge-conflict", where, f"{name} holds git's conflict markers: finish the "
                                "merge, or `memfold sync --take mine|theirs` it"))
        else:
            try:
                memory = parse_memory(data, name)
            except InputRejected as exc:
                issues.append(Issue(exc.code, where, exc.message))
            else:
                if not memory.is_safe and declared_visibility(data) is not None:
                    issues.append(Issue("mirror.not-safe", where, f"{name} is marked private"))
        if private.get(name) == sha256_bytes(data):
            issues.append(Issue("mirror.private-copy", where, f"{name} is a copy of a memory you keep private"))
        issues.extend(scan_issues(name, data, ruleset))
        issues.extend(instruction_issues(name, data))
    return issues


# Bidi controls (Trojan Source) and control characters other than tab and line ends.
_INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _invisible(text: str) -> tuple[int, int] | None:
    """Line and column of the first bidi control or control character, if any."""
    match = _INVISIBLE.search(text)
    if match is None:
        return None
    line_start = text.rfind("\n", 0, match.start()) + 1
    return text.count("\n", 0, match.start()) + 1, match.start() - line_start + 1
