"""Step definitions for features/global.feature and features/everyday.feature."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import REPO, Env, Result
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("global.feature", "everyday.feature")

FAKE_EDITOR = r'''
import pathlib, sys
mode, path = sys.argv[1], pathlib.Path(sys.argv[-1])
count_file = path.parent / ("count-" + mode)
count = int(count_file.read_text()) if count_file.exists() else 0
count_file.write_text(str(count + 1))
text = path.read_text()
head, sep, body = text.partition("\n---\n")
if mode == "describe":
    lines = [l if not l.startswith("description:") else "description: " + sys.argv[2] for l in head.split("\n")]
    path.write_text("\n".join(lines) + sep + body)
elif mode == "break":
    path.write_text(body)
elif mode == "break-then-fix":
    saved = path.parent / "original-head"
    if count == 0:
        saved.write_text(head + sep)
        path.write_text(body)
    else:
        path.write_text(saved.read_text() + "fixed on the second try\n")
elif mode == "slack":
    path.write_text(text + "token xoxb-" + "2849301756" + "-" + "7730194628" + "-" + "aB3dE5gH7jK9mN1pQ3sT5vW7" + "\n")
'''


def _project(tmp_path: Path, name: str) -> Env:
    project = tmp_path / name
    if not project.exists():
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    return Env(home=tmp_path / "home", project=project)


@given(parsers.parse('a global memory "{name}" with description "{description}"'))
def global_memory(env: Env, name: str, description: str) -> None:
    assert env.run("add", name, "--global", "-d", description, "-t", "user").code == 0


@given(parsers.parse('in project "{project}" the memory "{name}" with description "{description}"'))
def project_memory(tmp_path: Path, project: str, name: str, description: str) -> None:
    assert _project(tmp_path, project).run("add", name, "-d", description, "-t", "user").code == 0


@when(parsers.parse('I inject context in project "{project}"'))
def inject_in(tmp_path: Path, ctx: dict[str, Any], project: str) -> None:
    result = _project(tmp_path, project).run("inject", "--format", "json")
    assert result.code == 0, result.err
    ctx["injected"] = result.json()["text"]


@then(parsers.parse('the injected block lists "{name}" from the global store'))
def lists_global(ctx: dict[str, Any], name: str) -> None:
    assert f"- {name} [global," in ctx["injected"]


@then(parsers.parse('the injected block mentions "{text}"'))
def injected_mentions(ctx: dict[str, Any], text: str) -> None:
    assert text in ctx["injected"]


@then(parsers.parse('the injected block does not mention "{text}"'))
def injected_lacks(ctx: dict[str, Any], text: str) -> None:
    assert text not in ctx["injected"]


@then(parsers.parse('no project mirror holds "{name}"'))
def no_mirror_holds(env: Env, name: str) -> None:
    assert not list(env.home.parent.rglob(f".memory/{name}"))
    assert (env.home / "global" / "memory" / name).is_file()


def _edit_with_tty(env: Env, editor_args: list[str], answers: str) -> Result:
    script = env.home.parent / "fake_editor.py"
    script.write_text(FAKE_EDITOR)
    editor = " ".join([sys.executable, str(script), *editor_args])
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", *env.args("edit", "project_ci")], stdin=slave,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO), "EDITOR": editor, "VISUAL": ""})
    os.close(slave)
    # Answers wait in the terminal's input queue until the prompt reads them.
    for answer in answers:
        os.write(master, answer.encode() + b"\n")
    out, err = proc.communicate(timeout=60)
    os.close(master)
    return Result(proc.returncode, out.decode(), err.decode())


@when(parsers.parse('I edit "{name}" with an editor that sets the description to "{text}"'))
def edit_describe(env: Env, ctx: dict[str, Any], name: str, text: str) -> None:
    ctx["result"] = _edit_with_tty(env, ["describe", f"'{text}'"], "")


@when(parsers.parse('I edit "{name}" with an editor that removes the frontmatter and then abort'))
def edit_break(env: Env, ctx: dict[str, Any], name: str) -> None:
    ctx["result"] = _edit_with_tty(env, ["break"], "a")


@when(parsers.parse('I edit "{name}" with an editor that first breaks the file, then fixes it, answering re-open'))
def edit_break_fix(env: Env, ctx: dict[str, Any], name: str) -> None:
    ctx["result"] = _edit_with_tty(env, ["break-then-fix"], "r")


@when(parsers.parse('I edit "{name}" with an editor that adds a Slack token and then abort'))
def edit_slack(env: Env, ctx: dict[str, Any], name: str) -> None:
    ctx["result"] = _edit_with_tty(env, ["slack"], "a")


@then(parsers.parse('the private copy of "{name}" says "{text}"'))
def private_says(env: Env, name: str, text: str) -> None:
    assert text in (env.harness / name).read_text()


@then(parsers.parse('the newest receipt is for command "{command}"'))
def newest_receipt(env: Env, command: str) -> None:
    newest = sorted((env.project_home / "receipts").iterdir())[-1]
    assert json.loads(newest.read_text())["command"] == command


@then(parsers.parse('the body of "{name}" is "{body}"'))
def body_is(env: Env, name: str, body: str) -> None:
    assert (env.harness / name).read_text().split("\n---\n", 1)[1] == body + "\n"


@then("the private store holds no memory")
def holds_none(env: Env) -> None:
    assert [p.name for p in env.harness.iterdir()] == ["MEMORY.md"]
    assert [p.name for p in env.mirror.iterdir()] == []  # no index in a mirror without a memory file


@then(parsers.parse("the JSON has the keys {keys}"))
def json_keys(ctx: dict[str, Any], keys: str) -> None:
    data = ctx["result"].json()
    for key in (k.strip() for k in keys.split(",")):
        assert data[key], key


@given("the config file holds a worker with an empty command")
def broken_config(env: Env, ctx: dict[str, Any]) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    ctx["config"] = b"workers:\n  broken:\n    argv: []\n"
    (env.home / "config.yaml").write_bytes(ctx["config"])


@then("the config file is byte-identical to what was written")
def config_unchanged(env: Env, ctx: dict[str, Any]) -> None:
    assert (env.home / "config.yaml").read_bytes() == ctx["config"]
