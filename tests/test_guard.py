"""The post-state check of a state derived from a proven one agrees with the full check, and anything
the proof cannot vouch for (a hand edit, a broken file, a changed rule set, a mutated post-state) is
checked in full."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.errors import Issue, VerifyFailed
from pipeline.mirror import guard
from pipeline.mirror.guard import (
    changed_names,
    derived_issues,
    full_issues,
    post_issues,
    privacy_issues,
    verify_post,
)
from pipeline.mirror.sync import consistent
from pipeline.privacy import load_ruleset
from pipeline.state.model import Operation, PostState, PreState
from pipeline.state.post import changed_files, compute_post
from pipeline.state.proven import forget_proofs, proof_for
from pipeline.store.index import render_index
from pipeline.store.memory import INDEX_NAME, Memory, parse_memory, render_memory
from pipeline.store.state import Limits, RootState

LIMITS = Limits(max_file_bytes=700, max_files=12)
RULES = load_ruleset()
TICKETS = load_ruleset([{"id": "ticket-code", "category": "credential", "description": "a ticket code",
                         "pattern": r"\bTK-[0-9]{9}\b"}])
NAMES = [f"project_note-{i}.md" for i in range(9)] + ["project_odd name.md"]
BROKEN = b"---\nname: [unclosed\n---\nno frontmatter that parses\n"
LEAK = "GITHUB_TOKEN=ghp_" + "Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _content(name: str, words: str, safe: bool, body: str = "") -> bytes:
    return render_memory(Memory(name=name.removesuffix(".md"), description=f"{words} for the release",
                                visibility="safe" if safe else "private", body=body or f"{words}.",
                                created="2026-01-02", modified="2026-01-02T00:00:00Z"))


def _pre(contents: dict[str, bytes], mirrored: bool = True) -> PreState:
    """A store as memfold writes it: the mirror holds exactly the safe memories and both indexes."""
    memories: dict[str, Memory] = {}
    for name, data in contents.items():
        try:
            memories[name] = parse_memory(data, name)
        except Exception:
            continue
    harness = {**contents, INDEX_NAME: render_index(memories, mirror=False)}
    public: dict[str, bytes] = {}
    if mirrored:
        public = {n: contents[n] for n, m in memories.items() if m.is_safe}
        public[INDEX_NAME] = render_index(memories, mirror=True)
    return _state(harness, public, memories, mirrored)


def _state(harness: dict[str, bytes], public: dict[str, bytes], memories: dict[str, Memory],
           mirrored: bool) -> PreState:
    broken = {n: None for n in harness if n != INDEX_NAME and n not in memories}
    pre = PreState(RootState(Path("/h"), harness, {n: _sha(b) for n, b in harness.items()}),
                   RootState(Path("/p"), public, {n: _sha(b) for n, b in public.items()}), memories, mirrored)
    pre.broken = broken  # type: ignore[assignment]  # only the names matter here
    return pre


def _kept(post: PostState) -> PreState:
    """The next pre-state as a long-lived process keeps it: the post-state's files, maps and memories."""
    maps = post.hash_maps()
    pre = PreState(RootState(Path("/h"), post.harness, dict(maps["harness"])),
                   RootState(Path("/p"), post.public, dict(maps["public"])), dict(post.memories), post.mirrored)
    pre.broken = {n: None for n in post.harness if n != INDEX_NAME and n not in post.memories}  # type: ignore[misc]
    return pre


def _gate(post: PostState, ruleset: Any = RULES) -> list[Issue]:
    """What the gate runs on a direct edit's post-state: the privacy scan, then the post-state check."""
    found = list(privacy_issues(post, ruleset))
    if found:
        return found
    try:
        verify_post(post, LIMITS, None)
    except VerifyFailed:
        return list(post_issues(post, LIMITS))
    return []


def _as_tuples(issues: Any) -> list[tuple[str, str, str]]:
    return [(i.code, i.path, i.message) for i in issues]


def _assert_same_state(derived: PostState, full: PostState, pre: PreState) -> None:
    assert derived.derived is not None and full.derived is None
    assert derived.hash_maps() == full.hash_maps()
    for a, b in ((derived.harness, full.harness), (derived.public, full.public)):
        assert sorted(a) == sorted(b)
        assert all(a[n] == b[n] for n in a)
    assert derived.memories == full.memories
    for root, a, b in (("h", derived.harness, full.harness), ("p", derived.public, full.public)):
        state = pre.harness if root == "h" else pre.public
        assert changed_files(state, a) == changed_files(state, b)
    assert _as_tuples(derived_issues(derived, LIMITS)) == _as_tuples(full_issues(derived, LIMITS)) \
        == _as_tuples(full_issues(full, LIMITS))
    assert _as_tuples(privacy_issues(derived, RULES)) == _as_tuples(privacy_issues(full, RULES))
    proof = derived.derived.proof
    for root, before, files in (("harness", proof.harness, full.harness), ("public", proof.public, full.public)):
        after = full.hash_maps()[root]
        assert changed_names(derived, root) == sorted({n for n, _ in before.items() ^ after.items()} & files.keys())


OPS = st.lists(st.tuples(st.sampled_from(["create", "rewrite", "delete"]), st.integers(0, len(NAMES) - 1),
                         st.booleans(), st.sampled_from(["plain", "long", "leak", "bidi", "twin"])),
               min_size=0, max_size=4)


def _operations(step: list[tuple[str, int, bool, str]], n: int) -> list[Operation]:
    out = []
    for kind, at, safe, shape in step:
        name = NAMES[at]
        if kind == "delete":
            out.append(Operation(name, "delete"))
            continue
        body = {"plain": "", "long": "x " * 400, "leak": LEAK, "bidi": "look \u202e here", "twin": "same"}[shape]
        out.append(Operation(name, kind, "safe" if safe else "private", _content(name, f"note {n} {at}", safe, body)))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.dictionaries(st.integers(0, len(NAMES) - 2), st.sampled_from(["safe", "private", "broken"]),
                             max_size=6),
       steps=st.lists(OPS, min_size=1, max_size=5), mirrored=st.booleans())
def test_a_derived_post_state_equals_the_full_one_and_is_checked_alike(
        start: dict[int, str], steps: list[list[tuple[str, int, bool, str]]], mirrored: bool) -> None:
    forget_proofs()
    contents = {NAMES[i]: BROKEN if kind == "broken" else _content(NAMES[i], f"start {i}", kind == "safe")
                for i, kind in start.items()}
    first = compute_post(_pre(contents, mirrored), [])
    assert first.derived is None
    assert _gate(first) == []
    pre = _kept(first)
    for n, step in enumerate(steps):
        assert proof_for(pre) is not None
        operations = _operations(step, n)
        try:
            derived = compute_post(pre, operations)
        except Exception as exc:
            forget_proofs()
            with pytest.raises(type(exc)):
                compute_post(pre, operations)
            return
        proof = proof_for(pre)
        forget_proofs()
        full = compute_post(pre, operations)
        _assert_same_state(derived, full, pre)
        refused = _gate(full) != []
        _restore(proof)
        assert (_gate(derived) != []) == refused
        if not refused:
            pre = _kept(derived)  # else the next step starts from the same proven state
        _restore(proof if refused else proof_for(pre))


def _restore(proof: Any) -> None:
    from pipeline.state import proven

    proven._PROVEN[:] = [proof]


def _proven_store(contents: dict[str, bytes], ruleset: Any = RULES) -> PreState:
    forget_proofs()
    post = compute_post(_pre(contents), [])
    assert _gate(post, ruleset) == []
    pre = _kept(post)
    assert proof_for(pre) is not None
    return pre


def _store() -> dict[str, bytes]:
    return {NAMES[0]: _content(NAMES[0], "alpha", True, "ticket TK-123456789 is open"),
            NAMES[1]: _content(NAMES[1], "beta", False), NAMES[2]: BROKEN}


def _add(pre: PreState, safe: bool = False) -> PostState:
    return compute_post(pre, [Operation(NAMES[5], "create", "safe" if safe else "private",
                                        _content(NAMES[5], "gamma", safe))])


def test_a_hand_edit_of_a_mirror_file_leaves_no_proof_and_the_mirror_is_no_longer_the_stores() -> None:
    pre = _proven_store(_store())
    assert consistent(pre)
    edited = pre.public.files[NAMES[0]].replace(b"ticket", b"TICKET")
    pre.public.files[NAMES[0]] = edited
    pre.public.hashes[NAMES[0]] = _sha(edited)
    assert proof_for(pre) is None
    assert not consistent(pre)  # a sync must look at it (held, adopted or in conflict), never overwrite it blind
    assert _add(pre).derived is None


def test_a_broken_file_copied_into_the_mirror_leaves_no_proof_and_the_mirror_is_no_longer_the_stores() -> None:
    pre = _proven_store(_store())
    pre.public.files[NAMES[2]] = BROKEN
    pre.public.hashes[NAMES[2]] = _sha(BROKEN)
    assert proof_for(pre) is None
    assert not consistent(pre)
    assert _add(pre).derived is None


def test_a_memory_swapped_for_another_object_leaves_no_proof() -> None:
    pre = _proven_store(_store())
    pre.memories[NAMES[0]] = parse_memory(pre.harness.files[NAMES[0]], NAMES[0])  # equal, not the same
    assert proof_for(pre) is None


def test_a_rule_set_change_scans_the_whole_mirror_again() -> None:
    pre = _proven_store(_store(), RULES)
    post = _add(pre)
    assert post.derived is not None and post.derived.proof.clean is not None
    found = _as_tuples(privacy_issues(post, TICKETS))
    assert [(code, path) for code, path, _ in found] == [("privacy.credential", f".memory/{NAMES[0]}:9:8")]
    assert "TK-123456789" not in found[0][2]  # the rule and line are named, never the value
    assert _as_tuples(privacy_issues(post, RULES)) == []


def test_a_derived_state_scans_only_the_mirror_files_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    pre = _proven_store(_store())
    scanned: list[str] = []
    original = guard._file_issues

    def counted(name: str, data: bytes, ruleset: Any) -> Any:
        scanned.append(name)
        return original(name, data, ruleset)

    monkeypatch.setattr(guard, "_file_issues", counted)
    assert list(privacy_issues(_add(pre, safe=True), RULES)) == []
    assert scanned == [INDEX_NAME, NAMES[5]]
    scanned.clear()
    assert list(privacy_issues(_add(pre, safe=False), RULES)) == []
    assert scanned == []  # a private memory changes neither a mirror file nor the mirror index


def test_a_post_state_changed_after_its_derivation_is_checked_in_full() -> None:
    pre = _proven_store(_store())
    post = _add(pre)
    post.public["project_stray.md"] = b"not a memory"
    assert post.derived is not None and not post.derived.holds_for(post)
    codes = [issue.code for issue in post_issues(post, LIMITS)]
    assert "mirror.not-safe" in codes and "index.public" not in codes
    post = _add(pre)
    post.memories[NAMES[6]] = parse_memory(_content(NAMES[6], "delta", True), NAMES[6])
    assert [issue.code for issue in post_issues(post, LIMITS)] == ["mirror.missing", "index.public", "index.harness"]


def test_other_bounds_than_the_proof_was_held_to_are_checked_in_full() -> None:
    pre = _proven_store(_store())
    post = _add(pre)
    tight = Limits(max_file_bytes=100, max_files=12)
    issues = _as_tuples(post_issues(post, tight))
    assert issues == _as_tuples(full_issues(post, tight))
    assert ("bounds.file-size", f"harness/{NAMES[0]}") in [(code, path) for code, path, _ in issues]
