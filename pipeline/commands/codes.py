"""Every stable error code memfold reports, read from its own source, and the error-code reference page.

Codes are string literals where errors are raised (``InputRejected(..., code="memory.expires")``) or
issues reported (``Issue("plan.schema", ...)``, ``report.fail("receipt.chain", ...)``). Reading them
from the syntax tree of the package, instead of keeping a list, means a new code is documented the day
it is written and a removed one disappears from the page.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

from .. import errors

PACKAGE = Path(__file__).resolve().parent.parent
CODE = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9<][a-z0-9<>._-]*)+$")
# Calls whose first argument is an issue's code: an Issue, a validator's list, a verify report, an MCP error.
ISSUE_CALLS = {"Issue": "problem", "add": "problem", "fail": "failure", "warn": "warning",
               "error_result": "tool error"}
# An error written out by a path that cannot afford the error classes (the per-prompt inject).
WRITTEN = re.compile(r"error \[([a-z][a-z0-9.-]+)\]")


def error_classes() -> list[type[errors.MemfoldError]]:
    """The error hierarchy of ``errors.py`` in exit-code order, the base class first."""
    found = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.MemfoldError)]
    return sorted(found, key=lambda c: (c.exit_code, c is not errors.MemfoldError, c.__name__))


class Code:
    """One stable code: how it is reported (raised with an exit code, or a problem a check lists)."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.exits: set[int] = set()
        self.kinds: set[str] = set()
        self.modules: set[str] = set()
        self.hints: list[str] = []


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _literal(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A code written as a literal, a module constant or an f-string (``privacy.{category}`` reads
    ``privacy.<category>``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else _placeholder(v)
                       for v in node.values if isinstance(v, ast.Constant | ast.FormattedValue))
    return None


def _placeholder(value: ast.FormattedValue) -> str:
    """A value of an f-string: ``<name>`` for a plain name or attribute, ``…`` for anything else."""
    if isinstance(value.value, ast.Name | ast.Attribute):
        return f"<{ast.unparse(value.value).split('.')[-1]}>"
    return "…"


def _coded_message(node: ast.AST) -> str | None:
    """The code of a tuple of a code and its message (a held file's reason), else None."""
    if not isinstance(node, ast.Tuple) or len(node.elts) < 2:
        return None
    code, message = node.elts[0], node.elts[1]
    said = isinstance(message, ast.JoinedStr) or (isinstance(message, ast.Constant) and isinstance(
        message.value, str)) or (isinstance(message, ast.Attribute) and message.attr == "message")
    if said and isinstance(code, ast.Constant) and isinstance(code.value, str) and CODE.match(code.value):
        return code.value
    return None


def _calls(tree: ast.Module) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name:
                yield name, node


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
            for t in n.targets if isinstance(t, ast.Name)}


def _note(found: dict[str, Code], code: str, kind: str, module: str) -> Code:
    entry = found.setdefault(code, Code(code))
    entry.kinds.add(kind)
    entry.modules.add(module)
    return entry


def scan(root: Path = PACKAGE) -> dict[str, Code]:
    """Every code found in the package's source, by code."""
    exit_of = {c.__name__: c.exit_code for c in error_classes()}
    found: dict[str, Code] = {}
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))}
    # Upper-case constants are imported across modules (``code=NEAR_COPY``).
    shared = {name: value for tree in trees.values() for name, value in _constants(tree).items()
              if name.isupper() and CODE.match(value)}
    for path, tree in trees.items():
        module = path.relative_to(root.parent).with_suffix("").as_posix().replace("/", ".")
        constants = {**shared, **_constants(tree)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for written in WRITTEN.findall(node.value):
                    _note(found, written, "written", module)
            elif _coded_message(node):  # ("held.size", f"{name} is ... bytes"): a code with its message
                _note(found, _coded_message(node) or "", "problem", module)
            elif isinstance(node, ast.FunctionDef) and node.name.endswith("_code"):
                for ret in ast.walk(node):  # a function that names the code of an error (usage errors)
                    if isinstance(ret, ast.Return) and ret.value is not None:
                        code = _literal(ret.value, constants)
                        if code and CODE.match(code):
                            _note(found, code, "raised", module).exits.add(errors.UsageError.exit_code)
        # A helper handed a stem (``_judge(..., "witness.head", ...)``) that reports ``f"{code}-ahead"``:
        # each stem of the module with each such suffix.
        stems = {a.value for name, call in _calls(tree) if name not in ISSUE_CALLS and name not in exit_of
                 for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and CODE.match(a.value)}
        suffixes = {_literal(call.args[0], constants) for name, call in _calls(tree)
                    if name in ISSUE_CALLS and call.args and isinstance(call.args[0], ast.JoinedStr)}
        for stem in stems:
            for suffix in suffixes:
                if suffix and re.fullmatch(r"<[a-z_]+>-[a-z-]+", suffix):
                    _note(found, stem + suffix[suffix.index(">") + 1:], "problem", module)
        for name, call in _calls(tree):
            code = hint = None
            kind = ""
            keywords = {k.arg: k.value for k in call.keywords if k.arg}
            if name in exit_of and "code" in keywords:
                code, kind = _literal(keywords["code"], constants), "raised"
                hint = _literal(keywords["hint"], constants) if "hint" in keywords else None
            elif name in ISSUE_CALLS and call.args:
                code, kind = _literal(call.args[0], constants), ISSUE_CALLS[name]
            else:  # a record named after its codes' family: Held(name, "held.untrusted", ...)
                code = next((a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                             and a.value.startswith(f"{name.lower()}.")), None)
                kind = "problem"
            if not code or not CODE.match(code):
                continue
            entry = _note(found, code, kind, module)
            if name in exit_of and kind == "raised":
                entry.exits.add(exit_of[name])
            if hint and hint not in entry.hints:
                entry.hints.append(hint)
    return found


def matches(code: str, known: dict[str, Code]) -> bool:
    """Whether ``code`` is one found, or fits a code built from a value (``privacy.<category>``)."""
    if code in known:
        return True
    patterns = [re.escape(k).replace(re.escape("<"), "<").replace(re.escape(">"), ">") for k in known if "<" in k]
    return any(re.fullmatch(re.sub(r"<[^>]*>", "[a-z0-9-]+", p), code) for p in patterns)


def cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def exit_code_table() -> str:
    """The exit codes every command uses, from the error hierarchy."""
    rows = ["| exit | error class | default code | what it means |", "|---|---|---|---|",
            "| 0 | | | success, including a verified no-op |"]
    for cls in error_classes():
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        rows.append(f"| {cls.exit_code} | `{cls.__name__}` | `{cls.default_code}` | {cell(doc)} |")
    rows.append("| 130 | | | interrupted (Ctrl-C) |")
    return "\n".join(rows) + "\n"


def errors_page() -> str:
    """The error-code reference: exit codes, then every stable code grouped by its first word."""
    known = scan()
    lines = ["# Error codes", "",
             "Every error memfold reports carries a stable code and an exit code. This page is generated from "
             "the source (`pipeline/errors.py` and every place a code is raised or reported), so it lists "
             "exactly the codes this version has. What to do about the common ones is in "
             "[Troubleshooting](../troubleshooting.md).", "",
             "## Exit codes", "", exit_code_table(),
             "With `--json`, an error is printed on stdout as `{\"ok\": false, \"code\", \"exitCode\", "
             "\"message\", \"hint\", \"errors\"}`; without it, on stderr as `memfold: error [CODE]: message` "
             "and a `hint:` line.", "",
             "## Codes", "",
             "*raised* codes end the command with the exit code shown. The others are problems a check lists "
             "(a validator, `verify`, `audit`, `mirror check`, `config check`, the MCP server): the command "
             "that reports them exits with its own code (for example 1 for a rejected plan, 7 for a failed "
             "verification). A code with `<...>` in it is built from a value (`privacy.<category>` is "
             "`privacy.credential`, `privacy.pii` or `privacy.path`).", ""]
    families: dict[str, list[Code]] = {}
    for code in sorted(known):
        families.setdefault(code.split(".")[0], []).append(known[code])
    for family, codes in families.items():
        lines += [f"### {family}", "", "| code | exit | how | hint | where |", "|---|---|---|---|---|"]
        for c in codes:
            exits = ", ".join(str(e) for e in sorted(c.exits)) or "the command's"
            hint = cell(c.hints[0]) if c.hints else ""
            kinds = ", ".join(sorted(c.kinds))
            where = ", ".join(f"`{m}`" for m in sorted(c.modules))
            lines.append(f"| `{c.code}` | {exits} | {kinds} | {hint} | {where} |")
        lines.append("")
    return "\n".join(lines)
