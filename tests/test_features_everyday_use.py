"""Step definitions for features/everyday_use.feature."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import REPO, Env, Result
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline.store.memory import parse_memory

scenarios("everyday_use.feature")

BROKEN = {
    "invalid YAML": b"---\nname: [unclosed\ndescription: bad\n---\nbody\n",
    "no frontmatter": b"just text, no frontmatter\n",
    "an unknown type": b"---\ndescription: a fact\ntype: fact\n---\nbody\n",
    "no description": b"---\nname: no description\n---\nbody\n",
    "bytes that are not UTF-8": b"---\ndescription: caf\xe9\n---\nbody\n",
}


@given(parsers.parse('a broken memory file "{name}" with {problem}'))
def broken_file(env: Env, ctx: dict[str, Any], name: str, problem: str) -> None:
    (env.harness / name).write_bytes(BROKEN[problem])
    ctx.setdefault("bytes", {})[name] = BROKEN[problem]


@given("I remember the receipts")
def remember_receipts(env: Env, ctx: dict[str, Any]) -> None:
    ctx["receipts"] = sorted(p.name for p in (env.project_home / "receipts").iterdir())


@given(parsers.parse('a Claude Code memory dir with a file "{file}" named "{name}" described as "{description}"'))
def claude_dir(tmp_path: Path, ctx: dict[str, Any], file: str, name: str, description: str) -> None:
    source = tmp_path / "claude-memory"
    source.mkdir()
    # Claude Code writes the frontmatter as text: the values exactly as the model typed them.
    (source / file).write_text(f"---\nname: {name}\ndescription: {description}\ntype: feedback\n---\nbody\n",
                               encoding="utf-8")
    (source / "MEMORY.md").write_text(f"- [{name}]({file}) — {description}\n", encoding="utf-8")
    ctx["source"] = source


@when("I import that Claude Code memory dir")
def import_claude(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = env.run("import", "claude", str(ctx["source"]))


@when(parsers.parse('I delete the mirror copy of "{name}"'))
def delete_mirror_copy(env: Env, name: str) -> None:
    (env.mirror / name).unlink()


@when(parsers.parse('I run "--json undo <last undone run>"'))
def undo_again(env: Env, ctx: dict[str, Any]) -> None:
    receipts = sorted((env.project_home / "receipts").iterdir())
    first = json.loads(receipts[-2].read_text())["runId"]
    ctx["result"] = env.run("--json", "undo", first)


@when("I run the printed cron line")
def run_cron_line(env: Env, ctx: dict[str, Any]) -> None:
    assert not (env.home / "logs").exists()
    line = env.run("--json", "schedule", "--cron").json()["crontab"]
    command = line.split(" ", 5)[5].replace("\\%", "%")
    proc = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=120, cwd="/",
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    ctx["result"] = Result(proc.returncode, proc.stdout, proc.stderr)


@then("it exits 0 and the cron log holds a line for this project")
def cron_logged(env: Env, ctx: dict[str, Any]) -> None:
    assert ctx["result"].code == 0, ctx["result"].err
    lines = (env.home / "logs" / "consolidate.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["project"] == str(env.project)


@then(parsers.parse('the JSON error code is "{code}"'))
def json_code(ctx: dict[str, Any], code: str) -> None:
    assert ctx["result"].json()["code"] == code, ctx["result"].out


@then(parsers.parse('the private copy of "{name}" is unchanged'))
def private_unchanged(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert hashlib.sha256((env.harness / name).read_bytes()).digest() == hashlib.sha256(ctx["bytes"][name]).digest()


@then(parsers.parse('the private store does not hold "{name}"'))
def harness_lacks(env: Env, name: str) -> None:
    assert not (env.harness / name).exists()


@then(parsers.parse('the private copy of "{file}" has the name "{name}"'))
def has_name(env: Env, file: str, name: str) -> None:
    assert parse_memory((env.harness / file).read_bytes(), file).name == name


@then(parsers.parse('the private copy of "{file}" has the description "{description}"'))
def has_description(env: Env, file: str, description: str) -> None:
    assert parse_memory((env.harness / file).read_bytes(), file).description == description


@then(parsers.parse('the output names the full path of "{name}"'))
def names_full_path(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert str(env.harness / name) in ctx["result"].out


@then("no receipt was added")
def no_receipt(env: Env, ctx: dict[str, Any]) -> None:
    assert sorted(p.name for p in (env.project_home / "receipts").iterdir()) == ctx["receipts"]
