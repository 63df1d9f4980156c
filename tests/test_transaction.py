"""The consolidation's stages one by one: scope selection, the manifest, the summary, the stale check."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Env, inotify_count

from pipeline.apply.commit import Services
from pipeline.apply.stale import refuse_if_stale
from pipeline.apply.summary import summarize, summary_text
from pipeline.context.manifest import MANIFEST_KIND, build_manifest, scope_digest
from pipeline.context.scope import default_scope, select
from pipeline.context.snapshot import ContextLimits, build_snapshot
from pipeline.errors import InputRejected, StaleState, UsageError
from pipeline.paths import Layout, make_layout
from pipeline.state.model import Operation, PreState
from pipeline.state.post import compute_post
from pipeline.state.read import read_pre
from pipeline.store.memory import parse_memory
from pipeline.store.state import Limits
from pipeline.transaction import ConsolidateRequest, consolidate

RUN_ID = "20261130T120000Z-0a1b2c3d"


def _memory(name: str, description: str, body: str, visibility: str = "private") -> bytes:
    return (f"---\nname: {name}\ndescription: {description}\ntype: project\nvisibility: {visibility}\n"
            f"created: 2026-11-01\nmodified: 2026-11-01T09:00:00Z\n---\n{body}\n").encode()


def _memories(**bodies: tuple[str, str]) -> dict[str, Any]:
    return {f"{n}.md": parse_memory(_memory(n, d, b), f"{n}.md") for n, (d, b) in bodies.items()}


@pytest.fixture
def store(env: Env) -> tuple[Layout, PreState]:
    """Three memories written through the CLI: two private, one safe."""
    for args in (("project_api", "-d", "The API listens on port 8080", "-b", "make run"),
                 ("project_ci", "-d", "CI runs on every push", "--visibility", "safe", "-b", "make test"),
                 ("user_editor", "-d", "Prefers vim keybindings", "-t", "user", "-b", "vim")):
        assert env.run("add", *args).code == 0
    layout = make_layout(env.home, env.project)
    return layout, read_pre(layout, Limits())


# --- scope ----------------------------------------------------------------------------------------


def test_the_default_scope_is_related_with_a_context_all_without_and_select_with_names() -> None:
    assert default_scope(True, ()) == "related"
    assert default_scope(False, ()) == "all"
    assert default_scope(True, ("a",)) == "select"


def test_scope_all_selects_every_memory_sorted() -> None:
    memories = _memories(zeta=("z fact", "z"), alpha=("a fact", "a"))
    assert select("all", memories, {}, ()) == ["alpha.md", "zeta.md"]


def test_scope_select_resolves_names_without_the_extension_and_case_insensitively() -> None:
    memories = _memories(project_api=("api port", "8080"), user_editor=("vim", "vim"))
    assert select("select", memories, {}, ["PROJECT_API", "project_api.md"]) == ["project_api.md"]


def test_scope_select_refuses_a_name_that_is_not_a_memory() -> None:
    with pytest.raises(InputRejected) as caught:
        select("select", _memories(project_api=("api port", "8080")), {}, ["project_gone"])
    assert caught.value.code == "scope.unknown" and caught.value.exit_code == 1


def test_scope_related_selects_memories_sharing_words_with_a_candidate() -> None:
    memories = _memories(project_api=("The API server listens on port 8080", "make run"),
                         user_editor=("Prefers vim keybindings", "vim"))
    snapshot = {"candidates": [{"body": "the api server now listens on port 9090"}]}
    assert select("related", memories, snapshot, ()) == ["project_api.md"]


def test_scope_related_without_candidates_selects_nothing() -> None:
    memories = _memories(project_api=("The API server listens on port 8080", "make run"))
    assert select("related", memories, {"candidates": []}, ()) == []
    assert select("related", memories, {"candidates": ["not an object", None]}, ()) == []


def test_an_unknown_scope_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as caught:
        select("some", {}, {}, ())
    assert caught.value.exit_code == 2


# --- manifest -------------------------------------------------------------------------------------


def test_the_scope_digest_is_the_sha256_of_the_canonical_identity_object() -> None:
    key, snap = "a" * 64, "b" * 64
    digest = scope_digest(RUN_ID, key, snap, "disabled", ["z.md", "a.md"])
    # RFC 8785 for these ASCII-only values: sorted keys, no whitespace.
    expected = json.dumps({"contextMode": "disabled", "runId": RUN_ID, "scopeKey": key, "selected": ["a.md", "z.md"],
                           "snapshotDigest": snap}, sort_keys=True, separators=(",", ":"))
    assert digest == hashlib.sha256(expected.encode()).hexdigest()
    assert digest == scope_digest(RUN_ID, key, snap, "disabled", ["a.md", "z.md"])


@pytest.mark.parametrize("change", ["runId", "scopeKey", "snapshotDigest", "contextMode", "selected"])
def test_the_scope_digest_changes_with_every_input(change: str) -> None:
    args: dict[str, Any] = {"runId": RUN_ID, "scopeKey": "a" * 64, "snapshotDigest": "b" * 64,
                            "contextMode": "disabled", "selected": ["a.md"]}
    before = scope_digest(*args.values())
    args[change] = ["b.md"] if change == "selected" else ("transcript" if change == "contextMode" else "c" * 64)
    assert scope_digest(*args.values()) != before


def test_the_manifest_binds_identity_scope_roots_and_source_hashes(store: tuple[Layout, PreState],
                                                                   tmp_path: Path) -> None:
    layout, pre = store
    snapshot, data = build_snapshot(None, source="none", limits=ContextLimits())
    digest = hashlib.sha256(data).hexdigest()
    manifest = build_manifest(
        layout=layout, run_id=RUN_ID, run_dir=tmp_path, snapshot_digest=digest, context_mode=snapshot["contextMode"],
        scope="all", selected=["user_editor.md", "project_api.md"], source=pre.hash_maps(), worker={"name": "x"},
        sandbox={"enforced": True}, limits=Limits(max_file_bytes=4096), extract_limits={"maxPlanBytes": 10},
        allow_publish=False, created_at="2026-11-30T12:00:00Z",
    )
    assert manifest["kind"] == MANIFEST_KIND and manifest["schemaVersion"] == 1
    assert manifest["runId"] == RUN_ID and manifest["scopeKey"] == layout.scope_key
    assert manifest["scopeKey"] == hashlib.sha256(str(layout.project_root).encode()).hexdigest()
    assert manifest["artifactHash"] == manifest["snapshotDigest"] == digest
    assert manifest["contextMode"] == "disabled"
    assert manifest["selected"] == ["project_api.md", "user_editor.md"]
    assert manifest["scopeDigest"] == scope_digest(RUN_ID, layout.scope_key, digest, "disabled",
                                                   ["project_api.md", "user_editor.md"])
    assert manifest["roots"] == {"harness": str(layout.harness), "public": str(layout.mirror),
                                 "project": str(layout.project_root), "runDir": str(tmp_path)}
    assert manifest["sourceHashes"]["harness"]["project_ci.md"] == \
        hashlib.sha256((layout.harness / "project_ci.md").read_bytes()).hexdigest()
    assert set(manifest["sourceHashes"]["public"]) == {"MEMORY.md", "project_ci.md"}
    assert manifest["limits"]["maxFileBytes"] == 4096 and manifest["limits"]["maxPlanBytes"] == 10
    assert manifest["allowPublish"] is False


# --- summary --------------------------------------------------------------------------------------


def test_the_summary_lists_merges_once_and_names_reclassifications(store: tuple[Layout, PreState]) -> None:
    _, pre = store
    api = (pre.harness.memories()["project_api.md"]).replace(b"visibility: private", b"visibility: safe")
    new = _memory("project_new", "A fresh fact about caching", "ccache")
    ops = [Operation("project_api.md", "rewrite", "safe", api), Operation("user_editor.md", "delete", "private"),
           Operation("project_ci.md", "delete", "safe"), Operation("project_new.md", "create", "private", new)]
    plan = {"selected": ["project_api.md", "project_ci.md", "user_editor.md"],
            "report": [{"name": "project_ci.md", "status": "merged", "summary": "merged into project_api.md"},
                       {"name": "user_editor.md", "status": "deleted", "summary": "obsolete"},
                       {"name": "project_api.md", "status": "kept", "summary": "kept"}]}
    summary = summarize(RUN_ID, plan, pre, compute_post(pre, ops))
    assert summary["merged"] == ["project_ci.md"]
    assert summary["deleted"] == ["user_editor.md"]
    assert summary["rewritten"] == ["project_api.md"] and summary["created"] == ["project_new.md"]
    assert summary["reclassified"] == [{"name": "project_api.md", "from": "private", "to": "safe"}]
    assert summary["memories"] == {"before": 3, "after": 2} and summary["selected"] == 3
    assert summary["noOp"] is False and summary["ok"] is True
    assert summary["reasons"] == {"project_ci.md": "merged into project_api.md", "user_editor.md": "obsolete"}
    text = summary_text(summary)
    assert "3 → 2 memories: 1 merged, 0 expired" in text and "merged     project_ci.md: merged into project_api.md" in text
    assert "reclassified project_api.md: private -> safe" in text


def test_a_compact_plan_summarizes_as_its_full_shape(store: tuple[Layout, PreState]) -> None:
    """Items equal to an artifact's default are left out of a compact plan: the summary must still see
    the merges and reasons they carry, as it does in the full shape."""
    from pipeline.planner.planjson import compacted

    _, pre = store
    ops = [Operation("user_editor.md", "delete", "private"), Operation("project_ci.md", "delete", "safe")]
    merged = {"status": "merged", "summary": "merged into project_api.md"}
    plan = {"selected": ["project_api.md", "project_ci.md", "user_editor.md"],
            "report": [{"name": "project_ci.md", **merged}, {"name": "user_editor.md", **merged},
                       {"name": "project_api.md", "status": "kept", "summary": "kept"}]}
    compact = compacted(plan)
    assert [r["name"] for r in compact["report"]] == ["project_api.md"]  # the merges are the default
    post = compute_post(pre, ops)
    full, short = summarize(RUN_ID, plan, pre, post), summarize(RUN_ID, compact, pre, post)
    assert short["merged"] == full["merged"] == ["project_ci.md", "user_editor.md"]
    assert short["deleted"] == full["deleted"] == []
    assert short["reasons"] == full["reasons"] == dict.fromkeys(["project_ci.md", "user_editor.md"],
                                                                merged["summary"])


def test_a_plan_without_operations_is_a_no_op_even_when_an_index_is_rebuilt(store: tuple[Layout, PreState]) -> None:
    layout, _ = store
    (layout.harness / "MEMORY.md").write_bytes(b"# Memory Index\n")  # stale index, rebuilt by the post-state
    pre = read_pre(layout, Limits())
    post = compute_post(pre, [])
    assert post.hash_maps() != pre.hash_maps()
    summary = summarize(RUN_ID, {"selected": []}, pre, post)
    assert summary["noOp"] is True
    assert "verified no-op (0 memories checked)" in summary_text(summary)


# --- stale check ----------------------------------------------------------------------------------


def test_the_stale_check_passes_when_nothing_changed(store: tuple[Layout, PreState]) -> None:
    layout, pre = store
    refuse_if_stale(layout, Limits(), pre)


@pytest.mark.parametrize("change", ["edit", "add", "delete", "mirror"])
def test_the_stale_check_refuses_any_change_in_either_root(store: tuple[Layout, PreState], change: str) -> None:
    layout, pre = store
    assert layout.mirror is not None
    target = {"edit": layout.harness / "project_api.md", "add": layout.harness / "project_late.md",
              "delete": layout.harness / "user_editor.md", "mirror": layout.mirror / "project_ci.md"}[change]
    if change == "delete":
        target.unlink()
    elif change == "add":
        target.write_bytes(_memory("project_late", "late", "late"))
    else:
        with open(target, "ab") as fh:
            fh.write(b"one more line\n")
    with pytest.raises(StaleState) as caught:
        refuse_if_stale(layout, Limits(), pre)
    assert caught.value.exit_code == 5 and caught.value.code == "state.stale"
    assert target.name in caught.value.message


# --- the orchestrator -----------------------------------------------------------------------------


def _services(layout: Layout) -> Services:
    from pipeline.privacy import load_ruleset

    now = dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
    return Services(layout=layout, limits=Limits(), clock=lambda: now, ruleset=load_ruleset())


def test_a_dry_run_reports_the_run_dir_and_writes_no_receipt(store: tuple[Layout, PreState]) -> None:
    layout, pre = store
    receipts = sorted(layout.receipts.iterdir())
    summary = consolidate(_services(layout), ConsolidateRequest(dry_run=True))
    run = Path(summary["runDir"])
    assert summary["dryRun"] is True and summary["noOp"] is True and "receipt" not in summary
    assert sorted(layout.receipts.iterdir()) == receipts
    assert not (run / "post-receipt.json").exists() and not (run / "journal.json").exists()
    assert json.loads((run / "validation.json").read_bytes())["ok"] is True
    assert read_pre(layout, Limits()).hash_maps() == pre.hash_maps()
    assert list(summary["timings"]) == ["launcher-start", "recover", "read", "sync", "snapshot", "manifest", "worker",
                                        "extraction", "validation", "stale-check", "index"]


def test_the_consolidation_process_imports_no_dataclasses_or_secrets() -> None:
    """Their imports (inspect, ast, dis; random and OpenSSL) cost every consolidation tens of ms."""
    import subprocess
    import sys

    code = ("import sys\nimport pipeline.commands.consolidation, pipeline.transaction, pipeline.apply.commit\n"
            "import pipeline.worker.run, pipeline.validation.plan, pipeline.sandbox.policy\n"
            "print(sorted(m for m in ('dataclasses', 'inspect', 'secrets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"


def test_a_large_stores_consolidation_is_watched_so_its_post_commit_check_reads_back_only_its_writes(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import transaction
    from pipeline.state import landed, warm

    for i, topic in enumerate(("blue green deploys", "rotating staging tokens", "warming the build cache")):
        assert env.run("add", f"project_note-{i}", "-d", f"how we handle {topic}",
                       "-b", f"Notes on {topic}.", "--visibility", "safe" if i else "private").code == 0
    monkeypatch.setattr(warm, "WATCH_FROM_DIR_BYTES", 0)  # every store counts as large
    vouched: list[bool] = []
    checked: list[bool] = []
    commit_run, landed_in = transaction.commit_run, landed._landed

    def watched_commit(*args: Any, **kwargs: Any) -> Any:
        vouched.append(args[3].vouched is not None)  # (svc, run_dir, record, pre, ...)
        return commit_run(*args, **kwargs)

    def counted_landed(*args: Any, **kwargs: Any) -> Any:
        checked.append(args[4])
        return landed_in(*args, **kwargs)

    monkeypatch.setattr(transaction, "commit_run", watched_commit)
    monkeypatch.setattr(landed, "_landed", counted_landed)
    watches = inotify_count()
    result = env.run("--json", "consolidate", "--no-context")
    assert result.code == 0, result.err
    assert vouched == [True] and checked and all(checked)
    timings = json.loads(result.out)["timings"]
    parts = [timings[part] for part in ("commit: apply", "commit: re-verify", "commit: index wait")]
    assert all(ms >= 0 for ms in parts) and sum(parts) <= timings["commit"]
    assert inotify_count() == watches  # the run's watch is closed with it
    assert env.run("verify").code == 0 and env.run("audit").code == 0
