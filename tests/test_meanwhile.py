"""The parent's work while the worker runs: steps in order, waited for, failures left to their real caller."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.worker.meanwhile import meanwhile


def test_meanwhile_runs_its_steps_in_order_in_another_thread_and_waits_for_them() -> None:
    seen: list[tuple[str, bool]] = []

    def step(name: str) -> None:
        time.sleep(0.02)
        seen.append((name, threading.current_thread() is threading.main_thread()))

    with meanwhile(lambda: step("a"), lambda: step("b")) as start:
        time.sleep(0.05)
        assert seen == []  # nothing runs before the block says the worker is on its way
        start()
        start()  # a second call starts nothing more
        assert len(seen) < 2  # the block does not wait for them to start
    assert seen == [("a", False), ("b", False)]


def test_a_block_that_never_starts_its_steps_runs_none_of_them() -> None:
    seen: list[str] = []
    with pytest.raises(KeyError), meanwhile(lambda: seen.append("ran")):
        raise KeyError("the worker never started")
    time.sleep(0.02)
    assert seen == []
    assert [t for t in threading.enumerate() if t.name == "memfold-meanwhile"] == []


def test_a_failing_step_skips_the_rest_and_raises_nothing_in_the_block() -> None:
    seen: list[str] = []

    def broken() -> None:
        raise ValueError("the real caller reports this")

    with meanwhile(broken, lambda: seen.append("after")) as start:
        start()
    assert seen == []


def test_the_block_s_own_error_still_propagates_after_the_steps_finished() -> None:
    seen: list[str] = []
    with pytest.raises(KeyError), meanwhile(lambda: (time.sleep(0.02), seen.append("done"))) as start:
        start()
        raise KeyError("worker failed")
    assert seen == ["done"]


def test_prepare_compiles_what_every_scan_runs_and_changes_no_finding() -> None:
    code = (
        "from pipeline.privacy import load_ruleset\n"
        "rs = load_ruleset()\n"
        "needs = rs._rule_needs()\n"
        "always = [(rs.rules[i], needs[i]) for i in sorted(rs._always)]\n"
        "outlined = [(r, g) for r, g in always if g is not None and g.outline is not None]\n"
        "plain = [r for r, g in always if g is None or g.outline is None]\n"
        "before = sum(r.pattern._compiled is not None for r, _ in always)\n"
        "rs.prepare()\n"
        "print(before, len(outlined) > 0, len(plain) > 0,"
        " all(r.pattern._compiled is not None for r in plain),"
        " all(g.outline._compiled is not None for _, g in outlined),"
        " sum(r.pattern._compiled is not None for r, _ in outlined),"
        " sum(r.pattern._compiled is not None for r in rs.rules if r.keywords),"
        " rs.allowlist._compiled is not None)\n"
        "text = 'token ghp_' + 'Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9 and /home/alice/notes'\n"
        "born = 'Contact: Maria Gonzalez (born 14.03.1987) about the keys'\n"
        "print(';'.join(','.join(sorted({f.rule_id for f in rs.scan(t)})) for t in (text, born)))\n"
    )
    root = Path(__file__).resolve().parents[1]
    prepared = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=root).stdout.splitlines()
    unprepared = subprocess.run([sys.executable, "-c", code.replace("rs.prepare()\n", "")], capture_output=True,
                                text=True, check=True, cwd=root).stdout.splitlines()
    # Nothing compiled before; after: every ungated rule without an outline, the outline (not the
    # Unicode-heavy pattern) of every one that has one, no keyword-gated rule ahead of need.
    assert prepared[0].split() == ["0", "True", "True", "True", "True", "0", "0", "True"]
    # Scans find the same with and without preparing, a rule behind its outline included.
    assert prepared[1] == unprepared[1] and prepared[1].split(";")[0]
    assert "date-of-birth-named" in prepared[1].split(";")[1]


def test_the_fact_keys_prepared_meanwhile_are_the_ones_the_summary_reads_and_follow_an_edit() -> None:
    from types import SimpleNamespace

    from pipeline.planner.text import _known_keys, fact_key, fact_keys, known_keys
    from pipeline.store.memory import Memory
    from pipeline.transaction import _later_stages

    memories = {f"n{i}.md": Memory(f"n{i}", f"Port note {i}", body=f"- API port is {8000 + i}\n- Lives in `web{i}`\n")
                for i in range(3)}
    with meanwhile(*_later_stages(SimpleNamespace(ruleset=None), SimpleNamespace(memories=memories))) as start:
        start()
    before = _known_keys.cache_info()
    for memory in memories.values():
        known_keys(memory)
    after = _known_keys.cache_info()
    # Every memory read was prepared: the summary's lookups all hit.
    assert (after.hits - before.hits, after.misses - before.misses) == (3, 0)
    for memory in memories.values():
        expected = fact_keys(memory) | {fact_key(memory.description)}
        assert known_keys(memory) == expected
        assert "api port is " + str(8000 + int(memory.name[1:])) in expected
    # The same name with other words (a hand edit after the run read the store) gets its own keys.
    edited = Memory("n0", "Port note 0", body="- API port is 9999\n")
    assert known_keys(edited) == {"api port is 9999", "port note 0"}


def test_the_command_reaches_its_worker_without_the_modules_the_thread_imports(tmp_path: Path) -> None:
    # What the preparation thread imports while the worker plans is not imported before the worker.
    seen = _modules_at_worker_start(tmp_path, ("pipeline.apply.summary", "pipeline.planner.text",
                                               "pipeline.validation.plan", "shutil"))
    assert seen == (4, ["[]"])  # the stand-in's spawn failure, as a real one exits


def _modules_at_worker_start(tmp_path: Path, modules: tuple[str, ...],
                             config: str | None = None) -> tuple[int, list[str]]:
    """Run ``memfold consolidate`` up to its worker stage with a stand-in worker that records which of
    ``modules`` the command had imported by then (and fails as a spawn failure does)."""
    code = (
        "import sys\n"
        "from pipeline import transaction\n"
        "from pipeline.errors import WorkerFailed\n"
        "from pipeline.cli import main\n"
        "def worker(*args, **kwargs):\n"
        f"    seen = [m for m in {modules!r} if m in sys.modules]\n"
        "    sys.__stdout__.write(repr(seen) + '\\n')\n"
        "    raise WorkerFailed('stand-in worker', code='worker.spawn')\n"
        "transaction.run_plan_worker = worker\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    if config is not None:
        home.mkdir()
        (home / "config.yaml").write_text(config, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", code, "--home", str(home), "--project", str(project), "--json",
                           "consolidate", "--no-context"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    return proc.returncode, proc.stdout.splitlines()[:1]


PRIVACY_MODULES = ("pipeline.privacy", "pipeline.privacy.engine", "pipeline.privacy.loader", "re2")


def test_the_shipped_privacy_rules_are_loaded_while_the_worker_plans_not_before_it(tmp_path: Path) -> None:
    # Nothing before the worker scans: importing and loading the rules happens on the thread.
    assert _modules_at_worker_start(tmp_path, PRIVACY_MODULES) == (4, ["[]"])


def test_privacy_rules_from_the_user_config_are_loaded_and_checked_before_the_run(tmp_path: Path) -> None:
    rule = ('privacy: {rules: [{id: acme-internal-token, category: credential, description: ACME token, '
            'pattern: "\\\\b(acme_[a-z0-9]{16})\\\\b"}]}\n')
    assert _modules_at_worker_start(tmp_path, PRIVACY_MODULES, rule) == (4, [repr(list(PRIVACY_MODULES))])


def test_the_preparation_starts_the_commits_fsync_threads_while_the_worker_plans() -> None:
    # A fresh process: the fsync pool is per process. After the steps, every thread a batch can use is
    # running, so the commit's first batch starts none.
    code = (
        "import threading\n"
        "from types import SimpleNamespace\n"
        "from pipeline.apply import durable\n"
        "from pipeline.transaction import _later_stages\n"
        "from pipeline.worker.meanwhile import meanwhile\n"
        "import time\n"
        "before = durable._POOL[0]._started if durable._POOL else 0\n"
        "with meanwhile(*_later_stages(SimpleNamespace(ruleset=None), SimpleNamespace(memories={}))) as start:\n"
        "    start()\n"
        "pool = durable._pool()\n"
        "deadline = time.monotonic() + 10\n"
        "while len(pool.workers) < pool._started and time.monotonic() < deadline:\n"
        "    time.sleep(0.001)\n"
        "print(before, pool._started, len(pool.workers), durable._FSYNC_THREADS - 1)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.split()
    assert out[0] == "0" and out[1] == out[2] == out[3] != "0"
