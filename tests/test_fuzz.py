"""Fuzzing every parser of outside input: plans, manifests, transcripts, memory files, worker stdout, receipts.

Each answers with a result or one of our own MemfoldError subclasses (stable code, documented exit
code), and none of them writes anything.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.context.snapshot import ContextLimits, build_snapshot
from pipeline.errors import MemfoldError
from pipeline.paths import make_layout
from pipeline.receipts.verify import audit, verify_receipt
from pipeline.resources import load_schema
from pipeline.state.read import read_pre
from pipeline.store.memory import parse_memory
from pipeline.store.state import Limits
from pipeline.validation.plan import validate_plan
from pipeline.worker.extract import ExtractLimits, extract_plan

CODE = re.compile(r"^[a-z][a-z0-9]*([.-][a-z0-9]+)*$")
COUNTS: Counter[str] = Counter()
CI_EXAMPLES = 60
STRESS_EXAMPLES = 1700  # six targets: over 10,000 examples in the stress run

json_scalar = st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False) | st.text(max_size=40)
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=5)
                          | st.dictionaries(st.text(max_size=12), inner, max_size=5), max_leaves=25)


def from_schema(node: Any, defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values shaped by a JSON Schema node (the subset plan.schema.json uses); deliberately loose on bounds."""
    if not isinstance(node, dict) or depth > 8:
        return json_value
    if "$ref" in node:
        return from_schema(defs[node["$ref"].rsplit("/", 1)[1]], defs, depth + 1)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**node, "type": k}, defs, depth) for k in kind])
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        required = set(node.get("required", []))
        fields = {k: from_schema(v, defs, depth + 1) for k, v in props.items()}
        return st.fixed_dictionaries({k: s for k, s in fields.items() if k in required},
                                     optional={k: s for k, s in fields.items() if k not in required})
    if kind == "array":
        return st.lists(from_schema(node.get("items", {}), defs, depth + 1), max_size=min(node.get("maxItems", 4), 4))
    if kind == "string":
        if "pattern" in node:
            return st.from_regex(node["pattern"], fullmatch=True).filter(lambda s: len(s) < 200)
        return st.text(max_size=min(node.get("maxLength", 60), 60))
    if kind == "integer":
        return st.integers(-5, 5)
    if kind == "boolean":
        return st.booleans()
    return json_value


def tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` with its hash and mode: any write shows up."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]  # memfold never writes there; hashing it is slow
        for name in files + dirs:
            path = Path(folder) / name
            st_ = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
            out[str(path.relative_to(root))] = f"{digest}:{st_.st_mode:o}:{st_.st_size}"
    return out


def answers(target: str, call: Callable[[], Any]) -> Any:
    """Run one parser: a value, or a MemfoldError with a stable code and a documented exit code."""
    COUNTS[target] += 1
    try:
        return call()
    except MemfoldError as exc:
        assert CODE.match(exc.code), exc.code
        assert 1 <= exc.exit_code <= 8
        assert all(CODE.match(i.code) for i in exc.issues)
        COUNTS[f"{target}: {exc.code}"] += 0  # keys only; counts would swamp the summary
        return exc


class World:
    """A real project with a real dry-run consolidation: a valid plan, its manifest and pre-state."""

    def __init__(self, base: Path) -> None:
        import subprocess

        project = base / "project"
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        self.env = Env(home=base / "home", project=project)
        self.base = base
        env = self.env
        assert env.run("init").code == 0
        for name, desc in (("project_deploy", "deploys use the blue green script"),
                           ("project_deploy-again", "deploys use the blue green script again"),
                           ("user_editor", "the user edits with helix")):
            assert env.run("add", name, "-d", desc, "--visibility", "safe", "-b", desc + " in ops").code == 0
        result = env.run("consolidate", "--no-context", "--dry-run", "--json")
        assert result.code == 0, result.err
        run_dir = Path(result.json()["runDir"])
        self.plan = json.loads((run_dir / "plan.json").read_text())
        self.manifest = json.loads((run_dir / "manifest.json").read_text())
        self.layout = make_layout(env.home, env.project)
        self.pre = read_pre(self.layout, Limits())
        assert self.validate(self.plan).ok
        self.receipt = json.loads(sorted(self.layout.receipts.iterdir())[-1].read_text())
        self.before = tree(base)

    def validate(self, plan: Any, manifest: dict[str, Any] | None = None) -> Any:
        return validate_plan(plan, manifest or self.manifest, pre=self.pre, repo_root=self.env.project,
                             ruleset=None, allow_publish=False, limits=Limits())

    def unchanged(self) -> None:
        assert tree(self.base) == self.before


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield World(tmp_path_factory.mktemp("fuzz"))
    print("\nfuzz examples: " + ", ".join(f"{k}={v}" for k, v in sorted(COUNTS.items()) if v)
          + f", total={sum(COUNTS.values())}")


def _mutations(world_plan: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A valid plan with one to three edits: a key dropped, a value replaced, an item duplicated."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(world_plan, ())
    edit = st.tuples(st.sampled_from(paths[1:]), st.sampled_from(["drop", "replace", "duplicate", "type"]), json_value)

    @st.composite
    def mutated(draw: st.DrawFn) -> Any:
        plan = copy.deepcopy(world_plan)
        for path, action, value in draw(st.lists(edit, min_size=1, max_size=3)):
            parent: Any = plan
            try:
                for key in path[:-1]:
                    parent = parent[key]
                key = path[-1]
                if action == "drop":
                    del parent[key]
                elif action == "replace":
                    parent[key] = value
                elif action == "duplicate" and isinstance(parent, list):
                    parent.append(copy.deepcopy(parent[key]))
                else:
                    parent[key] = str(parent[key]) if not isinstance(parent[key], str) else [parent[key]]
            except (KeyError, IndexError, TypeError):
                continue  # an earlier edit removed this path
        return plan

    return mutated()


def _settings(n: int) -> settings:
    return settings(max_examples=n, deadline=None, derandomize=n == CI_EXAMPLES,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.filter_too_much, HealthCheck.data_too_large])


def _plan_target(world: World, n: int) -> None:
    schema = load_schema("plan.schema.json")

    @_settings(n)
    @given(st.one_of(from_schema(schema, schema.get("$defs", {})), _mutations(world.plan), json_value))
    def run(plan: Any) -> None:
        result = answers("plans", lambda: world.validate(plan))
        if not isinstance(result, MemfoldError):
            assert result.ok or result.errors
            assert all(CODE.match(i.code) for i in result.errors)
        world.unchanged()

    run()


def _manifest_target(world: World, n: int) -> None:
    @_settings(n)
    @given(_mutations(world.manifest))
    def run(manifest: Any) -> None:
        answers("manifests", lambda: world.validate(world.plan, manifest))
        world.unchanged()

    run()


transcript_line = st.one_of(
    json_value.map(json.dumps),
    st.fixed_dictionaries({"type": st.sampled_from(["user", "assistant", "message", "summary", "system"]),
                           "message": st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                                             "content": json_value})}).map(json.dumps),
    st.text(max_size=80),
)
transcripts = st.one_of(st.binary(max_size=400),
                        st.lists(transcript_line, max_size=8).map(lambda ls: "\n".join(ls).encode()),
                        json_value.map(lambda v: json.dumps(v).encode()))


def _transcript_target(world: World, n: int) -> None:
    @_settings(n)
    @given(transcripts, st.sampled_from(["stdin", "session.jsonl", "none", "../../etc/passwd"]))
    def run(data: bytes, source: str) -> None:
        answers("transcripts", lambda: build_snapshot(data, source=source, limits=ContextLimits()))
        world.unchanged()

    run()


frontmatter = st.dictionaries(st.sampled_from(["name", "description", "type", "visibility", "created", "modified",
                                               "expires", "metadata", "x"]), json_value, max_size=7)
memory_files = st.one_of(
    st.binary(max_size=300),
    st.tuples(frontmatter, st.text(max_size=100), st.sampled_from(["\n", "\r\n"])).map(
        lambda t: (t[2].join(["---", *json.dumps(t[0]).splitlines(), "---", t[1]])).encode("utf-8", "surrogatepass")),
    st.text(max_size=200).map(lambda s: ("---\n" + s).encode("utf-8", "surrogatepass")),
)


def _memory_target(world: World, n: int) -> None:
    @_settings(n)
    @given(memory_files, st.sampled_from(["project_a.md", "x.md", "MEMORY.md"]))
    def run(data: bytes, name: str) -> None:
        answers("memory files", lambda: parse_memory(data, name))
        world.unchanged()

    run()


def _stdout_target(world: World, n: int) -> None:
    plan_text = json.dumps(world.plan)
    shaped = st.one_of(
        st.binary(max_size=500),
        st.lists(st.one_of(transcript_line, st.just(plan_text),
                           st.just(json.dumps({"type": "consolidation_plan", "plan": world.plan})),
                           st.just("```json\n" + plan_text + "\n```"), st.just("PASSED")), max_size=6)
        .map(lambda ls: "\n".join(ls).encode()),
    )

    @_settings(n)
    @given(shaped, st.sampled_from([ExtractLimits(), ExtractLimits(max_stdout_bytes=300, max_lines=4)]))
    def run(stdout: bytes, limits: ExtractLimits) -> None:
        answers("worker stdout", lambda: extract_plan(stdout, limits))
        world.unchanged()

    run()


def _receipt_target(world: World, n: int) -> None:
    log = sorted(world.layout.receipts.iterdir())[-1]
    original = log.read_bytes()

    @_settings(n)
    @given(st.one_of(_mutations(world.receipt), json_value, st.binary(max_size=200)))
    def run(receipt: Any) -> None:
        data = receipt if isinstance(receipt, bytes) else json.dumps(receipt).encode()
        log.write_bytes(data)
        try:
            world.before = tree(world.base)
            for call in (lambda: verify_receipt(world.layout, Limits(), str(log)),
                         lambda: audit(world.layout, Limits())):
                report = answers("receipts", call)
                if not isinstance(report, MemfoldError):
                    assert all(CODE.match(e.code) for e in report.errors)
                world.unchanged()
        finally:
            log.write_bytes(original)
            world.before = tree(world.base)

    run()


TARGETS = {"plans": _plan_target, "manifests": _manifest_target, "transcripts": _transcript_target,
           "memory files": _memory_target, "worker stdout": _stdout_target, "receipts": _receipt_target}


@pytest.mark.parametrize("target", list(TARGETS))
def test_fuzzed_input_gets_an_answer_with_a_stable_code_and_writes_nothing(world: World, target: str) -> None:
    # Each receipt example walks the whole chain twice (verify and audit): fewer of them keep CI short.
    n = CI_EXAMPLES // 3 if target == "receipts" else CI_EXAMPLES
    TARGETS[target](world, n)
    assert COUNTS[target] >= n


@pytest.mark.stress
@pytest.mark.parametrize("target", list(TARGETS))
def test_fuzzed_input_long(world: World, target: str) -> None:
    TARGETS[target](world, STRESS_EXAMPLES)
    assert COUNTS[target] >= STRESS_EXAMPLES


def test_a_receipt_without_a_canonical_form_is_reported_not_a_crash(world: World) -> None:
    """Found by the receipt fuzzer: an integer past I-JSON's range made `audit` raise IntegerDomainError."""
    log = sorted(world.layout.receipts.iterdir())[-1]
    original = log.read_bytes()
    try:
        log.write_text(json.dumps({**world.receipt, "worker": {"kind": "parent", "n": 2**63}}))
        report = audit(world.layout, Limits())
        # The chain head in the mirror names the original receipt, so the witness objects as well.
        assert not report.ok and [e.code for e in report.errors] == ["receipt.json", "witness.head-mismatch"]
    finally:
        log.write_bytes(original)
