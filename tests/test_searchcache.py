"""The search index beside each store: never served stale, bounded to read, rebuilt when it must be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Env
from test_inject import PER_PROMPT_ABSENT
from test_torture import fork_cli

from pipeline.bench.synth import write_store
from pipeline.state.read import parsed_root
from pipeline.store.searchcache import COLUMNS, Index, Row
from pipeline.store.searchdb import cache_file
from pipeline.store.state import Limits, read_root


def _search(env: Env, query: str) -> list[str]:
    result = env.run("--json", "search", query)
    assert result.code == 0, result
    return [r["file"] for r in json.loads(result.out)["results"]]


def _prompt_bodies(env: Env, prompt: str) -> str:
    result = env.run("inject", "--prompt", prompt)
    assert result.code == 0, result
    return result.out


def _add(env: Env, name: str, description: str, body: str) -> None:
    assert env.run("add", name, "-d", description, "-b", body).code == 0


def test_a_forgotten_memory_is_never_returned_again(env: Env) -> None:
    _add(env, "project_deploy-a", "deploy through the blue script", "BLUE-BODY")
    _add(env, "project_deploy-b", "deploy through the green script", "GREEN-BODY")
    assert _search(env, "deploy") == ["project_deploy-a.md", "project_deploy-b.md"]
    assert env.run("forget", "project_deploy-a").code == 0
    assert _search(env, "deploy") == ["project_deploy-b.md"]
    assert "BLUE-BODY" not in _prompt_bodies(env, "deploy") and "BLUE-BODY" not in env.run("inject").out


def test_a_memory_deleted_or_added_by_hand_is_seen_at_once(env: Env) -> None:
    _add(env, "project_deploy-a", "deploy through the blue script", "BLUE-BODY")
    assert _search(env, "deploy") == ["project_deploy-a.md"]
    (env.harness / "project_deploy-a.md").unlink()
    (env.harness / "project_hand.md").write_text("---\ndescription: deploy notes by hand\n---\nHAND-BODY\n")
    assert _search(env, "deploy") == ["project_hand.md"]
    out = _prompt_bodies(env, "deploy")
    assert "HAND-BODY" in out and "BLUE-BODY" not in out


def test_an_in_place_edit_of_the_same_size_is_never_served_stale(env: Env) -> None:
    _add(env, "project_deploy-a", "deploy through the blue script", "OLD-SECRET-WORD")
    path = env.harness / "project_deploy-a.md"
    before = os.stat(path)
    # Let the index record the file as settled, then edit it in place without changing its size,
    # and put its mtime back: only the ctime (which no one can set) still tells.
    os.utime(path, ns=(before.st_atime_ns - 10**10, before.st_mtime_ns - 10**10))
    index = env.harness.parent / "index" / "memory.sqlite"
    index.unlink()
    assert "OLD-SECRET-WORD" in _prompt_bodies(env, "deploy")
    rewrite_in_place(path, b"OLD-SECRET-WORD", b"NEW-PUBLIC-WORD")
    out = _prompt_bodies(env, "deploy")
    assert "NEW-PUBLIC-WORD" in out and "OLD-SECRET-WORD" not in out
    assert "project_deploy-a.md" in _search(env, "new public word")


def rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """A hand edit that keeps the file's size, inode and mtime: only its ctime tells."""
    assert len(old) == len(new)
    settled = os.stat(path)
    with open(path, "r+b") as fh:
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(old, new))
    os.utime(path, ns=(settled.st_atime_ns, settled.st_mtime_ns))
    now = os.stat(path)
    assert (now.st_size, now.st_mtime_ns, now.st_ino) == (settled.st_size, settled.st_mtime_ns, settled.st_ino)


def _answer_from_the_files(env: Env, query: str) -> list[str]:
    """What a fresh index of exactly the files on disk ranks first: the truth to compare with."""
    memories = parsed_root(read_root(env.harness, Limits()))[0]
    return [row.file for row, _ in Index.of_memories(memories).ranked(query, 20)]


@pytest.mark.stress
def test_after_a_crash_at_any_point_of_a_forget_and_recovery_the_index_matches_the_files(env: Env) -> None:
    _add(env, "project_deploy-a", "deploy through the blue script", "BLUE-BODY")
    _add(env, "project_deploy-b", "deploy through the green script", "GREEN-BODY")
    assert _search(env, "deploy") == ["project_deploy-a.md", "project_deploy-b.md"]
    forget = env.args("forget", "project_deploy-a")
    counter = env.harness.parent / "ops"
    assert fork_cli(forget, report=counter) == 0
    total = int(counter.read_text())
    assert env.run("add", "project_deploy-a", "-d", "deploy through the blue script", "-b", "BLUE-BODY").code == 0
    for kill_at in range(1, total + 1):
        assert fork_cli(forget, kill_at=kill_at) in ("killed", 0)
        assert env.run("recover").code in (0, 8)
        assert _search(env, "deploy") == _answer_from_the_files(env, "deploy"), kill_at
        if not (env.harness / "project_deploy-a.md").exists():
            assert "BLUE-BODY" not in _prompt_bodies(env, "blue deploy script")
            assert env.run("add", "project_deploy-a", "-d", "deploy through the blue script",
                           "-b", "BLUE-BODY").code == 0


OPEN_COUNTER = """
import sys
opened = []
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" else None)
from pipeline.cli import main
rc = main(sys.argv[1:])
files = [p for p in opened if isinstance(p, str) and not p.endswith((".py", ".pyc", ".so"))]
print("OPENED", len(files), "RC", rc, file=sys.stderr)
"""


def _opens(home: Path, project: Path, *args: str, stdin: str = "") -> int:
    proc = subprocess.run([sys.executable, "-c", OPEN_COUNTER, "--home", str(home), "--project", str(project),
                           *args], input=stdin, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    line = [x for x in proc.stderr.splitlines() if x.startswith("OPENED")]
    assert line and line[-1].endswith("RC 0"), proc.stderr
    return int(line[-1].split()[1])


def test_the_per_prompt_path_opens_as_many_files_at_1000_memories_as_at_50(tmp_path: Path) -> None:
    """Python-level opens (SQLite opens its index file itself): config, trust, the session, the kept block,
    and the usage log a served body is noted in."""
    counts = []
    for n in (50, 1000):
        store = write_store(tmp_path / f"n{n}", n)
        hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "deploy the cache and retry the queue",
                           "cwd": str(store.project), "session_id": f"s{n}"})
        args = ("inject", "--format", "claude-hook")
        time.sleep(2.1)  # past the racy window of the files just written (each would be re-hashed once)
        _opens(store.home, store.project, *args, stdin=hook)  # builds the indexes once
        _opens(store.home, store.project, "inject")
        # A second session: the same bodies are relevant and are sent again, so both runs serve alike.
        counts.append((_opens(store.home, store.project, *args, stdin=hook.replace(f"s{n}", f"t{n}")),
                       _opens(store.home, store.project, "inject")))
    assert counts[0] == counts[1], counts
    assert max(max(c) for c in counts) <= 6, counts


# What only a writer of the index needs: a prompt served from a current index loads neither.
WRITER_ONLY = ("pipeline.store.indexbuild", "pipeline.store.indexcommit", "pipeline.store.memory")


def test_the_prompt_hook_imports_no_heavy_module_in_a_fresh_interpreter(env: Env) -> None:
    _add(env, "project_alpha", "alpha fact about deploys", "alpha body")
    time.sleep(2.1)  # past the racy window: a file this fresh is re-hashed (hashlib) when served
    assert env.run("inject", "--prompt", "alpha deploys").code == 0  # records it settled
    hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "alpha deploys", "cwd": str(env.project),
                       "session_id": "import-check"})
    code = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"rc = main(['--home', {str(env.home)!r}, 'inject', '--format', 'claude-hook'])\n"
        f"heavy = sorted(m for m in {(*PER_PROMPT_ABSENT, 'sqlite3', 'hashlib', *WRITER_ONLY)!r} if m in sys.modules)\n"
        "print('HEAVY', heavy, 'RC', rc, file=sys.stderr)\n"
    )
    bare = {k: v for k, v in os.environ.items() if k != "MEMFOLD_HOME"}
    runs = [subprocess.run([sys.executable, "-c", code], input=hook.replace("import-check", f"s{i}"),
                           capture_output=True, text=True, timeout=60, env={**bare, "PYTHONPATH": str(REPO)},
                           check=False) for i in range(2)]
    assert "HEAVY [] RC 0" in runs[1].stderr, runs[1].stderr
    assert "alpha body" in json.loads(runs[1].stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_index_lives_only_in_the_stores_private_home(env: Env) -> None:
    _add(env, "project_alpha", "alpha fact", "ALPHA-BODY-TEXT")
    assert env.run("inject", "--prompt", "alpha").code == 0
    project_home = env.harness.parent
    index = Path(cache_file(str(project_home), "memory"))
    assert index.exists() and index.stat().st_mode & 0o777 == 0o600
    holders = [p for p in [*env.home.rglob("*"), *env.project.rglob("*")]
               if p.is_file() and b"ALPHA-BODY-TEXT" in p.read_bytes()]
    assert all(project_home in p.parents for p in holders), holders


def test_a_row_holds_each_column_under_its_name() -> None:
    values = [f"value of {column}" for column in COLUMNS]
    row = Row(values)
    assert [getattr(row, column) for column in COLUMNS] == values
    with pytest.raises(ValueError):
        Row(values[:-1])


def test_a_files_identity_keys_as_its_stat_does(tmp_path: Path) -> None:
    from pipeline.store.searchdb import identity_key, stat_key

    path = tmp_path / "project_x.md"
    path.write_bytes(b"---\ndescription: x\n---\nbody\n")
    st = os.stat(path)
    assert identity_key((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)) == stat_key(st)
