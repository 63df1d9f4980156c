"""The package layout: a small root, stage packages, and no import cycle between modules."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "pipeline"
ROOT_LIMIT = 15


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run when the module is imported: into if/try blocks, never into functions or classes."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                out += _module_level(node.body)
            out += _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                out += _module_level(block)
        elif isinstance(node, ast.With):
            out += _module_level(node.body)
    return out


def _imports(name: str, path: Path, modules: dict[str, Path], *, every: bool = False) -> set[str]:
    """The memfold modules ``name`` imports while it is being imported; with ``every``, also those it
    imports inside functions and under ``TYPE_CHECKING`` (an arrow all the same: the layers run one way).

    ``from pkg import mod`` is an arrow to ``pkg.mod`` alone when every name it takes is a module: the
    package itself is already imported as the parent of whatever imports it."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree) if every else _module_level(tree.body):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            named = {f"{base}.{alias.name}" for alias in node.names}
            if not every or not named <= modules.keys():
                found.add(base)
            found |= named
    return {target for target in found if target in modules and target != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _graph(*, every: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules, every=every) for name, path in modules.items()}


def test_no_two_modules_import_each_other_even_through_others() -> None:
    assert _cycles(_graph()) == []


def test_no_cycle_either_through_imports_in_functions_or_for_type_checking() -> None:
    assert _cycles(_graph(every=True)) == []


# The state model's layers, lowest first: each imports only those below it, in any way at all.
LAYERS = ("store", "state", "receipts", "mirror", "apply")


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_the_store_state_receipts_mirror_and_apply_layers_import_only_downwards() -> None:
    upward = sorted(f"{name} -> {target}" for name, targets in _graph(every=True).items() for target in targets
                    if (low := _layer(name)) is not None and (high := _layer(target)) is not None and high > low)
    assert upward == []


def _part(module: str) -> str:
    """The top-level part a module belongs to: a package under ``pipeline`` or a root module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(_part(name), set()).update(_part(t) for t in targets if _part(t) != _part(name))
    return out


def test_no_two_parts_of_the_package_import_each_other_in_any_way() -> None:
    """Folders and root modules stand on floors: a part that another imports never imports it back, not
    even inside a function or for type checking (the folder-level picture has no arrow running up)."""
    parts = _part_graph(_graph(every=True))
    assert _cycles(parts) == []


def test_the_part_graph_finds_two_packages_that_import_each_other() -> None:
    graph = {"pipeline.store.a": {"pipeline.fsutil"}, "pipeline.fsutil": {"pipeline.store.jsontext"},
             "pipeline.store.jsontext": set(), "pipeline.apply.b": {"pipeline.store.a"}}
    assert _cycles(_part_graph(graph)) == [["fsutil", "store"]]


def test_the_full_import_walk_sees_imports_in_functions_and_for_type_checking(tmp_path: Path) -> None:
    source = ("from . import sibling\nif TYPE_CHECKING:\n    from ..state.model import PreState\n"
              "def f():\n    from ..mirror import gitinfo\n")
    path = tmp_path / "mod.py"
    path.write_text(source)
    modules = {m: tmp_path for m in ("pipeline.store", "pipeline.store.sibling", "pipeline.state",
                                      "pipeline.state.model", "pipeline.mirror", "pipeline.mirror.gitinfo")}
    assert _imports("pipeline.store.mod", path, modules) == {"pipeline.store", "pipeline.store.sibling"}
    assert _imports("pipeline.store.mod", path, modules, every=True) == {
        "pipeline.store.sibling", "pipeline.state.model", "pipeline.mirror.gitinfo"}


def test_the_cycle_finder_sees_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_import_walk_resolves_relative_imports_and_skips_functions(tmp_path: Path) -> None:
    source = ("from . import errors\nfrom .lock import project_lock\nfrom ..paths import Layout\n"
              "if TYPE_CHECKING:\n    from .. import state\n"
              "try:\n    from .. import fsutil\nexcept ImportError:\n    pass\n"
              "def f():\n    from .. import config\n")
    path = tmp_path / "mod.py"
    path.write_text(source)
    modules = {m: tmp_path for m in ("pipeline.apply.errors", "pipeline.apply.lock", "pipeline.paths",
                                      "pipeline.state", "pipeline.fsutil", "pipeline.config", "pipeline.apply")}
    assert _imports("pipeline.apply.mod", path, modules) == {
        "pipeline.apply", "pipeline.apply.errors", "pipeline.apply.lock", "pipeline.paths", "pipeline.fsutil"}


def test_the_package_root_holds_at_most_fifteen_modules() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= ROOT_LIMIT, root


STAGES = ("context", "worker", "sandbox", "validation", "privacy", "apply", "receipts", "mirror", "commands")


def test_every_stage_package_says_what_it_promises() -> None:
    for stage in STAGES:
        init = PACKAGE / stage / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree)
        assert doc and "\n" not in doc.strip(), f"{init.parent.name}: a one-line docstring"


# The shell reads the environment and hands the core what it needs. Besides cli.py, commands/, bench/
# and the __main__ entry points, only these read it, each for a reason that is not a knob.
ENVIRONMENT_READERS = {
    "pipeline/hosts/inject.py": "the inject command's own shell (the per-prompt fast path skips cli's imports)",
    "pipeline/mirror/gitinfo.py": "git inherits the user's environment, minus GIT_* variables",
    "pipeline/hosts/pi.py": "the Pi extension's syntax check runs node from the user's PATH",
    "pipeline/hosts/memory_tool.py": "a library's entry point (the Claude API memory tool): its own shell finds "
                                     "the home and config as the command line does",
    "pipeline/sandbox/launcher.py": "it replaces its own environment with the worker's before it runs the "
                                    "built-in planner in the confined process (what an exec would do)",
}


def _is_shell(path: Path) -> bool:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] in ("commands", "bench") or rel.name in ("cli.py", "__main__.py")


def _environment_reads(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb", "putenv") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                any(alias.name in ("environ", "environb", "getenv", "getenvb") for alias in node.names):
            lines.append(node.lineno)
    return lines


def test_no_core_module_reads_the_environment() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(REPO))
        if _is_shell(path) or rel in ENVIRONMENT_READERS:
            continue
        lines = _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[rel] = lines
    assert found == {}


def test_the_environment_check_sees_every_way_of_reading_it() -> None:
    source = "import os\nfrom os import environ\na = os.environ['X']\nb = os.getenv('Y')\n"
    assert _environment_reads(ast.parse(source)) == [2, 3, 4]
    assert all((REPO / rel).is_file() for rel in ENVIRONMENT_READERS)


def test_ci_runs_the_stress_tests_as_a_step_of_their_own_after_the_rest() -> None:
    steps = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if "pytest" in line and not line.lstrip().startswith("#")]
    assert steps[-2:] == ['.venv/bin/python -m pytest -q -n auto -m "not stress"',
                          ".venv/bin/python -m pytest -q -n auto -m stress"]
    checks = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert checks.index("mypy --strict pipeline") < checks.index("ruff check .") < checks.index("pytest")


def test_stress_tests_are_selectable_by_their_marker() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "stress",
                          "-p", "no:cacheprovider", "tests/test_apply.py"], cwd=REPO, capture_output=True,
                         text=True, timeout=120, check=False).stdout
    selected = [line for line in out.splitlines() if "::" in line]
    assert selected and all("test_apply.py::" in line for line in selected)
