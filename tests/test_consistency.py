"""Everyday commands agree with each other: no-op writes nothing, repeats explain themselves, words agree."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Env


def _receipts(env: Env) -> list[str]:
    return sorted(p.name for p in (env.project_home / "receipts").iterdir())


def test_update_with_no_change_writes_nothing_and_no_receipt(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the build uses make", "-b", "make all").code == 0
    before, receipts = env.snapshot(), _receipts(env)
    result = env.run("update", "project_a", "-d", "the build uses make", "-b", "make all")
    assert result.code == 0 and "nothing to do" in result.out
    assert env.snapshot() == before and _receipts(env) == receipts


def test_a_second_undo_of_the_same_run_says_it_was_undone_and_by_which_run(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the build uses make").code == 0
    run = json.loads((env.project_home / "receipts" / _receipts(env)[-1]).read_text())["runId"]
    assert env.run("undo", run).code == 0
    undo_run = json.loads((env.project_home / "receipts" / _receipts(env)[-1]).read_text())["runId"]
    before = env.snapshot()
    again = env.run("--json", "undo", run)
    assert again.code == 5 and again.json()["code"] == "undo.already-undone"
    assert again.json()["data"] == {"undoneBy": undo_run} and undo_run in again.json()["message"]
    assert env.snapshot() == before


def test_global_trust_and_untrust_are_refused(env: Env) -> None:
    for command in ("trust", "untrust"):
        result = env.run("--json", "--global", command)
        assert result.code == 2 and result.json()["code"] == "trust.global"
    assert not (env.home / "trusted.json").exists()


def test_list_widens_the_file_column_for_long_names(env: Env) -> None:
    long = "project_" + "x" * 60
    assert env.run("add", long, "-d", "a memory with a long file name").code == 0
    assert env.run("add", "project_b", "-d", "a short one").code == 0
    short, wide = env.run("list").out.splitlines()
    assert wide.startswith(f"{long}.md project ") and short.startswith("project_b.md" + " " * 59 + " project ")


def test_counts_agree_with_their_number(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "the build uses make", "--visibility", "safe").code == 0
    status = env.run("status").out
    assert "(1 memory: 1 safe, 0 private)" in status and "(1 file)" in status


def test_verify_of_an_attestation_without_a_key_says_the_signature_was_not_checked(env: Env, tmp_path: Path) -> None:
    assert env.run("add", "project_a", "-d", "the build uses make").code == 0
    run = json.loads((env.project_home / "receipts" / _receipts(env)[-1]).read_text())["runId"]
    envelope = tmp_path / "a.json"
    made = env.run("attest", run, "--out", str(envelope))
    assert made.code == 0, made.err
    result = env.run("--json", "verify", "--attestation", str(envelope))
    assert result.code == 0, result.out
    assert [w["code"] for w in result.json()["warnings"]] == ["attest.unsigned-check"]
    assert "signature was NOT checked" in env.run("verify", "--attestation", str(envelope)).out


def test_counted_puts_the_noun_in_the_right_number() -> None:
    from pipeline.safetext import counted

    assert [counted(n, "memory") for n in (0, 1, 2, 2859)] == ["0 memories", "1 memory", "2 memories",
                                                               "2,859 memories"]
    assert counted(1, "receipt") == "1 receipt" and counted(3, "key") == "3 keys"
