"""Runs features/consolidation-trust.feature against the real CLI, the built-in planner and a fake worker."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, _last_run
from pytest_bdd import given, parsers, scenarios, then

from pipeline.bench.synth import build_memories
from pipeline.store.memory import INDEX_NAME, parse_memory, render_memory

pytestmark = pytest.mark.integration

scenarios("consolidation-trust.feature")

FAKE = REPO / "tests" / "workers" / "fake_plan.py"


@pytest.fixture(autouse=True)
def _pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def _write(env: Env, name: str, title: str, description: str, body: str, *, visibility: str = "private",
           modified: str = "2026-10-01", mtype: str = "project") -> bytes:
    data = (f"---\nname: {title}\ndescription: {description}\ntype: {mtype}\nvisibility: {visibility}\n"
            f"created: 2026-09-01\nmodified: {modified}T09:00:00Z\n---\n{body}\n").encode()
    (env.harness / name).write_bytes(data)
    if visibility == "safe":
        (env.mirror / name).write_bytes(data)
    return data


def _start(env: Env, ctx: dict[str, Any], config: dict[str, Any] | None = None) -> None:
    assert env.run("init").code == 0
    if config:
        (env.home / "config.yaml").write_text(json.dumps(config) + "\n")


def _seeded(env: Env, ctx: dict[str, Any]) -> None:
    ctx["before"] = env.snapshot()
    ctx["files"] = {p.name: p.read_bytes() for p in env.harness.iterdir() if p.name != INDEX_NAME}


def _summary(ctx: dict[str, Any]) -> dict[str, Any]:
    value = json.loads(ctx["result"].out)
    assert isinstance(value, dict)
    return value


def _plan(env: Env) -> dict[str, Any]:
    from pipeline.planner.planjson import expanded

    plan = json.loads((_last_run(env) / "plan.json").read_bytes())
    return expanded(plan, plan["selected"])


def _memories(env: Env) -> dict[str, Any]:
    return {p.name: parse_memory(p.read_bytes(), p.name) for p in env.harness.iterdir() if p.name != INDEX_NAME}


def _index_lines(root: Path) -> list[str]:
    return [line for line in (root / INDEX_NAME).read_text().splitlines() if line.startswith("- ")]


# --- stores -------------------------------------------------------------------------------------


@given("memories about the hosts web01 and web02 and the apps app1 and app2")
def twins(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    _write(env, "project_web01-port.md", "Web01 port", "Host web01 uses port 8080 behind nginx",
           "Host web01 uses port 8080 behind nginx.", visibility="safe", modified="2026-10-01")
    _write(env, "project_web02-port.md", "Web02 port", "Host web02 uses port 9090 behind nginx",
           "Host web02 uses port 9090 behind nginx.", visibility="safe", modified="2026-10-05")
    _write(env, "project_app1-node.md", "app1 node", "app1 requires Node 18", "app1 requires Node 18.",
           modified="2026-10-01")
    _write(env, "project_app2-node.md", "app2 node", "app2 requires Node 20", "app2 requires Node 20.",
           modified="2026-10-05")
    _seeded(env, ctx)


@given(parsers.parse('the safe memory "API port" saying 8080 and a newer one saying 9090 since the proxy change'))
def api_port(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    (env.project / "config").mkdir()
    (env.project / "config" / "api.yaml").write_text("port: 9090\n")
    _write(env, "project_api-port.md", "API port", "API port is 8080",
           "The API listens on 8080 (see config/api.yaml).\nHealth checks hit /healthz.", visibility="safe",
           modified="2026-10-01")
    _write(env, "project_api-port-2.md", "API port", "API port is 9090 since the proxy change",
           "The API listens on 9090 since the proxy change (see config/api.yaml).", visibility="safe",
           modified="2026-10-08")
    _seeded(env, ctx)


@given(parsers.parse('two safe memories titled "{title}", an older saying "{older}" and a newer saying "{newer}"'))
def one_word_apart(env: Env, ctx: dict[str, Any], title: str, older: str, newer: str) -> None:
    _start(env, ctx)
    _write(env, "project_ports.md", title, older, f"- {older}", visibility="safe", modified="2026-10-01")
    _write(env, "project_ports-2.md", title, newer, f"- {newer}", visibility="safe", modified="2026-10-08")
    _seeded(env, ctx)


@given(parsers.parse('two memories titled "Deploy notes", one for web01 and one for web02'))
def same_title(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    _write(env, "project_deploy-notes.md", "Deploy notes", "web01 deploys with the blue green script",
           "- web01 deploys with the blue green script\n- web01 drains connections first", modified="2026-10-01")
    _write(env, "project_deploy-notes-2.md", "Deploy notes", "web02 deploys with a rolling restart",
           "- web02 deploys with a rolling restart\n- web02 needs the maintenance page", modified="2026-10-03")
    _seeded(env, ctx)


@given("a safe memory, a private near copy that says more, and a private exact copy of another safe memory")
def mixed(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    _write(env, "project_staging-access.md", "Staging access", "staging is reached through the bastion host",
           "Connect with the ops ssh config.", visibility="safe", modified="2026-03-03")
    _write(env, "project_staging-access-notes.md", "Staging access notes",
           "staging is reached through the bastion host",
           "Connect with the ops ssh config.\nMy bastion account is on the second list.", modified="2026-09-03")
    _write(env, "project_code-owners.md", "Code owners", "the codeowners file decides who reviews each directory",
           "Update it when a team takes over a directory.", visibility="safe", modified="2026-03-04")
    _write(env, "project_code-owners-copy.md", "Code owners copy",
           "the codeowners file decides who reviews each directory",
           "Update it when a team takes over a directory.", modified="2026-09-04")
    _seeded(env, ctx)


@given("two duplicate memories whose descriptions differ")
def described(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    _write(env, "project_shop-cache.md", "Shop cache", "product pages cached in redis, keyed by xylophone sku",
           "- product pages are cached in redis for five minutes\n- cache keys start with shop product",
           modified="2026-02-01")
    _write(env, "project_shop-cache-new.md", "Shop cache", "Product pages are cached in redis for five minutes",
           "- product pages are cached in redis for five minutes\n- cache keys start with shop product",
           modified="2026-06-01")
    _seeded(env, ctx)


@given(parsers.parse("{count:d} distinct memories sharing one topic word and an index bound of {lines:d} lines"))
def crowded(env: Env, ctx: dict[str, Any], count: int, lines: int) -> None:
    _start(env, ctx, {"limits": {"index_lines": lines}})
    facts = ["retries failed calls three times", "writes every change to the audit table", "has a nightly job",
             "owns the invoice feature flag", "pages the oncall after five errors", "keeps a dead letter queue",
             "exports request metrics", "is only reachable through the vpn", "caches lookups for a minute",
             "reads from a replica for reports"]
    teams = ["red", "blue", "green"]
    for i in range(count):
        fact, team = facts[i % len(facts)], teams[i // len(facts)]
        _write(env, f"project_billing-{team}-{i:02d}.md", f"Billing {team} {i}",
               f"the billing {team} service {fact}", f"- The billing {team} service {fact}.",
               modified=f"2026-{1 + i % 9:02d}-{1 + i % 28:02d}")
    ctx["oldest"] = "project_billing-red-00.md"
    _seeded(env, ctx)


@given("a store with a duplicate pair, a safe memory and a project memory that names no file")
def faulty_store(env: Env, ctx: dict[str, Any]) -> None:
    _start(env, ctx)
    _write(env, "project_lint.md", "Lint", "ruff runs with the settings in pyproject.toml",
           "Run ruff check before every commit.", modified="2026-03-01")
    _write(env, "project_lint-again.md", "Lint again", "ruff runs with the settings in pyproject.toml",
           "Run ruff check before every commit.", modified="2026-06-01")
    _write(env, "feedback_short.md", "Short answers", "keep answers short and skip the preamble",
           "No preamble.", visibility="safe", mtype="feedback")
    _write(env, "project_release-day.md", "Release day", "releases are cut every second tuesday",
           "Tag after the smoke tests pass.", modified="2026-05-01")
    _seeded(env, ctx)


_FAULTS: dict[str, Any] = {
    "deletes the duplicate without naming a successor": [["del", ["operations", {"name": "project_lint.md"}, "into"]]],
    "deletes the duplicate into a memory that will not exist":
        [["set", ["operations", {"name": "project_lint.md"}, "into"], "project_nowhere.md"]],
    "grounds the project memory with no observation":
        [["set", ["grounding", {"name": "project_release-day.md"}, "observations"], []]],
}


@given(parsers.parse("a worker whose plan {fault}"))
def faulty_worker(env: Env, ctx: dict[str, Any], fault: str) -> None:
    if fault == "makes the safe memory private without merging anything":
        content = (env.harness / "feedback_short.md").read_text().replace("visibility: safe", "visibility: private")
        edits: list[Any] = [["set", ["operations"], [{"name": "feedback_short.md", "kind": "rewrite",
                                                       "classification": "private", "content": content}]],
                            ["set", ["staleness", {"name": "project_lint.md"}, "verdict"], "KEEP"]]
    else:
        edits = _FAULTS[fault]
    worker = {"argv": [sys.executable, str(FAKE), "{run_dir}", "patch", json.dumps(edits)], "timeout": 60,
              "env": ["PYTHONPATH"]}
    (env.home / "config.yaml").write_text(json.dumps({"workers": {"fake": worker}}) + "\n")
    ctx["before"] = env.snapshot()


@given(parsers.parse("a generated store of {count:d} memories and the default config"))
def generated(env: Env, ctx: dict[str, Any], count: int) -> None:
    _start(env, ctx)
    safe = 0
    for name, memory in build_memories(count).items():
        data = render_memory(memory)
        (env.harness / name).write_bytes(data)
        if memory.is_safe:
            (env.mirror / name).write_bytes(data)
            safe += 1
    ctx["mirror_files"] = safe
    _seeded(env, ctx)


# --- outcomes -----------------------------------------------------------------------------------


@then("every memory file is byte for byte as before")
def bytes_kept(env: Env, ctx: dict[str, Any]) -> None:
    assert {p.name: p.read_bytes() for p in env.harness.iterdir() if p.name != INDEX_NAME} == ctx["files"]


@then(parsers.parse("the private index lists {count:d} memories"))
def index_count(env: Env, count: int) -> None:
    assert len(_index_lines(env.harness)) == count


@then(parsers.parse("the mirror holds {count:d} memory files"))
def mirror_count(env: Env, count: int) -> None:
    names = [p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME]
    assert len(names) == count, names
    assert all((env.mirror / n).read_bytes() == (env.harness / n).read_bytes() for n in names)


@then(parsers.parse('"{name}" is gone from both roots'))
def gone(env: Env, name: str) -> None:
    assert not (env.harness / name).exists() and not (env.mirror / name).exists()


@then(parsers.parse('the plan deletes "{name}" as SUPERSEDED into "{successor}"'))
def superseded(env: Env, name: str, successor: str) -> None:
    plan = _plan(env)
    [op] = [o for o in plan["operations"] if o["name"] == name]
    assert op["kind"] == "delete" and op["into"] == successor
    assert {s["name"]: s["verdict"] for s in plan["staleness"]}[name] == "SUPERSEDED"


@then("no memory is deleted as SUPERSEDED")
def none_superseded(env: Env) -> None:
    plan = _plan(env)
    assert "SUPERSEDED" not in {s["verdict"] for s in plan["staleness"]}
    assert not any(o["kind"] == "delete" and o["reason"].startswith("SUPERSEDED") for o in plan["operations"])


@then("the summary lists no line as no longer carried")
def none_dropped(ctx: dict[str, Any]) -> None:
    assert not _summary(ctx)["dropped"]


@then(parsers.parse('one memory in both roots says "{first}" and "{second}"'))
def both_facts(env: Env, first: str, second: str) -> None:
    holders = [p.name for p in env.harness.glob("*.md") if p.name != INDEX_NAME
               and first in p.read_text() and second in p.read_text()]
    assert len(holders) == 1, holders
    assert (env.mirror / holders[0]).read_bytes() == (env.harness / holders[0]).read_bytes()


@then(parsers.parse('"{name}" still says "{kept}" and no longer says "{old}"'))
def carried(env: Env, name: str, kept: str, old: str) -> None:
    text = (env.harness / name).read_text()
    assert kept in text and old not in text


@then(parsers.parse('the private index has exactly one line titled "{title}"'))
def one_title(env: Env, title: str) -> None:
    assert sum(1 for line in _index_lines(env.harness) if line.startswith(f"- [{title}](")) == 1


@then(parsers.parse('the summary lists "{line}" as no longer carried by any memory'))
def dropped(env: Env, ctx: dict[str, Any], line: str) -> None:
    summary = _summary(ctx)
    assert line in summary["dropped"]["project_api-port.md"]
    receipt = json.loads((_last_run(env) / "post-receipt.json").read_bytes())
    assert receipt["outcome"]["dropped"] == summary["dropped"]
    assert receipt["outcome"]["visibilityChanges"] == 0


@then("no two memories share a title")
def titles_unique(env: Env) -> None:
    titles = [m.name.casefold() for m in _memories(env).values()]
    assert len(titles) == len(set(titles)), titles


@then("both deploy notes still hold their facts")
def deploy_facts(env: Env) -> None:
    memories = _memories(env)
    assert set(memories) == {"project_deploy-notes.md", "project_deploy-notes-2.md"}
    assert "web01 drains connections first" in memories["project_deploy-notes.md"].body
    assert "web02 needs the maintenance page" in memories["project_deploy-notes-2.md"].body


@then("the private near copy and its safe original are both kept unchanged")
def near_copy_kept(env: Env, ctx: dict[str, Any]) -> None:
    for name in ("project_staging-access.md", "project_staging-access-notes.md"):
        assert (env.harness / name).read_bytes() == ctx["files"][name]


@then("the private exact copy is merged into its safe original, which stays safe and unchanged")
def exact_copy_merged(env: Env, ctx: dict[str, Any]) -> None:
    assert not (env.harness / "project_code-owners-copy.md").exists()
    assert (env.harness / "project_code-owners.md").read_bytes() == ctx["files"]["project_code-owners.md"]
    op = next(o for o in _plan(env)["operations"] if o["name"] == "project_code-owners-copy.md")
    assert op["into"] == "project_code-owners.md"


@then(parsers.parse("the summary counts {count:d} visibility changes"))
def visibility_changes(ctx: dict[str, Any], count: int) -> None:
    assert _summary(ctx)["visibilityChanges"] == count


@then("one memory holds both descriptions")
def both_descriptions(env: Env) -> None:
    [memory] = _memories(env).values()
    assert "keyed by xylophone sku" in memory.body
    assert memory.description == "Product pages are cached in redis for five minutes"


@then("no memory was merged")
def nothing_merged(env: Env, ctx: dict[str, Any]) -> None:
    summary = _summary(ctx)
    assert summary["merged"] == [] and summary["deleted"] == [] and summary["rewritten"] == []
    bytes_kept(env, ctx)


@then(parsers.parse("the summary says the index stays over capacity by {lines:d} lines and names the oldest memory"))
def capacity_said(ctx: dict[str, Any], lines: int) -> None:
    note = _summary(ctx)["capacity"]
    assert f"over capacity by {lines} lines" in note and ctx["oldest"] in note and "memfold forget" in note


@then("the summary is a verified no-op")
def no_op(ctx: dict[str, Any]) -> None:
    summary = _summary(ctx)
    assert summary["noOp"] is True and summary["verified"] is True


@then("status says consolidation is not due and names the oldest memory")
def status_settled(env: Env, ctx: dict[str, Any]) -> None:
    status = _summary(ctx)
    assert status["due"] is False and "nothing more to merge" in status["dueReason"]
    oldest = ctx.get("oldest") or min(_memories(env).items(), key=lambda i: (i[1].modified or "", i[0]))[0]
    assert any(oldest in w and "memfold forget" in w for w in status["warnings"]), status["warnings"]


@then(parsers.parse('the error code is "{code}"'))
def error_code(ctx: dict[str, Any], code: str) -> None:
    assert _summary(ctx)["code"] == code


@then("the mirror still holds most of its memory files")
def mirror_not_collapsed(env: Env, ctx: dict[str, Any]) -> None:
    names = [p.name for p in env.mirror.iterdir() if p.name.endswith(".md") and p.name != INDEX_NAME]
    assert len(names) >= 0.8 * ctx["mirror_files"], (len(names), ctx["mirror_files"])
    assert all((env.mirror / n).read_bytes() == (env.harness / n).read_bytes() for n in names)


@then("every deleted memory names a successor that exists or has a time verdict")
def accounted(env: Env) -> None:
    plan = _plan(env)
    verdicts = {s["name"]: s["verdict"] for s in plan["staleness"]}
    after = set(_memories(env))
    deletes = [o for o in plan["operations"] if o["kind"] == "delete"]
    assert deletes
    for op in deletes:
        assert op.get("into") in after or verdicts[op["name"]] in ("DORMANT", "ONE-SHOT"), op["name"]
