"""Near-duplicates: found from the state cache's key table, never from what a file held before."""

from __future__ import annotations

from pathlib import Path

from conftest import Env

from pipeline.store.duplicates import near_duplicate
from pipeline.store.memory import Memory, render_memory
from pipeline.store.statecache import StateCache, _load, cache_for


def _add(env: Env, name: str, description: str, body: str = "") -> tuple[int, str]:
    result = env.run("add", name, "-d", description, "-b", body or f"{name} body")
    return result.code, result.err


def _rewrite(env: Env, name: str, description: str) -> None:
    path = env.harness / name
    memory = Memory(name=name.removesuffix(".md"), description=description, body="rewritten by hand")
    path.write_bytes(render_memory(memory))


def test_a_hand_edited_memory_is_compared_by_what_it_says_now(env: Env) -> None:
    assert _add(env, "project_alpha", "alpha deploys use the blue green script")[0] == 0
    assert _add(env, "project_beta", "beta runs the smoke tests first")[0] == 0
    _rewrite(env, "project_alpha.md", "alpha now waits for the nightly window")
    # The words alpha held before the edit are free again; the words it holds now are not.
    assert _add(env, "project_gamma", "Alpha deploys use the BLUE green script.")[0] == 0
    code, err = _add(env, "project_delta", "alpha now waits for the NIGHTLY window")
    assert code == 1 and "memory.near-duplicate" in err and "project_alpha.md (same description)" in err
    assert not (env.harness / "project_delta.md").exists()


def test_a_forgotten_memory_is_no_near_duplicate(env: Env) -> None:
    assert _add(env, "project_alpha", "alpha deploys use the blue green script")[0] == 0
    assert _add(env, "project_alpha_copy", "alpha deploys use the blue green script")[0] == 1
    assert env.run("forget", "project_alpha").code == 0
    assert _add(env, "project_alpha_copy", "alpha deploys use the blue green script")[0] == 0
    assert (env.harness / "project_alpha_copy.md").is_file()


def test_the_table_names_the_first_match_by_file_name_with_its_first_kind_as_the_full_scan(tmp_path: Path) -> None:
    memories = {"project_b.md": Memory(name="b", description="shared words", body="own body b"),
                "project_a.md": Memory(name="a", description="other words", body="same body"),
                "project_c.md": Memory(name="c", description="shared words", body="same body")}
    hashes = {name: f"{i:064x}" for i, name in enumerate(memories)}
    new = Memory(name="new", description="Shared words.", body="same   BODY")
    scanned = near_duplicate(memories, hashes, None, "project_new.md", new)
    cache = StateCache(None)
    assert near_duplicate(memories, hashes, cache, "project_new.md", new) == scanned
    assert scanned == "project_a.md (same body)"
    assert cache.folded == hashes
    # A second check answers from the table alone, and a changed hash drops the holder.
    assert near_duplicate(memories, hashes, cache, "project_new.md", new) == scanned
    moved = {**hashes, "project_a.md": "f" * 64}
    memories["project_a.md"] = Memory(name="a", description="other words", body="new body")
    assert near_duplicate(memories, moved, cache, "project_new.md", new) \
        == "project_b.md (same description)"


def test_another_process_answers_from_the_kept_table(env: Env) -> None:
    assert _add(env, "project_alpha", "alpha deploys use the blue green script")[0] == 0
    assert _add(env, "project_beta", "beta runs the smoke tests first")[0] == 0  # folds alpha
    cache = cache_for(env.project_home)
    cache.flush()
    from pipeline.store import statecache

    statecache._OPEN.clear()
    loaded = cache_for(env.project_home)
    assert loaded is not cache and loaded.folded == cache.folded and loaded.fold_text == cache.fold_text
    assert "project_alpha.md" in loaded.folded and loaded.fold == {}
    alpha = [line for line in loaded.fold_text.split("\n") if line.endswith(f" project_alpha.md {loaded.folded['project_alpha.md']}")]
    assert len(alpha) == 3 and all(loaded.holders(line.split(" ")[0]) for line in alpha)


def test_the_kept_table_drops_the_lines_of_changed_and_forgotten_contents(tmp_path: Path) -> None:
    cache = StateCache(str(tmp_path / "cache" / "state.bin"))
    cache.digests = {"r": {"a.md": "0" * 64, "b.md": "2" * 64}}
    cache.roots = {"r": {"a.md": (1, 2, 3, 4, 5), "b.md": (1, 3, 3, 4, 5)}}
    cache.put_fold("a.md", "0" * 64, ["nold", "dold"])  # what a.md held before
    cache.put_fold("b.md", "2" * 64, ["nb", "dshared"])
    cache.flush()
    assert cache.holders("nold") == [("a.md", "0" * 64)]
    cache.put_fold("a.md", "1" * 64, ["nnew", "dshared"])  # a.md changed
    cache.digests = {"r": {"a.md": "1" * 64}}  # and b.md was forgotten
    cache.roots = {"r": {"a.md": (1, 2, 3, 4, 5)}}
    cache.dirty = True
    cache.flush()
    loaded = _load(str(tmp_path / "cache" / "state.bin"), (1,))
    assert sorted(loaded.fold_text.strip("\n").split("\n")) == [f"dshared a.md {'1' * 64}", f"nnew a.md {'1' * 64}"]
    assert loaded.holders("dshared") == [("a.md", "1" * 64)] and loaded.holders("nold") == []
    assert loaded.folded == {"a.md": "1" * 64}
