"""Writing the search index after a commit: only the changed rows, or the whole post-state from memory."""

from __future__ import annotations

import _sqlite3 as sqlite3
import os
import shutil
from pathlib import Path

from conftest import Env
from test_searchcache import rewrite_in_place

from pipeline.store.searchcache import cache_file


def _add(env: Env, name: str, description: str, body: str) -> None:
    assert env.run("add", name, "-d", description, "-b", body).code == 0


def _index(env: Env) -> Path:
    return Path(cache_file(str(env.project_home), "memory"))


def _rows(env: Env) -> dict[str, tuple[int, str, str | None, int]]:
    conn = sqlite3.connect(str(_index(env)))
    try:
        return {file: (rowid, sha, st, racy) for rowid, file, sha, st, racy in
                conn.execute("SELECT id, file, sha, st, racy FROM docs")}
    finally:
        conn.close()


def _prompt(env: Env, prompt: str) -> str:
    result = env.run("inject", "--prompt", prompt)
    assert result.code == 0, result
    return result.out


def test_a_commit_changes_only_the_rows_of_the_files_it_changed(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    before = _rows(env)
    inode = _index(env).stat().st_ino
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")
    after = _rows(env)
    # Updated in place: the same file, the untouched rows exactly as they were, one new row.
    assert _index(env).stat().st_ino == inode
    assert {f: after[f] for f in before} == before
    assert set(after) - set(before) == {"project_gamma.md"}
    assert "GAMMA-BODY" in _prompt(env, "gamma red script")


def test_a_store_without_an_index_gets_one_written_from_the_commit_not_read_back(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    rows = _rows(env)
    assert set(rows) == {"project_alpha.md", "project_beta.md"}
    # No stat recorded: each row's file is hashed once before it is first served.
    assert all(st is None and racy == 1 for _, _, st, racy in rows.values())
    from pipeline.fsutil import sha256_bytes

    for file, (_, sha, _, _) in rows.items():
        assert sha == sha256_bytes((env.harness / file).read_bytes())


def test_a_hand_edit_right_after_the_commit_is_never_served_from_the_written_index(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    _add(env, "project_beta", "beta deploys use the green script", "OLD-BETA-WORD")
    path = env.harness / "project_beta.md"
    rewrite_in_place(path, b"OLD-BETA-WORD", b"NEW-BETA-WORD")
    out = _prompt(env, "beta green script")
    assert "NEW-BETA-WORD" in out and "OLD-BETA-WORD" not in out


def test_an_index_left_behind_by_a_crash_before_its_refresh_never_serves_a_forgotten_memory(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    assert "ALPHA-BODY" in _prompt(env, "alpha blue script")
    kept = env.project_home / "kept.sqlite"
    shutil.copy2(_index(env), kept)
    assert env.run("forget", "project_alpha").code == 0
    # As if the process died after the commit point and before the index was refreshed.
    os.replace(kept, _index(env))
    assert "ALPHA-BODY" not in _prompt(env, "alpha blue script")
    assert "ALPHA-BODY" not in env.run("inject").out
    assert "project_alpha.md" not in _rows(env)


def test_an_index_that_missed_a_hand_edit_before_the_transaction_is_written_anew(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    (env.harness / "project_hand.md").write_text("---\ndescription: hand notes on deploys\n---\nHAND-BODY\n")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    assert set(_rows(env)) == {"project_alpha.md", "project_beta.md", "project_hand.md"}
    assert "HAND-BODY" in _prompt(env, "hand notes deploys")
