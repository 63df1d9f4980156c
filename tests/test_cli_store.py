"""The store commands through the real CLI: files, hashes, indexes and exit codes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from conftest import Env, tree_hashes

from pipeline.fsutil import sha256_bytes


def add(env: Env, name: str, description: str, *extra: str) -> int:
    return env.run("add", name, "-d", description, *extra).code


def test_init_creates_the_project_home_both_roots_and_indexes_and_is_idempotent(env: Env) -> None:
    first = env.run("init", "--json")
    assert first.code == 0 and first.json()["created"] is True
    assert stat.S_IMODE(os.stat(env.project_home).st_mode) == 0o700
    assert json.loads((env.project_home / "project.json").read_text())["root"] == str(env.project.resolve())
    assert (env.harness / "MEMORY.md").read_bytes() == b"# Memory Index\n"
    # No index in a mirror without a memory file: it would stand in the way of a teammate's first commit.
    assert env.mirror.is_dir() and not (env.mirror / "MEMORY.md").exists()
    before = env.snapshot()
    second = env.run("init", "--json")
    assert second.code == 0 and second.json()["created"] is False
    assert env.snapshot() == before


def test_add_writes_a_private_memory_only_to_the_private_store(env: Env) -> None:
    assert add(env, "user_editor", "prefers vim keybindings", "-t", "user", "-b", "Uses vim.") == 0
    text = (env.harness / "user_editor.md").read_text()
    assert "visibility: private\n" in text and text.endswith("Uses vim.\n")
    assert not (env.mirror / "user_editor.md").exists()
    assert "- [user_editor](user_editor.md) — prefers vim keybindings (harness only)" in (env.harness / "MEMORY.md").read_text()
    assert not (env.mirror / "MEMORY.md").exists()  # the mirror holds no memory file, so no index either


def test_a_safe_memory_is_mirrored_byte_identically(env: Env) -> None:
    assert add(env, "project_ports", "dev server on 8080", "--visibility", "safe", "-b", "make dev") == 0
    assert (env.mirror / "project_ports.md").read_bytes() == (env.harness / "project_ports.md").read_bytes()
    mirror_index = (env.mirror / "MEMORY.md").read_text()
    assert "- [project_ports](project_ports.md) — dev server on 8080\n" in mirror_index
    assert "(harness only)" not in mirror_index


def test_add_with_the_exact_name_overwrites_and_keeps_created(env: Env, monkeypatch) -> None:
    add(env, "project_db", "database is postgres 15")
    monkeypatch.setenv("MEMFOLD_NOW", "2027-02-01T09:00:00Z")
    assert add(env, "project_db", "database is postgres 16") == 0
    text = (env.harness / "project_db.md").read_text()
    assert "created: 2026-11-30\n" in text and "modified: 2027-02-01T09:00:00Z\n" in text
    assert "postgres 16" in text and "postgres 15" not in text


def test_a_near_duplicate_is_refused_and_names_the_memory_it_matches(env: Env) -> None:
    add(env, "project_deploy", "Deploys go through ops/deploy.sh")
    before = env.snapshot()
    result = env.run("add", "project_shipping", "-d", "deploys  go through OPS/DEPLOY.SH.", "--json")
    assert result.code == 1
    body = result.json()
    assert body["code"] == "memory.near-duplicate" and body["data"]["matches"] == "project_deploy.md"
    assert env.snapshot() == before


def test_a_name_differing_only_by_case_is_refused(env: Env) -> None:
    add(env, "project_x", "first")
    result = env.run("add", "Project_X", "-d", "second")
    assert result.code == 1 and "project_x.md" in result.err


def test_update_changes_fields_and_moves_visibility_both_ways(env: Env) -> None:
    add(env, "project_ci", "CI runs on push")
    assert env.run("update", "project_ci", "--visibility", "safe").code == 0
    assert (env.mirror / "project_ci.md").exists()
    assert env.run("update", "project_ci", "--visibility", "private", "-b", "new body").code == 0
    assert not (env.mirror / "project_ci.md").exists()
    assert not (env.mirror / "MEMORY.md").exists()  # its last memory file gone, the mirror's index goes too
    assert (env.harness / "project_ci.md").read_text().endswith("new body\n")


def test_update_and_forget_of_a_missing_memory_exit_1(env: Env) -> None:
    env.run("init")
    assert env.run("update", "nope", "-d", "x").code == 1
    assert env.run("forget", "nope").code == 1


def test_forget_removes_the_memory_from_both_roots_and_indexes(env: Env) -> None:
    add(env, "project_tmp", "temporary", "--visibility", "safe")
    assert env.run("forget", "project_tmp").code == 0
    assert not (env.harness / "project_tmp.md").exists() and not (env.mirror / "project_tmp.md").exists()
    assert "project_tmp" not in (env.harness / "MEMORY.md").read_text()


def test_body_from_a_file_and_from_stdin(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "body.txt"
    source.write_text("from a file\n")
    assert env.run("add", "project_a", "-d", "a", "--body-file", str(source)).code == 0
    assert env.run("add", "project_b", "-d", "b", "--body-file", "-", stdin="from stdin\n").code == 0
    assert (env.harness / "project_a.md").read_text().endswith("from a file\n")
    assert (env.harness / "project_b.md").read_text().endswith("from stdin\n")


def test_list_show_and_search_read_what_was_written(env: Env) -> None:
    add(env, "project_deploy", "deploy with the blue green script", "-b", "ops/deploy.sh")
    add(env, "user_tabs", "prefers tabs", "-t", "user")
    rows = env.run("list", "--json").json()["memories"]
    assert [r["file"] for r in rows] == ["project_deploy.md", "user_tabs.md"]
    shown = env.run("show", "project_deploy")
    assert shown.code == 0 and shown.out == (env.harness / "project_deploy.md").read_text()
    hits = env.run("search", "deploy script", "--json").json()["results"]
    assert [h["file"] for h in hits] == ["project_deploy.md"]
    assert env.run("show", "missing").code == 1


def test_every_receipt_binds_the_files_it_wrote(env: Env) -> None:
    add(env, "project_a", "alpha", "--visibility", "safe")
    receipts = sorted((env.project_home / "receipts").iterdir())
    assert len(receipts) == 1
    receipt = json.loads(receipts[0].read_text())
    assert receipt["phase"] == "post" and receipt["previous"] is None
    assert receipt["finalHashes"] == env.receipted()
    run_dir = env.project_home / "runs" / receipt["runId"]
    assert sha256_bytes((run_dir / "plan.json").read_bytes()) == receipt["planDigest"]
    assert (run_dir / "post-receipt.json").read_bytes() == receipts[0].read_bytes()
    assert stat.S_IMODE(os.stat(run_dir).st_mode) == 0o700


def test_capacity_warning_past_the_index_bound(env: Env) -> None:
    (env.home).mkdir(parents=True)
    (env.home / "config.yaml").write_text("limits:\n  index_lines: 2\n")
    for i in range(3):
        result = env.run("add", f"project_n{i}", "-d", f"note number {i}")
        assert result.code == 0
    assert "past its capacity" in result.err
    assert len(list(env.harness.glob("project_n*.md"))) == 3


def test_a_broken_config_is_reported_with_exit_2_and_left_untouched(env: Env) -> None:
    env.home.mkdir(parents=True)
    config = env.home / "config.yaml"
    config.write_bytes(b"limits: [not, a, mapping\n")
    result = env.run("add", "project_a", "-d", "a")
    assert result.code == 2 and "config.yaml" in result.err
    assert config.read_bytes() == b"limits: [not, a, mapping\n"


def test_bad_usage_exits_2(env: Env) -> None:
    assert env.run("add").code == 2
    assert env.run("no-such-command").code == 2


def test_add_refuses_a_windows_device_name_and_writes_nothing(env: Env) -> None:
    assert env.run("init").code == 0
    before = {"harness": tree_hashes(env.harness), "public": tree_hashes(env.mirror)}
    for name in ("aux.md", "CON.md", "com1.md"):
        result = env.run("--json", "add", name, "-d", "a fact about ports", "--visibility", "safe")
        assert result.code == 1, result.err
        assert result.json()["code"] == "memory.name-reserved"
    assert {"harness": tree_hashes(env.harness), "public": tree_hashes(env.mirror)} == before
    assert not list((env.project_home / "receipts").iterdir())


def test_an_import_stores_a_file_named_like_a_windows_device_under_a_prefixed_name(env: Env, tmp_path: Path) -> None:
    source = tmp_path / "claude-memory"
    source.mkdir()
    (source / "aux.md").write_text("---\nname: aux\ndescription: the aux port\ntype: project\n---\nbody\n")
    (source / "ports.md").write_text("---\nname: ports\ndescription: dev server on 8080\ntype: project\n---\nb\n")
    result = env.run("--json", "import", "claude", str(source))
    assert result.code == 0, result.err
    body = result.json()
    assert body["skipped"] == []
    aux = next(i for i in body["imported"] if i["source"] == "aux.md")
    assert aux["name"] == "project_aux.md" and "stored as project_aux.md" in aux["notes"]
    assert (env.harness / "ports.md").is_file() and (env.harness / "project_aux.md").is_file()
    assert not (env.harness / "aux.md").exists() and not (env.mirror / "aux.md").exists()


# What a terminal must never receive from a memory: escape sequences (cursor moves, window titles,
# OSC 8 links), the bell, NUL, C1 controls and the bidi controls that reorder what a reader sees.
TERMINAL_HOSTILE = "\x1b]0;owned\x07\x1b[2J\x00\x9b31m\u202egnp.exe\u2066\u200b"


def _hostile_memory(env: Env) -> None:
    """A memory edited by hand with terminal controls in every field (YAML escapes them in the frontmatter)."""
    assert env.run("init").code == 0
    (env.harness / "project_hostile.md").write_bytes(
        (f"---\nname: {json.dumps('deploy ' + TERMINAL_HOSTILE + 'title')}\n"
         f"description: {json.dumps('deploy ' + TERMINAL_HOSTILE + 'notes')}\n"
         f"type: project\nvisibility: private\n---\ndeploy body {TERMINAL_HOSTILE}end\n").encode())


def test_human_output_of_show_list_and_search_holds_no_terminal_control(env: Env) -> None:
    _hostile_memory(env)
    (env.harness / f"notes{TERMINAL_HOSTILE.replace(chr(0), '')}.txt").write_bytes(b"stray file\n")
    for command, expected in ((["show", "project_hostile"], "deploy body"), (["list"], "project_hostile"),
                              (["search", "deploy"], "project_hostile"), (["status"], "ignored in the private")):
        result = env.run(*command)
        assert result.code == 0, (command, result)
        assert expected in result.out
        shown = result.out + result.err
        bad = sorted({f"U+{ord(ch):04X}" for ch in shown if not ch.isprintable() and ch not in "\n\t"})
        assert bad == [], (command, bad)
    assert "deploy body ]0;owned[2J31mgnp.exeend" in env.run("show", "project_hostile").out


def test_json_output_keeps_the_exact_text_and_escapes_every_control(env: Env) -> None:
    _hostile_memory(env)
    result = env.run("show", "project_hostile", "--json")
    assert result.code == 0
    assert all(ch.isascii() or ch.isprintable() for ch in result.out if ch != "\n")
    assert "\x1b" not in result.out and "\u202e" not in result.out and "\x9b" not in result.out
    assert result.json()["body"] == f"deploy body {TERMINAL_HOSTILE}end\n"


VAULT_BODY = ("Ask the on-call for the vault path of the staging deploy key before running the release "
              "script on a Friday afternoon.")


def test_a_new_safe_memory_carrying_another_private_memory_needs_allow_publish(env: Env) -> None:
    assert add(env, "user_vault", "where the staging deploy key is kept", "-b", VAULT_BODY) == 0
    before = env.snapshot()
    copied = "Shared: " + VAULT_BODY.replace("vault", "vaults", 1)
    refused = env.run("--json", "add", "project_notes", "-d", "release notes", "--visibility", "safe",
                      "-b", copied)
    assert refused.code == 1
    error = refused.json()
    assert error["code"] == "privacy.publish-near-copy" and "user_vault.md" in error["message"]
    assert "vault path" not in refused.out + refused.err and "--allow-publish" in error["hint"]
    assert env.snapshot() == before and not (env.mirror / "project_notes.md").exists()
    published = env.run("add", "project_notes", "-d", "release notes", "--visibility", "safe", "-b", copied,
                        "--allow-publish")
    assert published.code == 0
    assert (env.mirror / "project_notes.md").read_bytes() == (env.harness / "project_notes.md").read_bytes()


def test_a_person_may_still_publish_the_memory_they_name(env: Env) -> None:
    assert add(env, "user_vault", "where the staging deploy key is kept", "-b", VAULT_BODY) == 0
    assert env.run("update", "user_vault", "--visibility", "safe").code == 0
    assert (env.mirror / "user_vault.md").read_bytes() == (env.harness / "user_vault.md").read_bytes()
    assert VAULT_BODY in (env.mirror / "user_vault.md").read_text()
