"""Injection: the per-prompt path's imports, the byte budget, ranking, shadowing and sanitising."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import REPO, Env

from pipeline.store.inject import build_injection, sanitize
from pipeline.store.memory import Memory


# The libraries the per-prompt path must not load, and the stdlib modules that each cost milliseconds
# of a budget of three interpreter starts (dataclasses alone pulls in inspect, ast and dis).
PER_PROMPT_ABSENT = ("jsonschema", "pydantic", "portalocker", "typer", "rfc8785", "re2", "yaml", "platformdirs",
                     "argparse", "dataclasses", "pathlib", "subprocess", "typing", "datetime", "inspect")


def test_the_inject_path_imports_no_heavy_library_in_a_fresh_interpreter(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "alpha body").code == 0
    code = (
        "import sys\n"
        "from pipeline.cli import main\n"
        f"rc = main(['--home', {str(env.home)!r}, '--project', {str(env.project)!r}, 'inject', '--query', 'alpha'])\n"
        f"heavy = sorted(m for m in {PER_PROMPT_ABSENT!r} if m in sys.modules)\n"
        "print('HEAVY', heavy, 'RC', rc, file=sys.stderr)\n"
    )
    # Without MEMFOLD_HOME the default home is computed too (platformdirs stays unimported on Linux).
    bare = {k: v for k, v in os.environ.items() if k != "MEMFOLD_HOME"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**bare, "PYTHONPATH": str(REPO)})
    assert "HEAVY [] RC 0" in proc.stderr, proc.stderr
    assert "alpha body" in proc.stdout


def _mem(name: str, description: str, body: str, modified: str = "2026-01-01T00:00:00Z") -> Memory:
    return Memory(name=name, description=description, body=body, modified=modified)


def test_the_block_never_exceeds_its_byte_budget() -> None:
    memories = {f"project_n{i:03d}.md": _mem(f"n{i}", f"note {i} about deploys", "deploy " * 200) for i in range(300)}
    for budget in (600, 2000, 16000):
        result = build_injection([("private", memories)], query="deploy", max_bytes=budget, max_files=8,
                                 guidance=True)
        assert len(result.text.encode()) <= budget
        assert result.truncated
        assert result.text.endswith("</memory>\n")


def test_bodies_follow_the_query_ranking_newest_first_on_ties() -> None:
    memories = {
        "project_old.md": _mem("old", "deploy script", "ops/deploy.sh", "2026-01-01T00:00:00Z"),
        "project_new.md": _mem("new", "deploy script", "run ops/deploy.sh", "2026-05-01T00:00:00Z"),
        "project_other.md": _mem("other", "lint rules", "ruff"),
    }
    result = build_injection([("private", memories)], query="deploy script", max_bytes=16000, max_files=8,
                             guidance=False)
    assert result.included == ["project_new.md", "project_old.md"]
    assert "save a durable fact" not in result.text


def test_private_memories_shadow_mirror_duplicates() -> None:
    private = {"project_a.md": _mem("a", "private version", "p")}
    mirror = {"project_a.md": _mem("a", "mirror version", "m"), "project_b.md": _mem("b", "only in mirror", "b")}
    text = build_injection([("private", private), ("mirror", mirror)], query=None, max_bytes=16000, max_files=8,
                           guidance=False).text
    assert "private version" in text and "mirror version" not in text and "only in mirror" in text


def test_sanitize_escapes_tags_and_drops_bidi_and_controls() -> None:
    assert sanitize("</memory>\u202e\x1b[2J ok\n") == "&lt;/memory&gt;[2J ok\n"


def test_claude_hook_fails_open_on_a_broken_store(env: Env) -> None:
    assert env.run("init").code == 0
    (env.harness / "project_bad.md").symlink_to("/etc/hostname")
    os.chmod(env.harness, 0o000)
    try:
        result = env.spawn("inject", "--format", "claude-hook", env={"MEMFOLD_DEBUG": ""})
    finally:
        os.chmod(env.harness, 0o700)
    assert result.code == 0
    out = result.out.strip()
    if out:  # root can still read a 0000 dir: then the block is produced, without the link's target
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert "project_bad" not in context


def test_the_claude_hook_with_a_config_file_imports_no_heavy_library(env: Env) -> None:
    """The hook runs before every prompt: with a config present it still loads no YAML or pydantic after
    the first run."""
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "alpha body").code == 0
    config = env.home / "config.yaml"
    config.write_text("inject: {max_files: 3}\n")
    time.sleep(2.1)  # a config younger than 2 s is never cached (a same-tick rewrite could go unseen)
    code = (
        "import io, json, sys\n"
        "sys.stdin = io.StringIO(json.dumps({'hook_event_name': 'UserPromptSubmit', 'prompt': 'alpha'}))\n"
        "from pipeline.cli import main\n"
        f"rc = main(['--home', {str(env.home)!r}, '--project', {str(env.project)!r}, 'inject', '--format', "
        "'claude-hook'])\n"
        f"heavy = sorted(m for m in {PER_PROMPT_ABSENT!r} if m in sys.modules)\n"
        "print('HEAVY', heavy, 'RC', rc, file=sys.stderr)\n"
    )
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO)}) for _ in range(2)]
    # The first run validates the YAML (yaml, pydantic) and caches the sections; the next one reads the cache.
    assert runs[0].stderr.strip().endswith("RC 0"), runs[0].stderr
    assert "HEAVY [] RC 0" in runs[1].stderr, runs[1].stderr
    assert "alpha body" in json.loads(runs[1].stdout)["hookSpecificOutput"]["additionalContext"]


def test_inject_arguments_are_checked_like_any_command(env: Env) -> None:
    assert env.run("add", "project_a", "-d", "alpha fact", "-b", "alpha body").code == 0
    ok = env.run("inject", "--max-files=1", "--query", "alpha", "--format=json")
    assert ok.code == 0 and json.loads(ok.out)["included"] == ["project_a.md"]
    for bad, word in ((["--max-bytes", "lots"], "positive integer"), (["--max-files", "0"], "positive integer"),
                      (["--format", "xml"], "--format is one of"), (["--nope"], "unrecognized argument: --nope"),
                      (["--query"], "--query expects a value"), (["--json=yes"], "unrecognized argument")):
        result = env.run("inject", *bad)
        assert result.code == 2, (bad, result)
        assert word in result.err and "usage: memfold inject" in result.err
        assert result.out == ""
    helped = env.run("inject", "--help")
    assert helped.code == 0 and "--max-bytes N" in helped.out
