"""Step definitions for features/evidence.feature: cited code re-checked before use, and usage recorded."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from conftest import REPO, Env
from pytest_bdd import given, parsers, scenarios, then, when
from team_repo import git

from pipeline.store.citecheck import digest, normal_lines
from pipeline.store.memory import parse_memory, render_memory

scenarios("evidence.feature")

MAKEFILE = "all:\n\techo build\n\nserve:\n\tpython -m http.server 8080\n"
MARKS = ("[code changed since", "[cited file is gone", "[cited file moved")
FAKE = REPO / "tests" / "workers" / "fake_plan.py"


@pytest.fixture(autouse=True)
def _pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake worker imports the planner; in-process runs hand os.environ to its allowlist.
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def _git(env: Env, *args: str) -> str:
    return git(env.project, "-c", "user.name=Dev", "-c", "user.email=dev@example.org", *args).stdout


@given("the project's Makefile, committed, whose line 5 starts the server on port 8080")
def makefile(env: Env) -> None:
    (env.project / "Makefile").write_text(MAKEFILE)
    _git(env, "add", "Makefile")
    _git(env, "commit", "-q", "-m", "build")


@given(parsers.parse('the memory "{name}" saying the port is 8080, citing "{cite}"'))
def citing_memory(env: Env, ctx: dict[str, Any], name: str, cite: str) -> None:
    result = env.run("add", name, "-d", "the dev server listens on port 8080", "-b", "make serve starts it",
                     "--cite", cite)
    assert result.code == 0, result.err
    cited = parse_memory((env.harness / f"{name}.md").read_bytes()).evidence
    assert [c.where for c in cited] == [cite]
    assert cited[0].sha256 == digest(normal_lines(b"\tpython -m http.server 8080"))


@given("line 5 of the Makefile changes to port 9090")
@when("line 5 of the Makefile changes to port 9090")
def change_line(env: Env) -> None:
    (env.project / "Makefile").write_text(MAKEFILE.replace("8080", "9090"))


@when("two lines are inserted at the top of the Makefile")
def insert_above(env: Env) -> None:
    (env.project / "Makefile").write_text("# the build\n# of the app\n" + MAKEFILE)


@when("the Makefile is deleted")
def delete_file(env: Env) -> None:
    (env.project / "Makefile").unlink()


@when(parsers.parse('the Makefile is moved to "{target}" with git mv'))
def git_mv(env: Env, target: str) -> None:
    _git(env, "mv", "Makefile", target)


def _block(env: Env) -> str:
    result = env.run("inject")
    assert result.code == 0, result.err
    return result.out


@then(parsers.parse('the session block shows "{text}"'))
def block_shows(env: Env, text: str) -> None:
    block = _block(env)
    assert text in block, block
    # The mark stands before the memory's quoted text, where the model reads it.
    assert block.index(text) > block.index("project_dev-port.md"), block


@then(parsers.parse('the session block shows "{text}" and no mark'))
def block_unmarked(env: Env, text: str) -> None:
    block = _block(env)
    assert text in block and not any(mark in block for mark in MARKS), block


def _hook(env: Env, prompt: str) -> str:
    hook = {"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(env.project),
            "session_id": "evidence-session"}
    result = env.run("inject", "--format", "claude-hook", stdin=json.dumps(hook))
    assert result.code == 0, result
    return str(json.loads(result.out)["hookSpecificOutput"]["additionalContext"])


@then(parsers.parse('the prompt hook for "{prompt}" shows "{text}"'))
def hook_shows(env: Env, prompt: str, text: str) -> None:
    context = _hook(env, prompt)
    assert text in context and "make serve starts it" in context, context


@when(parsers.parse('the prompt hook for "{prompt}" runs'))
def hook_runs(env: Env, prompt: str) -> None:
    assert "project_dev-port.md" in _hook(env, prompt)


def _status(env: Env) -> dict[str, Any]:
    result = env.run("status", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    return data


@then(parsers.parse('status lists "{name}" as drifted, with the lines "{old}" and "{new}"'))
def status_drift_diff(env: Env, name: str, old: str, new: str) -> None:
    drifted = {d["file"]: d for d in _status(env)["drifted"]}
    assert list(drifted) == [name]
    diff = drifted[name]["evidence"][0]["diff"]
    assert old in diff and new in diff, diff
    human = env.run("status").out
    assert f"drifted      {name}: [code changed since this was written: Makefile:5]" in human, human


@then(parsers.parse('status lists "{name}" as drifted'))
def status_drift(env: Env, name: str) -> None:
    assert [d["file"] for d in _status(env)["drifted"]] == [name]


@then("status lists no drifted memory")
def status_clean(env: Env) -> None:
    assert _status(env)["drifted"] == []


def _cites(env: Env) -> list[Any]:
    return list(parse_memory((env.harness / "project_dev-port.md").read_bytes()).evidence)


@then(parsers.parse('the memory cites "{where}"'))
def cites(env: Env, where: str) -> None:
    assert [c.where for c in _cites(env)] == [where]
    mirror_free = not (env.mirror / "project_dev-port.md").exists()
    assert mirror_free  # a private memory: its citation never reaches the mirror


@then(parsers.parse('the memory\'s citation of "{where}" holds the hash of "{line}"'))
def cite_hash(env: Env, where: str, line: str) -> None:
    (cite,) = _cites(env)
    assert cite.where == where and cite.sha256 == digest(normal_lines(line.encode()))


@then(parsers.parse('the review lists "{name}" with the status "{status}"'))
def reviewed(ctx: dict[str, Any], name: str, status: str) -> None:
    result = ctx["result"]
    assert result.code == 0, result.err
    items = json.loads(result.out)["memories"]
    assert [i["file"] for i in items] == [name]
    assert [e["status"] for e in items[0]["evidence"]] == [status]
    assert any(line.startswith("+") and "9090" in line for line in items[0]["evidence"][0]["diff"])


@then(parsers.parse('the plan gives "{name}" the verdict "{verdict}" with "{where}" in its reason'))
def plan_verdict(env: Env, ctx: dict[str, Any], name: str, verdict: str, where: str) -> None:
    assert ctx["result"].code == 0, ctx["result"].err
    runs = sorted((env.project_home / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    plan = json.loads((runs[-1] / "plan.json").read_text())
    entry = next(s for s in plan["staleness"] if s["name"] == name)
    assert entry["verdict"] == verdict and where in entry["reason"], entry
    signals = json.loads((runs[-1] / "signals.json").read_text())
    assert signals["evidence"][name][0]["status"] == "changed"
    assert "`Makefile:5`: changed" in (runs[-1] / "task.md").read_text()


@then(parsers.parse('"{name}" is still in the private store'))
def still_there(env: Env, name: str) -> None:
    assert (env.harness / name).is_file()


@given(parsers.parse('a worker whose plan rewrites "{name}" citing "{path}"'))
def citing_worker(env: Env, ctx: dict[str, Any], name: str, path: str) -> None:
    from pipeline.store.evidence import Cite

    memory = parse_memory((env.harness / name).read_bytes(), name)
    content = render_memory(memory.with_changes(evidence=(*memory.evidence, Cite(path)))).decode()
    edits = [["append", ["operations"], {"name": name, "kind": "rewrite", "classification": "private",
                                         "content": content}]]
    workers = {"fake": {"argv": [sys.executable, str(FAKE), "{run_dir}", "patch", json.dumps(edits)],
                        "timeout": 60, "env": ["PYTHONPATH"]}}
    (env.home / "config.yaml").write_text(json.dumps({"workers": workers}) + "\n")
    ctx["before"] = env.snapshot()
    ctx["receipts"] = len(list((env.project_home / "receipts").iterdir()))


@then(parsers.parse('the plan is refused with "{code}" and nothing is written'))
def refused(env: Env, ctx: dict[str, Any], code: str) -> None:
    result = ctx["result"]
    assert result.code == 1, (result.out, result.err)
    body = json.loads(result.out)
    assert body["ok"] is False and body["exitCode"] == 1
    assert code in result.out
    assert env.snapshot() == ctx["before"]
    assert len(list((env.project_home / "receipts").iterdir())) == ctx["receipts"]


@then(parsers.parse('the usage log in the private home records "{injected}" injected and "{searched}" searched'))
def usage_logged(env: Env, ctx: dict[str, Any], injected: str, searched: str) -> None:
    from pipeline.store import usage

    assert searched in ctx["result"].out, ctx["result"]
    known = usage.load(str(env.project_home))
    assert "inject" in known.last[injected] and "search" in known.last[searched], known.last
    assert (env.project_home / usage.NAME).stat().st_mode & 0o777 == 0o600


@then("nothing in the mirror, the chain heads or git's view of the project mentions the usage")
def usage_private(env: Env) -> None:
    log = (env.project_home / "usage.log").read_text()
    assert log
    for path in env.project.rglob("*"):
        if ".git" in path.relative_to(env.project).parts or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        assert "usage" not in path.name and not any(line in text for line in log.splitlines()[1:]), path
    changed = _git(env, "status", "--porcelain", "--untracked-files=all")
    assert "usage" not in changed
    safe = (env.mirror / "project_ci.md").read_text()
    assert "inject" not in safe and "search" not in safe.split("---")[1]


@given("the project is trusted")
def trusted(env: Env) -> None:
    assert env.run("trust").code == 0


@given(parsers.parse('a teammate\'s safe memory "{name}" in the mirror citing "{cite}"'))
def teammate_memory(env: Env, name: str, cite: str) -> None:
    from pipeline.evidence.cite import from_specs
    from pipeline.store.memory import Memory

    memory = Memory("Team port", "a teammate says the dev server listens on 8080", visibility="safe",
                    created="2026-12-01", modified="2026-12-01T00:00:00Z", body="from a teammate\n",
                    evidence=from_specs(env.project, [cite]))
    env.mirror.mkdir(exist_ok=True)
    (env.mirror / name).write_bytes(render_memory(memory))


@then(parsers.parse('the private store\'s "{name}" cites "{where}"'))
def adopted_cites(env: Env, ctx: dict[str, Any], name: str, where: str) -> None:
    assert ctx["result"].code == 0, ctx["result"].err
    assert [c.where for c in parse_memory((env.harness / name).read_bytes()).evidence] == [where]
    assert (env.harness / name).read_bytes() == (env.mirror / name).read_bytes()
