"""The reference pages of the documentation, generated from the code so they cannot drift from it.

The command reference walks the typer app (built from ``spec`` and the command modules) as ``--help``
shows it; the configuration reference reads ``schemas/config.schema.json``; the error codes come from
``codes``; the privacy rules from the shipped ``schemas/privacy-rules.yaml``. The documentation site
builds them at build time (``docs/hooks.py``) and ``memfold help`` prints them from the same functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from typer import _click as click
from typer.core import TyperOption

from ..resources import data_dir
from . import pages
from .codes import cell, errors_page, exit_code_table
from .spec import PANEL_ORDER, PANELS

# The guide page of each command (its topic for `memfold help`); a command without one has only its
# reference entry. tests/test_docs.py checks that every page named here exists.
GUIDE_OF = {
    "init": "getting-started", "add": "memories", "update": "memories", "forget": "memories",
    "list": "memories", "show": "memories", "search": "memories", "edit": "memories", "rename": "memories",
    "clear": "memories", "status": "troubleshooting", "doctor": "troubleshooting", "recover": "troubleshooting",
    "path": "files", "import": "import-export", "export": "import-export", "sync": "team",
    "consolidate": "consolidation", "validate": "consolidation", "undo": "receipts", "schedule": "scheduling",
    "verify": "receipts", "audit": "receipts", "attest": "receipts", "report": "receipts",
    "mcp": "hosts/mcp", "trust": "hosts/index", "untrust": "hosts/index", "inject": "hosts/index",
    "hooks": "hosts/index", "mirror": "privacy", "config": "configuration", "bench": "performance",
    "demo": "getting-started", "help": "index",
}
# Commands the typer-free fast path parses on its own: their options live in that parser's help.
FAST_HELP_OF = {"inject": "pipeline.hosts.inject_args"}


def _md(text: str | None) -> str:
    """Help text as Markdown: paragraphs kept, lines of a paragraph joined."""
    paragraphs = re.split(r"\n\s*\n", (text or "").replace("\b", "").strip())
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _kind(param: click.Parameter) -> str:
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    name = getattr(annotation, "__name__", str(annotation))
    kind = {"str": "text", "Path": "path", "int": "integer", "float": "number", "bool": "flag"}.get(name, name)
    if str(annotation) == "list[str]":
        kind = "text, repeatable"
    elif str(annotation) == "list[pathlib.Path]":
        kind = "paths"
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None or high is not None:
        kind += f" ({'' if low is None else low}–{'' if high is None else high})"
    return kind


def _default(param: click.Parameter) -> str:
    if param.required:
        return "required"
    if isinstance(param, TyperOption) and param.is_flag:
        return f"`{param.secondary_opts[0]}`" if param.secondary_opts and not param.default else ""
    value = param.default
    return "" if value in (None, (), []) else f"`{value}`"


def _param_rows(command: click.Command) -> list[str]:
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        names = [*param.opts, *param.secondary_opts] if isinstance(param, TyperOption) else \
            [(param.metavar or param.name or "").upper()]
        rows.append(f"| {' '.join(f'`{n}`' for n in names)} | {_kind(param)} | {_default(param)} | "
                    f"{cell(getattr(param, 'help', None) or '')} |")
    return rows


def _fast_rows(module: str) -> list[str]:
    """The options of a fast-path command, read from the help text its own parser prints."""
    import importlib

    text: str = importlib.import_module(module).HELP
    rows: list[str] = []
    for line in text.splitlines():
        found = re.match(r"^  (--[a-z-]+)(?: (\S+))?\s{2,}(.*)$", line)
        if found:
            flag, value, help_ = found.groups()
            rows.append(f"| `{flag}` | {'flag' if value is None else value.lower()} | | {cell(help_)} |")
        elif rows and line.startswith("      "):
            rows[-1] = rows[-1][:-2] + " " + cell(line) + " |"
    return rows


def _title(page: str) -> str:
    """The title of a hand-written page (its first heading), by its path under docs/ without .md."""
    try:
        path = pages.docs_dir() / f"{page}.md"
    except FileNotFoundError:  # an installation without its pages
        return page
    title = pages.title_and_summary(path.read_text(encoding="utf-8"))[0] if path.is_file() else ""
    return title or page


def _usage(command: click.Command, path: list[str]) -> str:
    """The usage line, arguments in capitals as in the tables (typer writes ``{name}``)."""
    usage = " ".join(command.collect_usage_pieces(click.Context(command, info_name=" ".join(path))))
    usage = re.sub(r"\{([a-z_]+)\}", lambda m: m.group(1).upper(), usage)
    usage = re.sub(r"\[([a-z_]+)\]", lambda m: f"[{m.group(1).upper()}]", usage)
    return " ".join(["memfold", *path, usage])


def _command_section(command: click.Command, path: list[str]) -> list[str]:
    name = " ".join(path)
    lines = [f"### memfold {name}", "", _md(command.help), "", f"```\n{_usage(command, path)}\n```", ""]
    rows = _fast_rows(FAST_HELP_OF[name]) if name in FAST_HELP_OF else _param_rows(command)
    if rows:
        lines += ["| option or argument | value | default | description |", "|---|---|---|---|", *rows, ""]
    guide = GUIDE_OF.get(path[0])
    if guide and len(path) == 1:
        lines += [f"Guide: [{_title(guide)}](../{guide}.md)", ""]
    for sub_name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            lines += _command_section(sub, [*path, sub_name])
    return lines


def command_names(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every visible command and subcommand, as the words that name it."""
    out: list[tuple[str, ...]] = []
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            out += [(*path, name), *command_names(sub, (*path, name))]
    return out


def commands_page(root: click.Command) -> str:
    """The command reference of ``root`` (the full app's click command: ``registry.root_command``)."""
    lines = ["# Command reference", "",
             "Generated from the command-line table (`pipeline/commands/spec.py`) and the command modules, "
             "exactly as `memfold --help` and `memfold COMMAND --help` show them. `-h` is `--help` "
             "everywhere.", "", "## Global options", "",
             "Given before the command (`memfold --home DIR add ...`); `--json` and `--global` are also "
             "accepted after it.", "",
             "| option or argument | value | default | description |", "|---|---|---|---|",
             *_param_rows(root), "", "## Exit codes", "",
             "Every command uses the same exit codes ([all error codes](errors.md)):", "", exit_code_table()]
    commands: dict[str, click.Command] = getattr(root, "commands", {})
    for panel in PANEL_ORDER:
        lines += [f"## {panel.capitalize()}", ""]
        for name, command in commands.items():
            if PANELS.get(name) == panel and not command.hidden:
                lines += _command_section(command, [name])
    return "\n".join(lines)


def _schema_rows(prefix: str, schema: dict[str, Any], defs: dict[str, Any]) -> list[str]:
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    rows = []
    for key, sub in schema.get("properties", {}).items():
        if "$ref" in sub and "properties" in defs[sub["$ref"].rsplit("/", 1)[-1]]:
            rows += _schema_rows(f"{prefix}{key}.", sub, defs)
            continue
        kind = sub.get("type", "")
        if kind == "array":
            kind = f"list of {sub.get('items', {}).get('type', 'values')}"
        bounds = [f"≥ {sub['minimum']}" if "minimum" in sub else "", f"> {sub['exclusiveMinimum']}"
                  if "exclusiveMinimum" in sub else "", f"≤ {sub['maximum']}" if "maximum" in sub else "",
                  f"at least {sub['minItems']}" if "minItems" in sub else ""]
        default = "required" if key in schema.get("required", ()) else \
            f"`{json.dumps(sub['default'])}`" if "default" in sub else ""
        rows.append(f"| `{prefix}{key}` | {kind} | {default} | {' '.join(b for b in bounds if b)} | "
                    f"{cell(sub.get('description', ''))} |")
    return rows


def config_page() -> str:
    schema = json.loads((data_dir("schemas") / "config.schema.json").read_text(encoding="utf-8"))
    defs = schema.get("$defs", {})
    lines = ["# Configuration reference", "",
             "Generated from `schemas/config.schema.json`, the schema `memfold config check` validates "
             "`config.yaml` against. Every key is optional; where the file lives and how each section is "
             "used is in [Configuration](../configuration.md).", ""]
    for section, sub in schema["properties"].items():
        lines += [f"## {section}", ""]
        head = ["| key | type | default | range | description |", "|---|---|---|---|---|"]
        if section == "workers":
            lines += ["One entry per worker name (`workers.NAME`), used as `memfold consolidate --worker NAME`.", "",
                      *head, *_schema_rows("workers.NAME.", sub["additionalProperties"], defs), ""]
        else:
            lines += [*head, *_schema_rows(f"{section}.", sub, defs), ""]
    return "\n".join(lines)


def privacy_rules_page() -> str:
    import yaml

    data = yaml.safe_load((data_dir("schemas") / "privacy-rules.yaml").read_text(encoding="utf-8"))
    rules = data["rules"]
    lines = ["# Privacy rules", "",
             f"The {len(rules)} rules shipped in `schemas/privacy-rules.yaml`, by category (generated from the "
             "file: names and descriptions only). How they are applied is in [Privacy](../privacy.md).", ""]
    for category in sorted({r["category"] for r in rules}):
        chosen = [r for r in rules if r["category"] == category]
        lines += [f"## {category} ({len(chosen)})", "", "| rule | what it finds |", "|---|---|",
                  *(f"| `{r['id']}` | {cell(r['description'])} |" for r in chosen), ""]
    return "\n".join(lines)


# The generated pages of the site by their path under docs/, each made from the app's root command
# (``registry.root_command``, or the running app's) or from the data it documents.
GENERATED: dict[str, Callable[[click.Command], str]] = {
    "reference/commands.md": commands_page,
    "reference/configuration.md": lambda _root: config_page(),
    "reference/errors.md": lambda _root: errors_page(),
    "reference/privacy-rules.md": lambda _root: privacy_rules_page(),
}

