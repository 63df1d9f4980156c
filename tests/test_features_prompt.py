"""Step definitions for features/prompt.feature: the per-prompt path's bounded cost and freshness."""

from __future__ import annotations

import itertools
import json
import shutil
import time
from pathlib import Path
from typing import Any

from conftest import REPO, Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_config import imported_by, second_installation
from test_searchcache import _opens, rewrite_in_place

from pipeline.bench.synth import write_store
from pipeline.config import cache_file as config_cache
from pipeline.store import blockcache
from pipeline.store.searchdb import cache_file

scenarios("prompt.feature")
_SESSIONS = itertools.count()


def _add(env: Env, *args: str) -> None:
    assert env.run("add", *args).code == 0


def _hook(env: Env, event: str, prompt: str = "") -> str:
    hook = {"hook_event_name": event, "prompt": prompt, "cwd": str(env.project),
            "session_id": f"session-{next(_SESSIONS)}"}
    result = env.run("inject", "--format", "claude-hook", stdin=json.dumps(hook))
    assert result.code == 0, result
    return str(json.loads(result.out)["hookSpecificOutput"]["additionalContext"]) if result.out.strip() else ""


def _serve_twice(env: Env) -> None:
    """Past the racy window, then served: the rows settle and the session block is kept."""
    time.sleep(2.1)
    for _ in range(2):
        assert env.run("inject").code == 0
        _hook(env, "UserPromptSubmit", "alpha blue script")


@given(parsers.parse("settled synthetic stores of {small:d} and {large:d} memories, each served once"))
def synthetic(ctx: dict[str, Any], tmp_path: Path, small: int, large: int) -> None:
    ctx["stores"] = [write_store(tmp_path / f"s{n}", n) for n in (small, large)]
    time.sleep(2.1)
    for store in ctx["stores"]:
        for _ in range(2):
            _opens(store.home, store.project, "inject")
            _opens(store.home, store.project, "inject", "--prompt", "deploy the cache and retry the queue")


@when("a session starts and Claude Code's prompt hook runs in each store, counting opened files")
def count_opens(ctx: dict[str, Any]) -> None:
    counts = []
    for i, store in enumerate(ctx["stores"]):
        hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "deploy the cache and retry the queue",
                           "cwd": str(store.project), "session_id": f"count-{i}"})
        counts.append((_opens(store.home, store.project, "inject"),
                       _opens(store.home, store.project, "inject", "--format", "claude-hook", stdin=hook)))
    ctx["counts"] = counts


@then(parsers.parse("both stores opened the same number of files, at most {most:d} a run"))
def same_opens(ctx: dict[str, Any], most: int) -> None:
    small, large = ctx["counts"]
    assert small == large and max(large) <= most, ctx["counts"]


@given(parsers.parse('settled memories with "{word}" in "{name}", served once'))
def settled(env: Env, word: str, name: str) -> None:
    _add(env, name.removesuffix(".md"), "-d", "alpha deploys use the blue script", "-b", f"{word} runs first")
    _add(env, "project_beta", "-d", "beta deploys use the green script", "-b", "BETA-BODY")
    _serve_twice(env)


@given("the trusted project's settled safe memories, served once")
def settled_safe(env: Env) -> None:
    assert env.run("trust").code == 0
    _add(env, "feedback_alpha", "-d", "alpha deploys use the blue script", "-b", "OLD-ALPHA-WORD runs first",
         "--visibility", "safe")
    _add(env, "project_beta", "-d", "beta deploys use the green script", "-b", "BETA-BODY", "--visibility", "safe")
    _serve_twice(env)


@given("I keep a copy of the search index and of the kept session block")
def keep_copies(env: Env, ctx: dict[str, Any]) -> None:
    kept = [Path(cache_file(str(env.project_home), "memory")), Path(blockcache.path(str(env.project_home)))]
    assert all(p.is_file() for p in kept)
    ctx["copies"] = []
    for path in kept:
        copy = path.with_name(path.name + ".copy")
        shutil.copy2(path, copy)
        ctx["copies"].append((copy, path))


@when(parsers.parse('I overwrite "{old}" with "{new}" in "{name}", keeping its size and mtime'))
def overwrite(env: Env, old: str, new: str, name: str) -> None:
    rewrite_in_place(env.harness / name, old.encode(), new.encode())


@when("I put the copies back, as if the process had died before refreshing them")
def put_back(ctx: dict[str, Any]) -> None:
    for copy, path in ctx["copies"]:
        copy.replace(path)


@when("a session starts")
def session_starts(env: Env, ctx: dict[str, Any]) -> None:
    result = env.run("inject")
    assert result.code == 0, result
    ctx["block"] = result.out


@when(parsers.parse('Claude Code\'s prompt hook runs for "{prompt}" in a new session'))
def prompt_hook(env: Env, ctx: dict[str, Any], prompt: str) -> None:
    ctx["hook"] = _hook(env, "UserPromptSubmit", prompt)


@when(parsers.parse('a teammate\'s memory "{name}" saying "{body}" lands in the mirror'))
def teammate(env: Env, name: str, body: str) -> None:
    (env.mirror / name).write_text(f"---\nname: {name[:-3]}\ndescription: their kafka stream notes\n"
                                   f"type: project\nvisibility: safe\n---\n{body}\n", encoding="utf-8")


@then(parsers.parse('the session block shows "{shown}" and not "{hidden}"'))
def block_shows(ctx: dict[str, Any], shown: str, hidden: str) -> None:
    assert shown in ctx["block"] and hidden not in ctx["block"], ctx["block"]


@then(parsers.parse('the hook context shows "{shown}" and not "{hidden}"'))
def hook_shows(ctx: dict[str, Any], shown: str, hidden: str) -> None:
    assert shown in ctx["hook"] and hidden not in ctx["hook"], ctx["hook"]


_BROKEN = b"---\nname: project_broken\n  bad: [\n---\nx\n"
_FIXED = ("---\nname: project_broken\ndescription: where redis listens\ntype: project\nvisibility: private\n"
          "created: 2026-11-01\nmodified: 2026-11-01T00:00:00Z\n---\n{body} is on port 6380.\n")


def _skipped_files(env: Env) -> set[str]:
    import _sqlite3

    conn = _sqlite3.connect(cache_file(str(env.project_home), "memory"))
    try:
        return {str(r[0]) for r in conn.execute("SELECT file FROM skipped")}
    finally:
        conn.close()


@given(parsers.parse('a memory file "{name}" that does not parse, named by the next session start'))
def broken_file(env: Env, ctx: dict[str, Any], name: str) -> None:
    (env.harness / name).write_bytes(_BROKEN)
    result = env.run("inject")
    assert result.code == 0 and f"do not parse: {name}" in result.out, result
    assert _skipped_files(env) == {name}
    ctx["index inode"] = Path(cache_file(str(env.project_home), "memory")).stat().st_ino


@when(parsers.parse('a memory "{name}" saying "{body}" is added'))
def add_memory(env: Env, name: str, body: str) -> None:
    _add(env, name, "-d", "gamma deploys use the red script", "-b", body)


@then(parsers.parse('the search index was updated in place, "{name}" still left out'))
def updated_in_place(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert Path(cache_file(str(env.project_home), "memory")).stat().st_ino == ctx["index inode"]
    assert _skipped_files(env) == {name}


@when(parsers.parse('I fix "{name}" in place, without changing its directory, so that it says "{body}"'))
def fix_in_place(env: Env, name: str, body: str) -> None:
    before = (env.harness.stat().st_mtime_ns, env.harness.stat().st_ctime_ns)
    with open(env.harness / name, "r+b") as fh:
        fh.write(_FIXED.format(body=body).encode())
        fh.truncate()
    assert (env.harness.stat().st_mtime_ns, env.harness.stat().st_ctime_ns) == before


@given("a settled config file in the home")
def settled_config(env: Env) -> None:
    (env.home / "config.yaml").write_text("inject: {max_files: 6}\n", encoding="utf-8")
    time.sleep(2.1)


@given("a second installation of memfold beside this one")
def second_install(ctx: dict[str, Any], tmp_path: Path) -> None:
    ctx["installs"] = [REPO, second_installation(tmp_path)]


@given(parsers.parse('a private memory "{name}" about "{about}" holding a token'))
def private_token(env: Env, name: str, about: str) -> None:
    _add(env, name, "-d", about, "-b", f"{about} uses the token ghp_{'a1B2' * 9}")


@when("each installation runs Claude Code's prompt hook twice, taking turns, each run in a new session")
def hooks_taking_turns(env: Env, ctx: dict[str, Any]) -> None:
    runs = []
    for i in range(4):
        hook = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "alpha blue script",
                           "cwd": str(env.project), "session_id": f"turns-{i}"})
        stdin = env.home.parent / "hook.json"
        stdin.write_text(hook, encoding="utf-8")
        runs.append(imported_by(ctx["installs"][i % 2], *env.args("inject", "--format", "claude-hook"), stdin=stdin))
    ctx["runs"] = runs


@then("only the very first run loaded the privacy rules")
def rules_loaded_once(ctx: dict[str, Any]) -> None:
    assert ["pipeline.privacy.engine" in run for run in ctx["runs"]] == [True, False, False, False]


@then("the hook context still shows the token masked")
def token_masked(env: Env) -> None:
    context = _hook(env, "UserPromptSubmit", "alpha blue script")
    assert "[redacted: " in context and "a1B2a1B2" not in context


@then("each installation's first run validated the config and its second imported neither YAML nor pydantic")
def validated_once(ctx: dict[str, Any]) -> None:
    first, second = ctx["runs"][:2], ctx["runs"][2:]
    assert all({"pydantic", "yaml"} <= run for run in first)
    assert not any({"pydantic", "yaml"} & run for run in second)


@then("the home's cache holds a validated config for each installation")
def cache_per_install(env: Env, ctx: dict[str, Any]) -> None:
    for install in ctx["installs"]:
        cached = json.loads(Path(config_cache(env.home, str(install / "pipeline"))).read_text(encoding="utf-8"))
        assert cached["value"]["values"]["inject"]["max_files"] == 6
