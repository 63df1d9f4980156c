"""The kept session-start block: served again only while every store dir and shown file is as recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, Env
from test_searchcache import rewrite_in_place

from pipeline.store import blockcache


def _add(env: Env, name: str, description: str, body: str) -> None:
    assert env.run("add", name, "-d", description, "-b", body).code == 0


def _start(env: Env) -> str:
    result = env.run("inject")
    assert result.code == 0, result
    return result.out


def _kept(env: Env) -> Path:
    return Path(blockcache.path(str(env.project_home)))


def _settled_store(env: Env) -> None:
    _add(env, "feedback_alpha", "alpha deploys use the blue script", "OLD-ALPHA-WORD")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    time.sleep(2.1)  # past the racy window: nothing just written is ever kept
    _start(env)  # settles the rows it serves
    assert _kept(env).exists()


def test_nothing_just_written_is_kept(env: Env) -> None:
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    assert "BETA-BODY" in _start(env)
    assert not _kept(env).exists()


def test_a_settled_session_start_is_served_again_without_the_index_or_sqlite(env: Env) -> None:
    _settled_store(env)
    expected = _start(env)
    code = ("import sys\nfrom pipeline.cli import main\n"
            f"rc = main(['--home', {str(env.home)!r}, '--project', {str(env.project)!r}, 'inject'])\n"
            "print(sorted(m for m in ('_sqlite3', 'pipeline.store.searchcache') if m in sys.modules), rc, "
            "file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert proc.stderr.strip().endswith("[] 0"), proc.stderr
    assert proc.stdout == expected and "OLD-ALPHA-WORD" in expected


def test_a_hand_edit_that_keeps_size_and_mtime_is_never_served_from_the_kept_block(env: Env) -> None:
    _settled_store(env)
    rewrite_in_place(env.harness / "feedback_alpha.md", b"OLD-ALPHA-WORD", b"NEW-ALPHA-WORD")
    out = _start(env)
    assert "NEW-ALPHA-WORD" in out and "OLD-ALPHA-WORD" not in out


def test_a_forgotten_memory_is_never_served_from_the_kept_block(env: Env) -> None:
    _settled_store(env)
    assert env.run("forget", "feedback_alpha").code == 0
    assert "alpha deploys" not in _start(env)


def test_a_block_kept_from_before_a_crash_and_recovery_is_not_served(env: Env) -> None:
    _settled_store(env)
    old = env.project_home / "old-block.json"
    shutil.copy2(_kept(env), old)
    assert env.run("forget", "feedback_alpha").code == 0
    assert env.run("recover").code == 0
    os.replace(old, _kept(env))  # as if the state moved on while the old block stayed behind
    assert "alpha deploys" not in _start(env)


def test_other_options_or_config_never_get_the_kept_block(env: Env) -> None:
    _settled_store(env)
    small = env.run("inject", "--max-bytes", "1200")
    assert small.code == 0 and len(small.out.encode()) <= 1200
    (env.home / "config.yaml").write_text("inject: {guidance: false}\n")
    assert "save a durable fact" not in _start(env)


def _hook_start(env: Env, session: str) -> str:
    hook = json.dumps({"hook_event_name": "SessionStart", "cwd": str(env.project), "session_id": session})
    result = env.run("inject", "--format", "claude-hook", stdin=hook)
    assert result.code == 0, result
    return str(json.loads(result.out)["hookSpecificOutput"]["additionalContext"])


def test_a_resumed_session_and_a_new_one_each_get_their_own_block(env: Env) -> None:
    _settled_store(env)
    assert "OLD-ALPHA-WORD" in _hook_start(env, "resumed")
    for _ in range(2):  # the second is served from the kept block of this session's sent bodies
        again = _hook_start(env, "resumed")
        assert "OLD-ALPHA-WORD" not in again and "feedback_alpha.md" in again
    assert "OLD-ALPHA-WORD" in _hook_start(env, "fresh")


def test_a_broken_file_fixed_in_place_is_never_hidden_by_the_kept_block(env: Env) -> None:
    _settled_store(env)
    path = env.harness / "project_broken.md"
    path.write_bytes(b"---\nname: project_broken\n  bad: [\n---\nx\n")
    time.sleep(2.1)
    first = env.run("inject")
    assert "do not parse: project_broken.md" in first.err
    time.sleep(2.1)
    env.run("inject")  # settles what the block rests on; the next start is served from it
    assert _kept(env).exists()
    directory = os.stat(env.harness).st_mtime_ns
    with open(path, "r+b") as fh:
        fh.write(b"---\nname: project_broken\ndescription: where redis listens\ntype: feedback\n"
                 b"visibility: private\ncreated: 2026-11-01\nmodified: 2026-11-01T00:00:00Z\n---\nFIXED-REDIS-WORD\n")
        fh.truncate()
    assert os.stat(env.harness).st_mtime_ns == directory
    result = env.run("inject")
    assert result.code == 0 and "FIXED-REDIS-WORD" in result.out and "do not parse" not in result.err
