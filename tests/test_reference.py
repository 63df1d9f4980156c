"""The reference pages generated from the code: every key, rule, command and option, nothing made up."""

from __future__ import annotations

import json
import re

import yaml

from pipeline.commands import reference
from pipeline.commands.registry import root_command
from pipeline.commands.spec import COMMANDS
from pipeline.resources import data_dir


def _keys(schema: dict[str, object], defs: dict[str, object], prefix: str = "") -> dict[str, object]:
    """Every leaf key of a schema with its default (the reference's own walk, done again by hand)."""
    out: dict[str, object] = {}
    if "$ref" in schema:
        schema = defs[str(schema["$ref"]).rsplit("/", 1)[-1]]  # type: ignore[assignment]
    for key, sub in schema.get("properties", {}).items():  # type: ignore[attr-defined]
        ref = sub.get("$ref")
        if ref and "properties" in defs[ref.rsplit("/", 1)[-1]]:  # type: ignore[operator]
            out.update(_keys(sub, defs, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = sub.get("default")
    return out


def test_the_configuration_reference_lists_every_key_with_its_default() -> None:
    schema = json.loads((data_dir("schemas") / "config.schema.json").read_text())
    page = reference.config_page()
    keys: dict[str, object] = {}
    for section, sub in schema["properties"].items():
        node = sub["additionalProperties"] if section == "workers" else sub
        keys.update(_keys(node, schema["$defs"], "workers.NAME." if section == "workers" else f"{section}."))
    assert len(keys) > 20
    for key, default in keys.items():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{key}` |"))
        if default is not None:
            assert f"`{json.dumps(default)}`" in row, key
        assert row.rstrip(" |").split("|")[-1].strip(), f"{key} has no description"
    assert len(re.findall(r"^\| `", page, re.M)) == len(keys)


def test_the_privacy_rule_reference_lists_every_shipped_rule_once() -> None:
    rules = yaml.safe_load((data_dir("schemas") / "privacy-rules.yaml").read_text())["rules"]
    page = reference.privacy_rules_page()
    for rule in rules:
        assert page.count(f"| `{rule['id']}` |") == 1, rule["id"]
    assert len(re.findall(r"^\| `", page, re.M)) == len(rules)
    assert "pattern" not in page.lower()


def test_the_command_reference_has_every_option_of_the_command_table_and_the_fast_inject_parser() -> None:
    page = reference.commands_page(root_command())
    for name, command in COMMANDS.items():
        section = page[page.index(f"### memfold {name}\n"):]
        section = section[:section.index("\n### ", 1)] if "\n### " in section[1:] else section
        for param in command.params:
            shown = param.flags[0] if param.flags else (param.metavar or param.dest).upper().rstrip("_")
            assert f"`{shown}`" in section, (name, shown)
    inject = page[page.index("### memfold inject\n"):]
    assert "`--prompt`" in inject[:inject.index("\n### ", 1)]


def test_each_command_with_a_guide_page_links_it() -> None:
    page = reference.commands_page(root_command())
    assert "Guide: [Consolidation](../consolidation.md)" in page
