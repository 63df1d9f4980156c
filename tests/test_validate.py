"""The plan validator: every rule by code and JSON path, privacy without echoes, the command, robustness."""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pipeline.commands._app  # noqa: F401 - registers the validate command on the app
from pipeline.apply.runs import create_run_dir
from pipeline.errors import InputRejected, PrivacyRejected, UsageError
from pipeline.fsutil import sha256_bytes
from pipeline.paths import Layout, make_layout
from pipeline.privacy import load_ruleset
from pipeline.state.model import Operation, PreState
from pipeline.state.read import read_pre
from pipeline.store.jsontext import digest_json, dump_json
from pipeline.store.memory import Memory, render_memory
from pipeline.store.state import Limits
from pipeline.validation.plan import RULES, ValidationResult, raise_for, validate_plan
from pipeline.validation.schema import fast_check, plan_validator

CASES = json.loads((Path(__file__).parent / "data" / "plans" / "cases.json").read_text("utf-8"))["cases"]
RUN_ID = "20261130T120000Z-1a2b3c4d"
ARTIFACT = "5" * 64
SELECTED = ["feedback_tests.md", "project_deploy.md", "user_editor.md"]
ALL_CHECKS = ["schema", *RULES]


def fake_token(seed: int = 7) -> str:
    rng = random.Random(seed)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


@dataclass
class Store:
    env: Env
    layout: Layout
    pre: PreState
    manifest: dict[str, Any]

    def refresh(self) -> None:
        self.pre = read_pre(self.layout, Limits())

    def memory(self, name: str, **changes: Any) -> str:
        """The current file of ``name`` with ``changes``, as plan content."""
        return render_memory(self.pre.memories[name].with_changes(**changes)).decode("utf-8")


def manifest_for(layout: Layout, selected: list[str], *, allow_publish: bool = False) -> dict[str, Any]:
    digest = digest_json({"runId": RUN_ID, "scopeKey": layout.scope_key, "snapshotDigest": ARTIFACT,
                          "contextMode": "disabled", "selected": selected})
    return {
        "kind": "memory-consolidation-manifest", "schemaVersion": 1, "runId": RUN_ID,
        "scopeKey": layout.scope_key, "scopeDigest": digest, "artifactHash": ARTIFACT, "snapshotDigest": ARTIFACT,
        "contextMode": "disabled", "snapshotPath": "snapshot.json", "scope": "all", "selected": selected,
        "allowPublish": allow_publish,
        "roots": {"harness": str(layout.harness), "public": str(layout.mirror), "project": str(layout.project_root),
                  "runDir": str(layout.runs / RUN_ID)},
        "sourceHashes": {"harness": {}, "public": {}}, "worker": {"name": "builtin"}, "sandbox": {},
        "limits": {}, "createdAt": "2026-11-30T12:00:00Z",
    }


@pytest.fixture
def store(env: Env) -> Store:
    for args in (
        ("project_deploy", "-d", "deploys go through ops/deploy.sh", "--visibility", "safe",
         "-b", "Run ops/deploy.sh for blue/green deploys."),
        ("feedback_tests", "-d", "integration tests hit a real database", "-t", "feedback",
         "--visibility", "safe", "-b", "No mocks for the db layer."),
        ("user_editor", "-d", "prefers vim keybindings", "-t", "user", "-b", "Uses vim everywhere."),
    ):
        assert env.run("add", *args).code == 0
    (env.project / "ops").mkdir()
    (env.project / "ops" / "deploy.sh").write_text("#!/bin/sh\n")
    layout = make_layout(env.home, env.project)
    pre = read_pre(layout, Limits())
    assert sorted(pre.memories) == SELECTED
    return Store(env, layout, pre, manifest_for(layout, SELECTED))


def base_plan(store: Store, operations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    m = store.manifest
    names = list(m["selected"])
    return {
        "kind": "memory-consolidation-plan", "schemaVersion": 1, "runId": m["runId"], "scopeKey": m["scopeKey"],
        "scopeDigest": m["scopeDigest"], "artifactHash": m["artifactHash"], "snapshotDigest": m["artifactHash"],
        "selected": names,
        "inventory": [{"name": n, "classification": store.pre.memories[n].visibility} for n in names],
        "clusters": ([{"name": "testing", "files": [n for n in names if n.startswith("feedback")]},
                      {"name": "operations", "files": [n for n in names if not n.startswith("feedback")]}]
                     if names else []),
        "staleness": [{"name": n, "verdict": "KEEP"} for n in names],
        "grounding": [{"name": n, "status": "grounded", "observations": [{"path": "ops/deploy.sh", "status": "found"}]}
                      if n == "project_deploy.md" else
                      {"name": n, "status": "not-applicable", "reason": "names no repository path", "observations": []}
                      for n in names],
        "report": [{"name": n, "status": "kept", "summary": "still accurate"} for n in names],
        "operations": list(operations or []),
    }


def check(store: Store, plan: Any, *, allow_publish: bool = False, limits: Limits | None = None,
          repo: Path | None = None) -> ValidationResult:
    return validate_plan(plan, store.manifest, pre=store.pre, repo_root=repo or store.layout.project_root,
                         ruleset=load_ruleset(), allow_publish=allow_publish, limits=limits or Limits())


def issues(result: ValidationResult) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in result.errors]


def op(name: str, kind: str, classification: str, content: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "kind": kind, "classification": classification, **extra}
    if content is not None:
        out["content"] = content
    return out


def new_memory(name: str, visibility: str = "safe", body: str = "A new fact.", description: str | None = None) -> str:
    memory = Memory(name=name, description=description or f"about {name}", type="project", visibility=visibility,
                    created="2026-11-30", body=body)
    return render_memory(memory).decode("utf-8")


def apply_patch(plan: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(plan)
    for step in patch:
        *parents, last = step["path"]
        target: Any = out
        for key in parents:
            target = target[key]
        if step["op"] == "set":
            target[last] = step["value"]
        elif step["op"] == "delete":
            del target[last]
        else:
            target[last].append(step["value"])
    return out


# -- data-driven cases: identity, selection, coverage, verdicts, schema ---------------------------

@pytest.mark.parametrize("case", CASES, ids=[c["description"] for c in CASES])
def test_plan_case_yields_exactly_the_expected_issues(store: Store, case: dict[str, Any]) -> None:
    result = check(store, apply_patch(base_plan(store), case["patch"]))
    assert issues(result) == [tuple(e) for e in case["expect"]]
    assert result.ok is (not case["expect"])


def test_a_valid_plan_passes_every_check_and_returns_its_operations(store: Store) -> None:
    rewrite = store.memory("project_deploy.md", body="Run ops/deploy.sh; it does blue/green.")
    create = new_memory("project_ports.md", body="The dev server listens on 8081.")
    ops = [op("project_deploy.md", "rewrite", "safe", rewrite, contentSha256="sha256:" + sha256_bytes(rewrite.encode())),
           op("project_ports.md", "create", "safe", create),
           op("feedback_tests.md", "delete", "safe", into="project_ports.md")]
    result = check(store, base_plan(store, ops))
    assert result.ok and result.errors == []
    assert result.checks == ALL_CHECKS
    assert result.plan is not None and result.plan["operations"] == ops
    assert result.operations == [Operation("project_deploy.md", "rewrite", "safe", rewrite.encode()),
                                 Operation("project_ports.md", "create", "safe", create.encode()),
                                 Operation("feedback_tests.md", "delete", "safe", None)]
    assert result.as_dict() == {"ok": True, "checks": ALL_CHECKS, "errors": []}
    raise_for(result)


def test_an_empty_scope_with_no_operations_is_a_valid_no_op(store: Store) -> None:
    store.manifest = manifest_for(store.layout, [])
    result = check(store, base_plan(store))
    assert result.ok and result.operations == [] and "coverage" in result.checks


def test_schema_issues_are_capped_and_then_no_semantic_rule_runs(store: Store) -> None:
    plan = base_plan(store)
    plan["report"] = [{"name": 1, "status": 2, "summary": 3} for _ in range(30)]
    plan["runId"] = "20261130T120000Z-ffffffff"
    result = check(store, plan)
    assert len(result.errors) == 51 and {c for c, _ in issues(result)} == {"plan.schema"}
    assert "more than 50" in result.errors[-1].message and result.checks == []


def test_semantic_issues_are_capped(store: Store) -> None:
    names = [f"project_n{i:04d}.md" for i in range(300)]
    plan = base_plan(store)
    store.manifest = manifest_for(store.layout, names)
    plan.update(scopeDigest=store.manifest["scopeDigest"], selected=names, inventory=[], clusters=[], staleness=[], grounding=[], report=[])
    result = check(store, plan)
    assert len(result.errors) == 1001 and result.errors[-1].code == "plan.too-many-issues"


def test_a_plan_that_is_not_an_object_is_one_schema_issue() -> None:
    for plan in (None, [], "plan", 3):
        result = validate_plan(plan, manifest_for(Layout(Path("/h"), Path("/p"), "a" * 64), []),
                               pre=PreState(None, None, {}), repo_root=Path("/"),  # type: ignore[arg-type]
                               ruleset=None, allow_publish=False, limits=Limits())
        assert issues(result) == [("plan.schema", "$")] and result.checks == []


def test_a_manifest_without_identity_is_a_usage_error(store: Store) -> None:
    plan = base_plan(store)
    store.manifest = {"runId": RUN_ID}
    with pytest.raises(UsageError) as info:
        check(store, plan)
    assert info.value.code == "manifest.invalid"


def test_the_verdict_hint_names_the_hyphenated_spelling(store: Store) -> None:
    plan = base_plan(store)
    plan["staleness"][0]["verdict"] = "OPS_ONLY"
    (error,) = check(store, plan).errors
    assert "'OPS-ONLY'" in error.message and "feedback_tests.md" in error.message


# -- grounding ----------------------------------------------------------------------------------

def grounding_plan(store: Store, path: str, status: str = "found") -> dict[str, Any]:
    plan = base_plan(store)
    plan["grounding"][1]["observations"] = [{"path": path, "status": status}]
    return plan


@pytest.mark.parametrize("path", ["/etc/passwd", "C:\\repo\\x", "C:x", "~/notes.txt", "ops/../../x", "..",
                                  "ops\\deploy.sh", "ops/\x00deploy.sh"])
def test_a_grounding_path_that_is_not_repository_relative_is_refused(store: Store, path: str) -> None:
    result = check(store, grounding_plan(store, path))
    assert issues(result) == [("plan.grounding.path", "$.grounding[1].observations[0].path")]
    assert "project_deploy.md" in result.errors[0].message


def test_a_grounding_path_escaping_through_a_symlink_is_refused(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    os.symlink(outside, store.env.project / "link")
    result = check(store, grounding_plan(store, "link/secret.txt"))
    assert issues(result) == [("plan.grounding.escape", "$.grounding[1].observations[0].path")]


def _citing(store: Store, *cites: Any) -> dict[str, Any]:
    return base_plan(store, [op("project_deploy.md", "rewrite", "safe", store.memory("project_deploy.md",
                                                                                   evidence=cites))])


def test_a_plan_citing_a_path_outside_the_repository_is_refused(store: Store, tmp_path: Path) -> None:
    from pipeline.store.evidence import Cite

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x\n")
    os.symlink(outside, store.env.project / "link")
    assert issues(check(store, _citing(store, Cite("link/secret.txt")))) == [
        ("plan.evidence.escape", "$.operations[0].content")]
    content = store.memory("project_deploy.md").replace("---\nRun", "evidence:\n- path: \"../x\"\n---\nRun")
    result = check(store, base_plan(store, [op("project_deploy.md", "rewrite", "safe", content)]))
    assert issues(result) == [("plan.operation.content", "$.operations[0].content")]
    assert "evidence path '../x' has an empty, '.' or '..' component" in result.errors[0].message


def test_a_new_citation_needs_an_existing_file_and_the_hash_of_its_text(store: Store) -> None:
    from pipeline.store.citecheck import anchor
    from pipeline.store.evidence import Cite

    script = (store.env.project / "ops" / "deploy.sh").read_bytes()
    good = anchor("ops/deploy.sh", script, 1, 1)
    assert issues(check(store, _citing(store, good))) == []
    invented = Cite("ops/deploy.sh", 1, 1, "0" * 64)
    assert issues(check(store, _citing(store, invented))) == [("plan.evidence.hash", "$.operations[0].content")]
    assert issues(check(store, _citing(store, Cite("ops/absent.sh")))) == [
        ("plan.evidence.absent", "$.operations[0].content")]


def test_a_symlink_that_stays_inside_the_repository_is_fine(store: Store) -> None:
    os.symlink("ops", store.env.project / "tools")
    assert check(store, grounding_plan(store, "tools/deploy.sh")).ok


def test_a_found_observation_must_exist_but_a_missing_one_need_not(store: Store) -> None:
    result = check(store, grounding_plan(store, "ops/rollback.sh"))
    assert issues(result) == [("plan.grounding.absent", "$.grounding[1].observations[0].path")]
    assert check(store, grounding_plan(store, "ops/rollback.sh", "missing")).ok


def test_a_dangling_symlink_is_not_found(store: Store) -> None:
    os.symlink("nowhere.sh", store.env.project / "ops" / "gone.sh")
    assert issues(check(store, grounding_plan(store, "ops/gone.sh"))) == [
        ("plan.grounding.absent", "$.grounding[1].observations[0].path")]


def test_grounding_reads_no_file_contents(store: Store) -> None:
    target = store.env.project / "ops" / "deploy.sh"
    os.chmod(target, 0)
    try:
        assert check(store, grounding_plan(store, "ops/deploy.sh")).ok
    finally:
        os.chmod(target, 0o644)


# -- operations ---------------------------------------------------------------------------------

def test_rewrite_or_delete_outside_the_selected_scope_is_refused(store: Store) -> None:
    store.manifest = manifest_for(store.layout, ["feedback_tests.md", "project_deploy.md"])
    plan = base_plan(store, [op("user_editor.md", "delete", "private"),
                             op("user_editor.md".upper().replace(".MD", ".md"), "rewrite", "private",
                                new_memory("USER_EDITOR.md", "private"))])
    result = check(store, plan)
    assert ("plan.operation.scope", "$.operations[0].name") in issues(result)
    assert ("plan.operation.scope", "$.operations[1].name") in issues(result)


def test_two_operations_on_one_name_differing_only_in_case_are_refused(store: Store) -> None:
    content = store.memory("project_deploy.md", body="new body")
    plan = base_plan(store, [op("project_deploy.md", "rewrite", "safe", content),
                             op("Project_Deploy.md", "delete", "safe")])
    result = check(store, plan)
    assert ("plan.operation.duplicate", "$.operations[1].name") in issues(result)


@pytest.mark.parametrize("name", ["project_deploy.md", "PROJECT_DEPLOY.md", "user_editor.md"])
def test_create_on_an_existing_name_is_refused_case_insensitively(store: Store, name: str) -> None:
    result = check(store, base_plan(store, [op(name, "create", "private", new_memory(name, "private"))]))
    assert issues(result) == [("plan.operation.exists", "$.operations[0].name")]


def test_create_on_a_name_that_exists_only_in_the_mirror_is_refused(store: Store) -> None:
    (store.env.mirror / "project_team.md").write_bytes(new_memory("project_team.md").encode())
    store.refresh()
    assert "project_team.md" not in store.pre.memories
    result = check(store, base_plan(store, [op("project_team.md", "create", "safe", new_memory("project_team.md"))]))
    assert issues(result) == [("plan.operation.exists", "$.operations[0].name")]
    assert "the mirror" in result.errors[0].message


def test_content_over_the_file_bound_is_refused(store: Store) -> None:
    content = new_memory("project_big.md", body="é" * 200)  # 400 bytes of body in UTF-8
    result = check(store, base_plan(store, [op("project_big.md", "create", "safe", content)]),
                   limits=Limits(max_file_bytes=300))
    assert issues(result) == [("plan.operation.too-large", "$.operations[0].content")]


def test_a_wrong_content_hash_is_refused(store: Store) -> None:
    content = new_memory("project_ports.md")
    plan = base_plan(store, [op("project_ports.md", "create", "safe", content, contentSha256="0" * 64)])
    assert issues(check(store, plan)) == [("plan.operation.hash", "$.operations[0].contentSha256")]


def test_content_whose_frontmatter_disagrees_with_the_classification_is_refused(store: Store) -> None:
    plan = base_plan(store, [op("project_ports.md", "create", "safe", new_memory("project_ports.md", "private"))])
    assert issues(check(store, plan)) == [("plan.operation.disagrees", "$.operations[0].content")]


@pytest.mark.parametrize("content", ["no frontmatter at all\n", "---\nname: x\n---\nbody\n",
                                     "---\ndescription: [unclosed\n---\n", "---\ndescription: d\n"])
def test_unparsable_content_is_refused_with_the_parse_message(store: Store, content: str) -> None:
    result = check(store, base_plan(store, [op("project_ports.md", "create", "safe", content)]))
    assert issues(result) == [("plan.operation.content", "$.operations[0].content")]
    assert "project_ports.md" in result.errors[0].message


def test_content_with_a_lone_surrogate_is_refused_not_crashed_on(store: Store) -> None:
    content = new_memory("project_ports.md") + "\ud800"
    result = check(store, base_plan(store, [op("project_ports.md", "create", "safe", content)]))
    assert issues(result) == [("plan.operation.content", "$.operations[0].content")]


@pytest.mark.parametrize("name", ["aux.md", "CON.md", "com1.md", "Lpt9.md"])
def test_a_create_named_like_a_windows_device_is_refused(store: Store, name: str) -> None:
    result = check(store, base_plan(store, [op(name, "create", "safe", new_memory(name))]))
    assert issues(result) == [("plan.operation.name-reserved", "$.operations[0].name")]


@pytest.mark.parametrize("name", ["MEMORY.md", "memory.md", "project_x.md\n"])
def test_an_operation_on_the_index_or_an_odd_name_is_refused(store: Store, name: str) -> None:
    result = check(store, base_plan(store, [op(name, "create", "safe", new_memory("x.md"))]))
    assert ("plan.operation.name", "$.operations[0].name") in issues(result)


def test_a_plan_that_would_exceed_the_file_count_is_refused(store: Store) -> None:
    ops = [op("project_a.md", "create", "safe", new_memory("project_a.md")),
           op("project_b.md", "create", "safe", new_memory("project_b.md", body="Another fact."))]
    assert issues(check(store, base_plan(store, ops), limits=Limits(max_files=4))) == [
        ("bounds.file-count", "$.operations")]
    ops.append(op("feedback_tests.md", "delete", "safe", into="project_a.md"))
    assert check(store, base_plan(store, ops), limits=Limits(max_files=4)).ok


def test_a_plan_that_would_fill_the_mirror_past_its_total_bound_is_refused(store: Store) -> None:
    safe_now = sum(len(store.pre.harness.files[n]) for n, m in store.pre.memories.items() if m.is_safe)
    body = "lorem ipsum dolor sit amet " * 200
    big = new_memory("project_big.md", body=body)
    bound = safe_now + len(big.encode()) - 1
    refused = check(store, base_plan(store, [op("project_big.md", "create", "safe", big)]),
                    limits=Limits(mirror_bytes=bound))
    assert issues(refused) == [("bounds.mirror-bytes", "$.operations")]
    assert f"limits.mirror_bytes ({bound})" in refused.errors[0].message
    # The same memory kept private adds nothing to the mirror.
    private = new_memory("project_big.md", visibility="private", body=body)
    assert check(store, base_plan(store, [op("project_big.md", "create", "private", private)]),
                 limits=Limits(mirror_bytes=bound)).ok


def test_a_rewrite_may_reclassify_and_the_inventory_may_state_either_side(store: Store) -> None:
    content = store.memory("project_deploy.md", visibility="private")
    for stated in ("safe", "private"):
        plan = base_plan(store, [op("project_deploy.md", "rewrite", "private", content),
                                 op("user_editor.md", "delete", "private", into="project_deploy.md")])
        plan["inventory"][1]["classification"] = stated
        assert check(store, plan).ok, stated


# -- privacy ------------------------------------------------------------------------------------

def test_private_to_safe_needs_allow_publish(store: Store) -> None:
    content = store.memory("user_editor.md", visibility="safe")
    plan = base_plan(store, [op("user_editor.md", "rewrite", "safe", content)])
    refused = check(store, plan)
    assert issues(refused) == [("privacy.publish", "$.operations[0].classification")]
    assert "--allow-publish" in refused.errors[0].message
    with pytest.raises(PrivacyRejected) as info:
        raise_for(refused)
    assert info.value.code == "privacy.publish" and info.value.exit_code == 1
    assert check(store, plan, allow_publish=True).ok


def test_a_private_body_reappearing_in_a_new_safe_memory_needs_allow_publish(store: Store) -> None:
    body = store.pre.memories["user_editor.md"].body
    plan = base_plan(store, [op("user_editor.md", "delete", "private", into="project_editor.md"),
                             op("project_editor.md", "create", "safe", new_memory("project_editor.md", body=body))])
    assert issues(check(store, plan)) == [("privacy.publish-near-copy", "$.operations[1].content")]
    assert check(store, plan, allow_publish=True).ok


def test_a_near_copy_of_a_private_memory_in_a_new_or_rewritten_safe_memory_needs_allow_publish(
        store: Store) -> None:
    assert store.env.run("add", "user_vault", "-d", "the staging deploy key lives in the team vault under ops",
                         "-t", "user", "-b", "Ask the on-call for the vault path of the staging deploy key before "
                         "running the release script on a Friday afternoon.").code == 0
    store.refresh()
    store.manifest = manifest_for(store.layout, sorted(store.pre.memories))
    private = store.pre.memories["user_vault.md"]
    copied = "Shared: " + private.body.replace("vault", "vaults", 1)
    plan = base_plan(store, [
        op("project_notes.md", "create", "safe", new_memory("project_notes.md", body=copied)),
        op("project_deploy.md", "rewrite", "safe", store.memory("project_deploy.md", description=private.description)),
    ])
    refused = check(store, plan)
    assert issues(refused) == [("privacy.publish-near-copy", "$.operations[1].content"),
                               ("privacy.publish-near-copy", "$.operations[0].content")]
    text = json.dumps(refused.as_dict())
    assert "user_vault.md" in text and "project_notes.md" in text and "project_deploy.md" in text
    assert "vault path" not in text and "team vault" not in text
    with pytest.raises(PrivacyRejected) as info:
        raise_for(refused)
    assert info.value.code == "privacy.publish-near-copy" and info.value.exit_code == 1
    assert check(store, plan, allow_publish=True).ok


def test_safe_to_private_is_allowed_as_long_as_the_plan_merges_as_many(store: Store) -> None:
    content = store.memory("feedback_tests.md", visibility="private")
    alone = check(store, base_plan(store, [op("feedback_tests.md", "rewrite", "private", content)]))
    assert issues(alone) == [("plan.visibility.privatised", "$.operations")]
    assert "feedback_tests.md" in alone.errors[0].message
    with pytest.raises(InputRejected) as info:
        raise_for(alone)
    assert info.value.code == "plan.visibility.privatised" and info.value.exit_code == 1
    merging = [op("feedback_tests.md", "rewrite", "private", content),
               op("user_editor.md", "delete", "private", into="feedback_tests.md")]
    assert check(store, base_plan(store, merging)).ok


def test_a_delete_into_a_private_memory_counts_as_making_the_safe_one_private(store: Store) -> None:
    plan = base_plan(store, [op("feedback_tests.md", "delete", "safe", into="user_editor.md"),
                             op("project_deploy.md", "delete", "safe", into="user_editor.md")])
    # Two safe memories end up only in a private one; two merges: the mirror loses them, which the rule
    # allows only as merges, never more hidden than merged.
    assert check(store, plan).ok
    plan = base_plan(store, [op("feedback_tests.md", "delete", "safe", into="user_editor.md"),
                             op("project_deploy.md", "rewrite", "private",
                                store.memory("project_deploy.md", visibility="private"))])
    assert issues(check(store, plan)) == [("plan.visibility.privatised", "$.operations")]


def test_a_delete_must_name_an_existing_successor_or_a_time_verdict(store: Store) -> None:
    plan = base_plan(store, [op("feedback_tests.md", "delete", "safe")])
    refused = check(store, plan)
    assert issues(refused) == [("plan.delete.unaccounted", "$.operations[0]")]
    assert "DORMANT" in refused.errors[0].message and "into" in refused.errors[0].message
    for into in ("project_nowhere.md", "feedback_tests.md"):
        plan = base_plan(store, [op("feedback_tests.md", "delete", "safe", into=into)])
        assert issues(check(store, plan)) == [("plan.delete.into", "$.operations[0].into")]
    gone = base_plan(store, [op("feedback_tests.md", "delete", "safe", into="project_deploy.md"),
                             op("project_deploy.md", "delete", "safe", into="feedback_tests.md")])
    assert [i[0] for i in issues(check(store, gone))] == ["plan.delete.into", "plan.delete.into"]
    timed = base_plan(store, [op("feedback_tests.md", "delete", "safe")])
    next(s for s in timed["staleness"] if s["name"] == "feedback_tests.md")["verdict"] = "DORMANT"
    assert check(store, timed).ok


def test_a_secret_in_a_safe_memory_is_reported_without_echoing_it(store: Store) -> None:
    token = fake_token()
    content = store.memory("project_deploy.md", body=f"Deploy with\nGH_TOKEN={token} ops/deploy.sh")
    result = check(store, base_plan(store, [op("project_deploy.md", "rewrite", "safe", content)]))
    assert issues(result) == [("privacy.credential", "$.operations[0].content")]
    message = result.errors[0].message
    assert "project_deploy.md" in message and "github-classic-token" in message and "line" in message
    assert token not in json.dumps(result.as_dict())
    assert token[4:12] not in json.dumps(result.as_dict())
    with pytest.raises(PrivacyRejected) as info:
        raise_for(result)
    assert token not in json.dumps(info.value.as_dict()) and token not in str(info.value)


def test_the_same_secret_in_a_private_memory_is_fine(store: Store) -> None:
    content = store.memory("user_editor.md", body=f"token {fake_token()}")
    assert check(store, base_plan(store, [op("user_editor.md", "rewrite", "private", content)])).ok


def test_a_secret_in_a_new_safe_file_name_is_withheld_from_every_message(store: Store) -> None:
    token = fake_token(11)
    name = f"{token}.md"
    store.manifest = manifest_for(store.layout, SELECTED)
    result = check(store, base_plan(store, [op(name, "create", "safe", new_memory(name)),
                                            op(name, "rewrite", "safe", new_memory(name))]))
    codes = issues(result)
    assert ("privacy.credential", "$.operations[0].name") in codes
    assert ("plan.operation.scope", "$.operations[1].name") in codes
    assert token not in json.dumps(result.as_dict())


def test_a_secret_in_unparsable_frontmatter_is_not_echoed_by_the_parse_message(store: Store) -> None:
    token = fake_token(3)
    content = f"---\ndescription: d\ntype: {token}\nvisibility: private\n---\nbody\n"
    result = check(store, base_plan(store, [op("project_ports.md", "create", "private", content)]))
    assert issues(result) == [("plan.operation.content", "$.operations[0].content")]
    assert token not in json.dumps(result.as_dict())


def test_a_schema_error_never_echoes_the_offending_value(store: Store) -> None:
    token = fake_token(5)
    plan = base_plan(store)
    plan["inventory"][0]["name"] = f"{token}/x.md"
    plan[f"{token}"] = 1
    result = check(store, plan)
    assert [c for c, _ in issues(result)] == ["plan.schema", "plan.schema"]
    assert token not in json.dumps(result.as_dict())


def test_without_rules_the_privacy_scan_is_skipped_and_not_reported_as_passed(store: Store) -> None:
    content = store.memory("project_deploy.md", body=f"token {fake_token()}")
    result = validate_plan(base_plan(store, [op("project_deploy.md", "rewrite", "safe", content)]), store.manifest,
                           pre=store.pre, repo_root=store.layout.project_root, ruleset=None,
                           allow_publish=False, limits=Limits())
    assert result.ok and "privacy" not in result.checks


def test_raise_for_raises_input_rejected_with_every_issue(store: Store) -> None:
    plan = apply_patch(base_plan(store), CASES[-1]["patch"])
    result = check(store, plan)
    with pytest.raises(InputRejected) as info:
        raise_for(result)
    assert not isinstance(info.value, PrivacyRejected)
    assert info.value.code == "plan.identity" and len(info.value.issues) == 3


# -- the command --------------------------------------------------------------------------------

def write_pair(store: Store, tmp_path: Path, plan: Any) -> tuple[str, str]:
    plan_file, manifest_file = tmp_path / "plan.json", tmp_path / "manifest.json"
    plan_file.write_text(json.dumps(plan))
    manifest_file.write_text(json.dumps(store.manifest))
    return str(plan_file), str(manifest_file)


def test_the_command_exits_0_for_a_valid_plan(store: Store, tmp_path: Path) -> None:
    plan_file, manifest_file = write_pair(store, tmp_path, base_plan(store))
    result = store.env.run("validate", "--plan", plan_file, "--manifest", manifest_file, "--json")
    assert result.code == 0, result.err
    assert result.json() == {"ok": True, "checks": ALL_CHECKS, "errors": []}


def test_the_command_exits_1_and_lists_every_issue(store: Store, tmp_path: Path) -> None:
    plan = apply_patch(base_plan(store), CASES[-1]["patch"])
    plan_file, manifest_file = write_pair(store, tmp_path, plan)
    result = store.env.run("validate", "--plan", plan_file, "--manifest", manifest_file)
    assert result.code == 1
    out = result.json()
    assert out["ok"] is False and [(e["code"], e["path"]) for e in out["errors"]] == [
        tuple(e) for e in CASES[-1]["expect"]]
    assert "plan.identity" in result.err  # the human summary


def test_the_command_reads_a_run_dir(store: Store) -> None:
    run_dir = create_run_dir(store.layout.runs, store.layout.home, RUN_ID)
    (run_dir / "plan.json").write_bytes(dump_json(base_plan(store)))
    (run_dir / "manifest.json").write_bytes(dump_json(store.manifest))
    result = store.env.run("validate", "--run", RUN_ID, "--json")
    assert result.code == 0 and result.json()["ok"] is True


@pytest.mark.parametrize("problem", ["neither", "both", "no-manifest", "missing-file", "not-json", "nan",
                                     "manifest-not-object", "no-run", "bad-run-id"])
def test_the_command_exits_2_on_usage_errors(store: Store, tmp_path: Path, problem: str) -> None:
    plan_file, manifest_file = write_pair(store, tmp_path, base_plan(store))
    args = {
        "neither": ["validate"],
        "both": ["validate", "--run", RUN_ID, "--plan", plan_file, "--manifest", manifest_file],
        "no-manifest": ["validate", "--plan", plan_file],
        "missing-file": ["validate", "--plan", str(tmp_path / "absent.json"), "--manifest", manifest_file],
        "not-json": ["validate", "--plan", plan_file, "--manifest", manifest_file],
        "nan": ["validate", "--plan", plan_file, "--manifest", manifest_file],
        "manifest-not-object": ["validate", "--plan", plan_file, "--manifest", manifest_file],
        "no-run": ["validate", "--run", "20261130T120000Z-00000000"],
        "bad-run-id": ["validate", "--run", "../x"],
    }[problem]
    if problem == "not-json":
        Path(plan_file).write_text("{not json")
    if problem == "nan":
        Path(plan_file).write_text('{"schemaVersion": NaN}')
    if problem == "manifest-not-object":
        Path(manifest_file).write_text("[]")
    result = store.env.run(*args, "--json")
    assert result.code == 2, (result.out, result.err)


# -- robustness and speed -----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, width=32) | st.text(max_size=8)
    | st.sampled_from(["", "KEEP", "OPS_ONLY", "safe", "private", "create", "rewrite", "delete", "../x", "/etc",
                       "user_editor.md", "project_new.md", "MEMORY.md", "ops/deploy.sh", "found"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
    return out


@st.composite
def mutated_plans(draw: st.DrawFn, base: dict[str, Any]) -> Any:
    plan: Any = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(plan)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "drop", "add-key", "append"]))
        if not path:
            if action == "replace":
                plan = draw(JSON_VALUES)
            continue
        parent: Any = plan
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        if action == "drop":
            del parent[last]
        elif action == "replace":
            parent[last] = draw(JSON_VALUES)
        elif action == "add-key" and isinstance(parent[last], dict):
            parent[last][draw(st.text(max_size=10))] = draw(JSON_VALUES)
        elif action == "append" and isinstance(parent[last], list):
            parent[last].append(draw(JSON_VALUES) if draw(st.booleans()) else copy.deepcopy(parent[last][0])
                                if parent[last] else None)
    return plan


def _base_with_operations(store: Store) -> dict[str, Any]:
    return base_plan(store, [
        op("project_deploy.md", "rewrite", "safe", store.memory("project_deploy.md", body="b")),
        op("project_ports.md", "create", "private", new_memory("project_ports.md", "private")),
        op("user_editor.md", "delete", "private"),
    ])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_mutations_never_raise_and_always_yield_a_verdict(store: Store, data: st.DataObject) -> None:
    base = _base_with_operations(store)
    plan = data.draw(mutated_plans(base))
    result = check(store, plan)
    assert result.ok or result.errors
    assert result.ok == (not result.errors)
    json.dumps(result.as_dict())
    if result.ok:
        assert plan_validator().is_valid(plan)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_schema_pre_check_never_accepts_what_jsonschema_refuses(store: Store, data: st.DataObject) -> None:
    plan = data.draw(mutated_plans(_base_with_operations(store)))
    fast = fast_check()
    assert fast is not None
    if fast(plan):
        assert plan_validator().is_valid(plan)


def test_the_pre_check_accepts_a_large_valid_plan_so_jsonschema_is_not_run(store: Store) -> None:
    names = [f"project_topic-{i:05d}.md" for i in range(2000)]
    plan = base_plan(store)
    plan.update(selected=names, inventory=[{"name": n, "classification": "safe"} for n in names],
                clusters=[{"name": f"c{i}", "files": names[i:i + 5]} for i in range(0, 2000, 5)],
                staleness=[{"name": n, "verdict": "KEEP"} for n in names],
                grounding=[{"name": n, "status": "grounded", "observations": [{"path": "ops", "status": "found"}]}
                           for n in names],
                report=[{"name": n, "status": "kept", "summary": "ok"} for n in names])
    fast = fast_check()
    assert fast is not None and fast(plan) and plan_validator().is_valid(plan)


def test_inside_a_repository_a_project_memory_needs_a_grounding_observation(store: Store) -> None:
    assert (store.env.project / ".git").exists()
    plan = base_plan(store)
    entry = next(g for g in plan["grounding"] if g["name"] == "project_deploy.md")
    entry.update(status="not-applicable", reason="names no file", observations=[])
    refused = check(store, plan)
    assert [i for i in issues(refused) if i[0] == "plan.grounding.unobserved"] == [
        ("plan.grounding.unobserved", f"$.grounding[{plan['grounding'].index(entry)}].observations")]
    # A user or feedback memory may say not-applicable anywhere; outside a repository a project one may too.
    other = next(g for g in plan["grounding"] if not g["name"].startswith("project_"))
    other.update(status="not-applicable", reason="names no file", observations=[])
    shutil.rmtree(store.env.project / ".git")
    assert check(store, plan).ok


@pytest.mark.parametrize("repository", [True, False], ids=["with .git", "without .git"])
@pytest.mark.parametrize("status", ["grounded", "partially-grounded", "ungrounded"])
def test_a_row_claiming_grounding_without_an_observation_is_refused_with_or_without_git(
        store: Store, repository: bool, status: str) -> None:
    if not repository:
        shutil.rmtree(store.env.project / ".git")
    plan = base_plan(store)
    entry = next(g for g in plan["grounding"] if g["name"] == "project_deploy.md")
    entry.update(status=status, observations=[])
    assert issues(check(store, plan)) == [
        ("plan.grounding.unobserved", f"$.grounding[{plan['grounding'].index(entry)}].observations")]


def test_a_not_applicable_row_needs_a_reason_with_words_in_it(store: Store) -> None:
    plan = base_plan(store)
    index, entry = next((i, g) for i, g in enumerate(plan["grounding"]) if g["status"] == "not-applicable")
    del entry["reason"]
    assert issues(check(store, plan)) == [("plan.schema", f"$.grounding[{index}]")]
    assert "missing required field reason" in check(store, plan).errors[0].message
    entry["reason"] = ""
    assert issues(check(store, plan)) == [("plan.schema", f"$.grounding[{index}].reason")]
    entry["reason"] = "  \t "
    assert issues(check(store, plan)) == [("plan.grounding.reason", f"$.grounding[{index}].reason")]
    entry["reason"] = "names no repository path"
    assert check(store, plan).ok


@pytest.mark.parametrize("repository", [True, False], ids=["with .git", "without .git"])
def test_found_needs_a_regular_file_and_a_directory_is_refused(store: Store, repository: bool) -> None:
    if not repository:
        shutil.rmtree(store.env.project / ".git")
    assert (store.env.project / "ops").is_dir()
    refused = check(store, grounding_plan(store, "ops"))
    assert issues(refused) == [("plan.grounding.not-file", "$.grounding[1].observations[0].path")]
    assert "is a directory, not a regular file" in refused.errors[0].message
    assert check(store, grounding_plan(store, "ops", "missing")).ok
    assert check(store, grounding_plan(store, "ops/deploy.sh")).ok


def test_a_compact_plan_validates_as_its_expansion_and_a_malformed_default_is_refused(store: Store) -> None:
    from pipeline.planner.planjson import compacted

    plan = base_plan(store)
    assert check(store, compacted(plan)).ok
    broken = {**compacted(plan), "defaults": {"clusters": "all"}}
    assert ("plan.schema", "$.defaults.clusters") in issues(check(store, broken))
