"""Three-way merges of memory files and chain heads: what merges, into which bytes, and what is left to git."""

from __future__ import annotations

import json

import pytest

from pipeline.mirror.gitinfo import merge_file
from pipeline.mirror.merge import merge_head, merge_memory, merge_versions, settled
from pipeline.receipts.witness import Head, parse_head
from pipeline.store.memory import parse_memory

BASE = b"""---
name: Deploy target
description: deploys go through ops/deploy.sh
type: project
visibility: safe
created: 2026-07-13
modified: 2026-10-02T08:14:03Z
---
Run ops/deploy.sh.
Staging first.
Then production.
Watch the dashboard.
Roll back with ops/rollback.sh.
"""


def change(data: bytes, *pairs: tuple[str, str]) -> bytes:
    text = data.decode()
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text.encode()


def git_text(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    done = merge_file(ours, base, theirs)
    assert done is not None
    return done[0] if done[1] else None


def merge(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    return merge_memory(base, ours, theirs, git_text, "project_deploy-target.md")


def test_different_fields_merge_into_the_canonical_file_with_the_later_modified() -> None:
    ours = change(BASE, ("description: deploys go", "description: all deploys go"),
                  ("modified: 2026-10-02T08:14:03Z", "modified: 2026-11-01T10:00:00Z"))
    theirs = change(BASE, ("Then production.", "Then production, never on Fridays."),
                    ("modified: 2026-10-02T08:14:03Z", "modified: 2026-11-02T10:00:00Z"))
    expected = change(BASE, ("description: deploys go", "description: all deploys go"),
                      ("Then production.", "Then production, never on Fridays."),
                      ("modified: 2026-10-02T08:14:03Z", "modified: 2026-11-02T10:00:00Z"))
    assert merge(BASE, ours, theirs) == expected
    assert merge(BASE, theirs, ours) == expected


@pytest.mark.parametrize(("mine", "other", "later"), [
    ("2026-11-02T10:00:00Z", "2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z"),
    ("2026-11-01T10:00:00Z", "2026-11-02T10:00:00Z", "2026-11-02T10:00:00Z"),
    ("2026-11-02", "2026-11-01T23:59:59Z", "2026-11-02"),
])
def test_modified_is_the_later_of_the_two_sides(mine: str, other: str, later: str) -> None:
    ours = change(BASE, ("Staging first.", "Staging first, always."), ("2026-10-02T08:14:03Z", mine))
    theirs = change(BASE, ("Watch the dashboard.", "Watch the dashboard."), ("2026-10-02T08:14:03Z", other))
    merged = merge(BASE, ours, theirs)
    assert merged is not None and parse_memory(merged).modified == later


def test_a_modified_that_no_order_can_compare_is_a_conflict() -> None:
    ours = change(BASE, ("2026-10-02T08:14:03Z", "yesterday"), ("Staging first.", "Staging first, always."))
    theirs = change(BASE, ("2026-10-02T08:14:03Z", "2026-11-02T10:00:00Z"))
    assert merge(BASE, ours, theirs) is None


def test_a_modified_one_side_dropped_takes_the_other_sides_stamp() -> None:
    ours = change(BASE, ("modified: 2026-10-02T08:14:03Z\n", ""))
    theirs = change(BASE, ("2026-10-02T08:14:03Z", "2026-11-02T10:00:00Z"), ("Staging first.", "Staging, then QA."))
    merged = merge(BASE, ours, theirs)
    assert merged is not None and parse_memory(merged).modified == "2026-11-02T10:00:00Z"


def test_one_field_changed_differently_on_both_sides_is_a_conflict() -> None:
    ours = change(BASE, ("description: deploys go", "description: all deploys go"))
    theirs = change(BASE, ("description: deploys go", "description: most deploys go"))
    assert merge(BASE, ours, theirs) is None


def test_the_same_change_on_both_sides_is_no_conflict() -> None:
    ours = change(BASE, ("description: deploys go", "description: all deploys go"), ("Staging first.", "QA first."))
    theirs = change(BASE, ("description: deploys go", "description: all deploys go"))
    assert merge(BASE, ours, theirs) == ours


def test_a_field_added_on_one_side_and_one_removed_on_the_other_both_land() -> None:
    ours = change(BASE, ("modified: 2026-10-02T08:14:03Z\n", "modified: 2026-10-02T08:14:03Z\nexpires: 2027-01-01\n"))
    theirs = change(BASE, ("created: 2026-07-13\n", ""))
    merged = merge(BASE, ours, theirs)
    assert merged is not None
    memory = parse_memory(merged)
    assert (memory.expires, memory.created) == ("2027-01-01", None)


def test_both_sides_changing_lines_far_apart_in_the_body_merge_by_lines() -> None:
    ours = change(BASE, ("Run ops/deploy.sh.", "Run ops/deploy.sh --verbose."))
    theirs = change(BASE, ("Roll back with ops/rollback.sh.", "Roll back with ops/rollback.sh --now."))
    merged = merge(BASE, ours, theirs)
    assert merged == change(BASE, ("Run ops/deploy.sh.", "Run ops/deploy.sh --verbose."),
                            ("Roll back with ops/rollback.sh.", "Roll back with ops/rollback.sh --now."))


def test_both_sides_changing_one_body_line_is_a_conflict() -> None:
    ours = change(BASE, ("Staging first.", "Canary first."))
    theirs = change(BASE, ("Staging first.", "Blue/green first."))
    assert merge(BASE, ours, theirs) is None


def test_a_field_no_version_gave_stays_absent_and_one_a_side_added_lands() -> None:
    base = b"---\ndescription: use pnpm\nmetadata:\n  type: feedback\n---\nUse pnpm.\n"
    ours = change(base, ("Use pnpm.", "Use pnpm, never npm."))
    theirs = change(base, ("description: use pnpm", "description: use pnpm everywhere"))
    merged = merge(base, ours, theirs)
    assert merged == b"---\ndescription: use pnpm everywhere\ntype: feedback\n---\nUse pnpm, never npm.\n"
    published = change(theirs, ("---\nUse", "visibility: safe\n---\nUse"))
    merged = merge(base, ours, published)
    assert merged is not None and b"\nvisibility: safe\n" in merged and b"\nname:" not in merged


def test_other_frontmatter_keys_merge_one_by_one() -> None:
    base = change(BASE, ("---\nRun", "owner: ops\nreview: null\n---\nRun"))
    ours = change(base, ("owner: ops", "owner: platform"))
    theirs = change(base, ("review: null", "review: 2027-01-01"))
    merged = merge(base, ours, theirs)
    assert merged is not None
    assert parse_memory(merged).extra == {"owner": "platform", "review": parse_memory(theirs).extra["review"]}
    assert merge(base, ours, change(base, ("owner: ops", "owner: security"))) is None


def test_crlf_versions_merge_into_lf() -> None:
    ours = change(BASE, ("Staging first.", "QA first.")).replace(b"\n", b"\r\n")
    theirs = change(BASE, ("description: deploys go", "description: all deploys go"))
    merged = merge(BASE, ours, theirs)
    assert merged == change(BASE, ("Staging first.", "QA first."), ("description: deploys go", "description: all deploys go"))


@pytest.mark.parametrize("broken", [
    b"",  # an add/add: git passes an empty base
    b"---\ndescription: [unclosed\n---\nx\n",
    b"---\nname: no description\n---\nx\n",
    b"<<<<<<< ours\n---\ndescription: a\n---\n=======\n---\ndescription: b\n---\n>>>>>>> theirs\n",
    b"\xff\xfe not utf-8",
])
def test_a_version_that_does_not_parse_leaves_the_merge_to_git(broken: bytes) -> None:
    ours = change(BASE, ("Staging first.", "QA first."))
    theirs = change(BASE, ("description: deploys go", "description: all deploys go"))
    assert merge(broken, ours, theirs) is None
    assert merge(BASE, broken, theirs) is None
    assert merge(BASE, ours, broken) is None


def test_what_one_side_alone_changed_is_taken_byte_for_byte() -> None:
    odd = b"not a memory at all\n"
    assert settled(BASE, odd, BASE) == odd
    assert settled(BASE, BASE, odd) == odd
    assert settled(BASE, odd, odd) == odd
    assert settled(BASE, odd, odd + b"x") is None
    assert merge(BASE, BASE, odd) == odd


CHAIN = "ab" * 32


def head(seq: int, chain: str = CHAIN, receipt: str | None = None) -> bytes:
    return Head(chain, seq, f"run-{seq}", receipt or f"{seq:064x}").to_bytes()


@pytest.mark.parametrize(("mine", "other"), [(3, 2), (2, 3), (7, 1)])
def test_the_head_with_the_higher_sequence_number_wins_byte_for_byte(mine: int, other: int) -> None:
    merged = merge_head(head(1), head(mine), head(other))
    assert merged == head(max(mine, other))
    assert merge_head(b"", head(mine), head(other)) == head(max(mine, other))  # added on both sides


@pytest.mark.parametrize("theirs", [
    head(3, chain="cd" * 32),  # another chain
    head(2, receipt="9" * 64),  # the same place with another receipt
    b"{not json",
    json.dumps({**json.loads(head(3)), "seq": 0}).encode(),
])
def test_heads_of_two_chains_or_a_broken_head_are_left_to_git(theirs: bytes) -> None:
    assert merge_head(head(1), head(2), theirs) is None
    assert parse_head(head(2)) is not None


def test_what_memfold_cannot_settle_gets_gits_markers_with_the_labels_and_marker_size() -> None:
    ours = change(BASE, ("Staging first.", "Canary first."))
    theirs = change(BASE, ("Staging first.", "Blue/green first."))
    done = merge_versions("memory", BASE, ours, theirs, "x.md", ("HEAD", "merge base", "topic"), 9)
    assert done is not None
    text, clean = done
    assert not clean
    assert b"\n<<<<<<<<< HEAD\nCanary first.\n=========\nBlue/green first.\n>>>>>>>>> topic\n" in text


def test_a_merge_memfold_settles_is_clean_and_git_is_asked_only_for_the_body() -> None:
    calls: list[tuple[bytes, bytes, bytes]] = []

    def fake_git(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str],
                 size: int) -> tuple[bytes, bool] | None:
        calls.append((ours, base, theirs))
        return merge_file(ours, base, theirs, labels, size)

    ours = change(BASE, ("Run ops/deploy.sh.", "Run ops/deploy.sh --verbose."), ("deploys go", "all deploys go"))
    theirs = change(BASE, ("Roll back with ops/rollback.sh.", "Roll back now."))
    done = merge_versions("memory", BASE, ours, theirs, "x.md", git_merge=fake_git)
    assert done is not None and done[1]
    assert [c[1].startswith(b"Run ops/deploy.sh.\n") for c in calls] == [True]  # the bodies alone
    assert merge_versions("head", head(1), head(2), head(5), "h.json", git_merge=fake_git) == (head(5), True)
    assert len(calls) == 1


def test_versions_git_cannot_merge_as_text_get_no_answer() -> None:
    assert merge_versions("head", b"\0base", b"\0ours", b"\0theirs", "h.json") is None
