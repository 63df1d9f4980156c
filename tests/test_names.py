"""Natural names: a title becomes a file name, and a title, slug or file name finds the memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Env

from pipeline.errors import InputRejected
from pipeline.store.names import matches, new_file_name, resolve, slugify


def test_a_slug_keeps_words_of_any_script_as_ascii() -> None:
    assert slugify("Deploy target") == "deploy-target"
    assert slugify("Déploiement: la cible!") == "deploiement-la-cible"
    assert slugify("部署目标") == "bushumubiao"
    assert slugify("🚀 launch") == "rocket-launch"
    assert slugify("\ue000") == ""  # private use: nothing to transliterate


def test_a_slug_is_cut_at_a_word_under_sixty_characters() -> None:
    slug = slugify(" ".join(["word"] * 40))
    assert len(slug) <= 60 and slug.endswith("word") and "--" not in slug


def test_a_new_file_name_is_numbered_past_any_case_of_a_taken_name() -> None:
    taken = {"project_deploy-target.md": b"", "PROJECT_DEPLOY-TARGET-2.md": b""}
    assert new_file_name("Deploy target", "project", taken) == "project_deploy-target-3.md"
    assert new_file_name("Deploy target", "user", taken) == "user_deploy-target.md"


def test_a_title_without_ascii_letters_gets_a_stable_hashed_name() -> None:
    first = new_file_name("\ue000\ue001", "project", {})
    assert first == new_file_name("\ue000\ue001", "project", {}) and first.startswith("project_note-")
    assert first != new_file_name("\ue002", "project", {})


def test_resolve_accepts_the_title_the_slug_and_the_file_name() -> None:
    titles = {"project_deploy-target.md": "Deploy target", "user_tabs.md": "Tabs"}
    for raw in ("Deploy target", "deploy  TARGET", "deploy-target", "project_deploy-target",
                "project_deploy-target.md", "PROJECT_DEPLOY-TARGET.MD"):
        assert resolve(titles, raw) == "project_deploy-target.md", raw


def test_an_ambiguous_name_lists_every_candidate() -> None:
    titles = {"project_ci.md": "CI", "user_ci.md": "CI"}
    with pytest.raises(InputRejected) as caught:
        resolve(titles, "CI")
    assert caught.value.code == "memory.ambiguous"
    assert caught.value.data == {"candidates": ["project_ci.md", "user_ci.md"]}
    assert matches(titles, "project_ci") == ["project_ci.md"]  # the file name wins over titles


def test_add_with_words_writes_a_prefixed_slug_and_keeps_the_words_as_name(env: Env) -> None:
    result = env.run("add", "Deploy target", "-d", "deploys go through ops/deploy.sh", "-t", "project")
    assert result.code == 0, result.err
    data = (env.harness / "project_deploy-target.md").read_bytes()
    assert data.startswith(b"---\nname: Deploy target\ndescription: deploys go through ops/deploy.sh\n")
    again = env.run("add", "deploy target", "-d", "deploys go through the blue/green script")
    assert again.code == 0 and "rewrite project_deploy-target.md" in again.out
    assert sorted(p.name for p in env.harness.iterdir()) == ["MEMORY.md", "project_deploy-target.md"]


def test_a_second_title_with_the_same_slug_is_numbered(env: Env) -> None:
    assert env.run("add", "Deploy target", "-d", "deploys go through ops/deploy.sh").code == 0
    assert env.run("add", "Deploy: target", "-d", "the target host is prod-7").code == 0
    second = (env.harness / "project_deploy-target-2.md").read_text()
    assert 'name: "Deploy: target"' in second
    assert "ops/deploy.sh" in (env.harness / "project_deploy-target.md").read_text()


def test_show_update_forget_take_the_title_the_slug_or_the_file_name(env: Env) -> None:
    assert env.run("add", "Deploy target", "-d", "deploys go through ops/deploy.sh").code == 0
    assert "name: Deploy target" in env.run("show", "Deploy target").out
    assert env.run("update", "deploy-target", "-d", "deploys use the blue/green script").code == 0
    assert "blue/green" in (env.harness / "project_deploy-target.md").read_text()
    assert env.run("forget", "project_deploy-target.md").code == 0
    assert not (env.harness / "project_deploy-target.md").exists()


def test_an_ambiguous_slug_on_the_cli_is_exit_1_and_lists_the_files(env: Env) -> None:
    assert env.run("add", "Build cache", "-d", "the build cache lives in .cache/build", "-t", "project").code == 0
    assert env.run("add", "user_build-cache", "-d", "I wipe my build cache weekly", "-t", "user").code == 0
    before = env.snapshot()
    result = env.run("--json", "forget", "build-cache")
    assert result.code == 1 and result.json()["code"] == "memory.ambiguous"
    assert result.json()["data"]["candidates"] == ["project_build-cache.md", "user_build-cache.md"]
    assert env.snapshot() == before


def test_a_name_that_looks_like_a_path_is_refused(env: Env) -> None:
    result = env.run("--json", "add", "../escape", "-d", "a path, not a name")
    assert result.code == 1 and result.json()["code"] == "memory.name"
    assert not env.home.exists() or not list(env.home.rglob("*escape*"))


@pytest.mark.integration
def test_mcp_memory_add_takes_a_name_in_words_and_update_finds_it_by_its_words(env: Env) -> None:
    from mcp_client import with_session

    assert env.run("init").code == 0

    async def body(session: Any) -> Any:
        added = await session.call_tool("memory_add", {"name": "MCP note", "description": "added over MCP"})
        updated = await session.call_tool("memory_update", {"name": "MCP note", "body": "the body"})
        return added, updated

    added, updated = with_session(env.home, env.project, body)
    assert not added.is_error and not updated.is_error, (added, updated)
    data = (env.harness / "project_mcp-note.md").read_text()
    assert "name: MCP note" in data and data.endswith("the body\n")


def test_the_bench_source_dir_is_what_the_importer_reads(tmp_path: Path) -> None:
    from pipeline.bench.importing import write_claude_dir
    from pipeline.importers.claude import parse_dir

    write_claude_dir(tmp_path / "c", 60)
    parsed = parse_dir(tmp_path / "c")
    assert len(parsed.candidates) == 60 and parsed.skipped == []
    assert any(c.source == "部署-0.md" and c.file == "bushu-0.md" for c in parsed.candidates)


PATHLIKE = ["../seed", "./seed", "a/seed", "/seed", "/tmp/seed.md", "..\\seed", "C:\\seed", "..%2Fseed", "..%2fseed",
            "%2e%2e%2Fseed", "seed%5c", "..／seed", "..∕seed", ".seed", " ../seed", "..⁄seed"]


@pytest.mark.parametrize("raw", PATHLIKE)
def test_a_name_that_looks_like_a_path_finds_no_memory_even_when_its_slug_would(raw: str) -> None:
    titles = {"seed.md": "seed", "project_seed.md": "Seed"}
    with pytest.raises(InputRejected) as exc:
        matches(titles, raw)
    assert exc.value.code == "memory.name" and "looks like a path" in exc.value.message
    with pytest.raises(InputRejected):
        resolve(titles, raw)


@pytest.mark.parametrize("raw", ["seed", "Seed", "seed.md", "Deploy target: prod", "Ünïcode name", "50% done"])
def test_words_and_file_names_still_find_their_memory(raw: str) -> None:
    titles = {"seed.md": "seed", "project_deploy-target-prod.md": "Deploy target: prod",
              "project_unicode-name.md": "Ünïcode name", "project_50-done.md": "50% done"}
    assert len(matches(titles, raw)) == 1


@pytest.mark.parametrize("raw", PATHLIKE[:6])
def test_forget_with_a_path_like_name_deletes_nothing(env: Env, raw: str) -> None:
    assert env.run("add", "seed.md", "-d", "the seed memory", "-b", "seed body").code == 0
    before = env.snapshot()
    result = env.run("forget", raw)
    assert result.code == 1 and "[memory.name]" in result.err, result.err
    assert env.snapshot() == before
