"""Step definitions for features/privacy_rules.feature (shared steps come from conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when

scenarios("privacy_rules.feature")


@when(parsers.parse('I add a safe memory "{name}" whose body says "{text}"'))
def add_safe(env: Env, ctx: dict[str, Any], name: str, text: str) -> None:
    ctx["result"] = env.run("add", name, "-d", "a note", "--visibility", "safe", "-b", text)


@given(parsers.parse('the private memory "{name}" whose body says "{text}"'))
def add_private(env: Env, name: str, text: str) -> None:
    result = env.run("add", name, "-d", "a note", "--visibility", "private", "-b", text)
    assert result.code == 0, result.err


@then(parsers.parse('the error names the rule "{rule}"'))
def error_names_rule(ctx: dict[str, Any], rule: str) -> None:
    err = ctx["result"].err
    assert f"{rule} (" in err and "line " in err, err


@then(parsers.parse('the error does not show "{value}"'))
def error_hides(ctx: dict[str, Any], value: str) -> None:
    result = ctx["result"]
    assert value not in result.err and value not in result.out


@then(parsers.parse('the output does not show "{value}"'))
def output_hides(ctx: dict[str, Any], value: str) -> None:
    result = ctx["result"]
    assert value not in result.out and value not in result.err


@when("inject runs as its own process")
def inject_process(env: Env, ctx: dict[str, Any]) -> None:
    ctx["result"] = env.spawn("inject", "--query", "deploy", env={"PYTHONPROFILEIMPORTTIME": "1"})


@then("that process imported neither phonenumbers nor stdnum")
def no_pii_imports(ctx: dict[str, Any]) -> None:
    imported = [line.rsplit("|", 1)[-1].strip() for line in ctx["result"].err.splitlines()
                if line.startswith("import time:")]
    assert "re2" in imported, "the rules did not run"
    assert not [m for m in imported if m.split(".")[0] in ("phonenumbers", "stdnum")]


@given(parsers.parse('someone wrote the mirror file "{name}" by hand, saying "{text}"'))
def hand_written(env: Env, name: str, text: str) -> None:
    (env.mirror / f"{name}.md").write_text(f"---\ndescription: deploy notes\nvisibility: safe\n---\n{text}\n")


@given(parsers.parse('someone wrote the mirror file "{name}" by hand with the frontmatter "{front}", saying:'))
def hand_written_with_frontmatter(env: Env, name: str, front: str, docstring: str) -> None:
    lines = "\n".join(part.strip() for part in front.split(";"))
    (env.mirror / f"{name}.md").write_text(f"---\n{lines}\nvisibility: safe\n---\n{docstring}\n")


def _rules_cache(env: Env) -> Any:
    from pipeline.privacy import loader

    return Path(loader.rules_cache(env.home))


@given("the home's privacy rules cache was written for another copy of the rules file")
def stale_rules_cache(env: Env) -> None:
    import json

    from pipeline.privacy import loader
    from pipeline.resources import data_dir
    from pipeline.store import filecache

    key = list(filecache.identity(data_dir("schemas") / loader.RULES_FILE) or [])
    key[2] += 1  # another inode: the file memfold shipped before an upgrade
    cache = _rules_cache(env)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "value": {"version": 1, "rules": [], "allowlist": []}}))


@when("a consolidation runs as its own process")
def consolidation_process(env: Env, ctx: dict[str, Any]) -> None:
    ctx["process"] = env.spawn("--json", "consolidate", "--no-context")


@then("that process exited 0")
def process_exited_0(ctx: dict[str, Any]) -> None:
    assert ctx["process"].code == 0, ctx["process"].err


@then("the home's privacy rules cache holds the shipped rules under the shipped file's identity")
def rules_cache_current(env: Env) -> None:
    import json

    import yaml

    from pipeline.privacy import loader
    from pipeline.resources import data_dir
    from pipeline.store import filecache

    shipped = data_dir("schemas") / loader.RULES_FILE
    cached = json.loads(_rules_cache(env).read_text())
    assert cached["key"] == json.loads(json.dumps(filecache.identity(shipped)))
    assert cached["value"] == yaml.safe_load(shipped.read_text(encoding="utf-8"))
