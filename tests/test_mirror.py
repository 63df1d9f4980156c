"""The privacy gate of the mirror: each distinct file is scanned once per rule set, and new bytes are scanned anew."""

from __future__ import annotations

from pathlib import Path

from conftest import Env

from pipeline.mirror.guard import privacy_issues
from pipeline.privacy import load_ruleset
from pipeline.state.model import PostState

CLEAN = b"---\nname: ci\ndescription: the ci token\ntype: reference\nvisibility: safe\n---\nAsk ops.\n"
LEAKY = CLEAN.replace(b"Ask ops.", b"GITHUB_TOKEN=ghp_" + b"Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9")


def _issues(data: bytes, ruleset: object) -> list[str]:
    post = PostState(harness={}, public={"reference_ci.md": data}, memories={})
    return [issue.code for issue in privacy_issues(post, ruleset)]  # type: ignore[arg-type]


def test_the_same_name_with_new_bytes_is_scanned_again() -> None:
    ruleset = load_ruleset()
    assert _issues(CLEAN, ruleset) == []
    assert _issues(LEAKY, ruleset) and all(code.startswith("privacy.") for code in _issues(LEAKY, ruleset))
    assert _issues(CLEAN, ruleset) == []


def test_findings_are_the_same_from_the_cache_and_from_a_fresh_rule_set() -> None:
    first = _issues(LEAKY, load_ruleset())
    assert first == _issues(LEAKY, load_ruleset()) == _issues(LEAKY, load_ruleset())


# --- `memfold mirror check` and the chain head the mirror holds ------------------------------------


def _safe_store(env: Env) -> Path:
    assert env.run("add", "project_ci", "-d", "CI runs on every push", "--visibility", "safe", "-b", "ok").code == 0
    (head,) = env.heads.glob("*.json")
    return head


def test_the_chain_head_lives_beside_the_mirror_and_the_mirror_holds_memory_files_and_its_index_only(
        env: Env) -> None:
    head = _safe_store(env)
    assert sorted(p.name for p in env.mirror.iterdir()) == ["MEMORY.md", "project_ci.md"]
    assert head.parent == env.project / ".memfold" / "heads"
    assert env.run("mirror", "check").code == 0
    ruleset = load_ruleset()
    assert list(ruleset.scan(head.read_text(), f".memfold/heads/{head.name}")) == []


def test_an_older_stores_head_in_the_mirror_is_moved_beside_it_by_the_next_transaction(env: Env) -> None:
    head = _safe_store(env)
    legacy = env.mirror / f"chain-head-{head.name}"
    head.rename(legacy)
    assert env.run("mirror", "check").code == 0  # an older memfold's head: no problem of the mirror
    assert env.run("add", "project_b", "-d", "another fact", "-b", "b").code == 0
    assert not legacy.exists()
    assert (env.heads / head.name).is_file()
    assert env.run("audit").code == 0


def test_mirror_check_refuses_a_head_left_in_the_mirror_that_is_not_one(env: Env) -> None:
    head = _safe_store(env)
    (env.mirror / f"chain-head-{head.name}").write_text('{"kind": "memfold-chain-head", "note": "anything"}\n')
    result = env.run("mirror", "check", "--json")
    assert result.code == 7
    assert [e["code"] for e in result.json()["errors"]] == ["mirror.head-invalid"]


def test_a_json_file_that_is_no_chain_head_name_is_still_refused(env: Env) -> None:
    _safe_store(env)
    (env.mirror / "chain-head-notes.json").write_text("{}\n")
    result = env.run("mirror", "check", "--json")
    assert result.code == 7
    assert [e["code"] for e in result.json()["errors"]] == ["mirror.name"]


def test_mirror_check_of_the_global_store_is_a_usage_error_not_a_crash(env: Env) -> None:
    # The global store has no mirror; the check once listed the working directory and then crashed.
    (env.project / "notes.md").write_text("not a mirror file\n")
    result = env.run("--global", "mirror", "check", "--json")
    assert result.code == 2
    assert result.json()["code"] == "mirror.global"


def test_mirror_check_flags_two_files_that_differ_only_in_case(env: Env) -> None:
    assert env.run("add", "Safe one", "-d", "a safe memory", "--visibility", "safe", "-b", "ok").code == 0
    own = env.mirror / "project_safe-one.md"
    # A teammate's copy spelled with a capital, as git brings it onto a case-sensitive checkout.
    (env.mirror / "project_Safe-one.md").write_bytes(own.read_bytes().replace(b"a safe memory", b"another one"))
    for files in ([], [str(own)], [".memory/project_Safe-one.md"]):
        result = env.run("mirror", "check", "--json", *files)
        assert result.code == 7
        collisions = [e for e in result.json()["errors"] if e["code"] == "mirror.case-collision"]
        assert len(collisions) == 1, result.out
        assert collisions[0]["path"] == ".memory/project_safe-one.md"
        assert "project_Safe-one.md" in collisions[0]["message"] and "memfold rename" in collisions[0]["message"]
    (env.mirror / "project_Safe-one.md").unlink()
    assert env.run("mirror", "check").code == 0
