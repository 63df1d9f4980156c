"""The user config: per-section validation, the shipped schema, and extraction bounds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from pipeline.config import cache_file, load_config
from pipeline.config.models import config_schema
from pipeline.errors import ConfigError, UnsafeOwner
from pipeline.resources import data_dir


def test_the_shipped_config_schema_is_the_one_the_models_generate() -> None:
    shipped = json.loads((data_dir("schemas") / "config.schema.json").read_text())
    assert shipped == json.loads(json.dumps(config_schema()))


def test_a_missing_file_means_defaults(tmp_path: Path) -> None:
    cfg = load_config(tmp_path / "config.yaml")
    assert cfg.problems == [] and cfg.lock.timeout == 5.0 and cfg.store_limits().max_files == 4096


def test_a_broken_section_refuses_only_where_it_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lock: {timeout: 2}\nworkers: {x: {argv: []}}\n")
    cfg = load_config(path)
    assert cfg.lock.timeout == 2
    with pytest.raises(ConfigError) as info:
        _ = cfg.workers
    assert "$.workers.x.argv" in info.value.message and info.value.exit_code == 2
    assert path.read_text() == "lock: {timeout: 2}\nworkers: {x: {argv: []}}\n"


def test_unknown_sections_and_yaml_errors_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("limitz: {}\n")
    assert [p.code for p in load_config(path).problems] == ["config.unknown"]
    path.write_text("limits: [\n")
    cfg = load_config(path)
    assert cfg.problems[0].code == "config.yaml"
    with pytest.raises(ConfigError):
        _ = cfg.limits


def test_worker_output_bounds_come_from_the_limits_section(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("limits: {worker_output_bytes: 33554432, worker_output_lines: 500000, plan_bytes: 20000000}\n")
    limits = load_config(path).extract_limits()
    assert (limits.max_stdout_bytes, limits.max_lines, limits.max_plan_bytes) == (33554432, 500000, 20000000)


def test_the_defaults_table_is_what_the_models_default_to() -> None:
    from pipeline.config import DEFAULTS
    from pipeline.config.models import WORKER_DEFAULTS, section_models

    sections, worker_model = section_models()
    for name, model in sections.items():
        dumped = model().model_dump()
        assert (dumped["workers"] if name == "workers" else dumped) == DEFAULTS[name], name
    worker = worker_model(argv=["x"]).model_dump()
    assert {k: v for k, v in worker.items() if k != "argv"} == WORKER_DEFAULTS


def _settle() -> None:
    """Wait out the two seconds within which a config is never cached (its ctime cannot be set back)."""
    time.sleep(2.1)


def test_validated_sections_are_cached_and_a_changed_file_is_validated_again(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lock: {timeout: 2}\nruns: {keep: 0}\n")
    _settle()
    first = load_config(path)
    cache = Path(cache_file(tmp_path))
    assert cache.is_file()
    assert json.loads(cache.read_text())["value"]["values"]["lock"] == {"timeout": 2.0}
    code = (f"import sys\nfrom pipeline.config import load_config\ncfg = load_config({str(path)!r})\n"
            "print(cfg.lock.timeout, [p.path for p in cfg.problems], 'pydantic' in sys.modules, 'yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}).stdout
    assert out.split() == ["2.0", "['$.runs.keep']", "False", "False"]  # problems come from the cache too
    assert [p.path for p in first.problems] == ["$.runs.keep"]
    # Same size, new content: the identity (mtime, ctime) changes, so the file is validated again.
    path.write_text("lock: {timeout: 7}\nruns: {keep: 9}\n")
    assert load_config(path).lock.timeout == 7 and load_config(path).problems == []


def test_the_cache_file_all_installations_shared_is_removed_when_the_config_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lock: {timeout: 2}\n")
    (tmp_path / "cache").mkdir()
    legacy = tmp_path / "cache" / "config.json"
    legacy.write_text('{"key": [], "value": {"values": {"lock": {"timeout": 99}}}}')
    _settle()
    assert load_config(path).lock.timeout == 2
    assert not legacy.exists()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [Path(cache_file(tmp_path)).name]


def test_a_config_written_just_now_is_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lock: {timeout: 3}\n")
    assert load_config(path).lock.timeout == 3
    assert not Path(cache_file(tmp_path)).exists()


def test_a_stale_cache_entry_is_never_used(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("lock: {timeout: 3}\n")
    _settle()
    load_config(path)
    cache = Path(cache_file(tmp_path))
    doc = json.loads(cache.read_text())
    doc["value"]["values"]["lock"]["timeout"] = 99.0  # a cache from another file identity
    doc["key"][0][2] += 1
    cache.write_text(json.dumps(doc))
    assert load_config(path).lock.timeout == 3


def test_sections_are_read_only_copies(tmp_path: Path) -> None:
    cfg = load_config(tmp_path / "config.yaml")
    privacy = cfg.privacy
    privacy.rules.append({"id": "x"})
    assert load_config(tmp_path / "config.yaml").privacy.rules == []
    with pytest.raises(AttributeError):
        privacy.rules = []
    with pytest.raises(AttributeError):
        _ = cfg.lock.timeout_seconds


def test_no_cache_is_written_through_a_symlinked_home(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "home").symlink_to(real)
    (real / "config.yaml").write_text("lock: {timeout: 4}\n")
    _settle()
    assert load_config(tmp_path / "home" / "config.yaml").lock.timeout == 4
    assert not (real / "cache").exists()


def test_worker_limits_are_validated_and_reach_the_chosen_worker(tmp_path: Path) -> None:
    from pipeline.worker.task import choose_worker

    path = tmp_path / "config.yaml"
    path.write_text("workers: {a: {argv: [x], limits: {processes: 64, scratch_mb: 8}},"
                    " b: {argv: [x], limits: {processes: 1, memory: 9}}}\n")
    cfg = load_config(path)
    assert sorted(p.path for p in cfg.problems) == ["$.workers.b.limits.memory", "$.workers.b.limits.processes"]
    path.write_text("workers: {a: {argv: [x], limits: {processes: 64, scratch_mb: 8}}}\n")
    choice = choose_worker("a", load_config(path).workers, {})
    assert dict(choice.limits) == {"processes": 64, "memory_mb": 4096, "scratch_mb": 8}
    assert dict(choose_worker("builtin", {}, {"run_dir": "/r"}).limits) == {"processes": 512, "memory_mb": 4096,
                                                                         "scratch_mb": 1024}


def test_the_shipped_schema_refuses_bad_worker_limits_too() -> None:
    import jsonschema

    schema = json.loads((data_dir("schemas") / "config.schema.json").read_text())
    good = {"workers": {"a": {"argv": ["x"], "limits": {"memory_mb": 2048}}}}
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"workers": {"a": {"argv": ["x"], "limits": {"processes": 1}}}}, schema)


def second_installation(base: Path) -> Path:
    """A copy of this installation (the package and its data) in another directory, without bytecode."""
    install = base / "second-install"
    shutil.copytree(REPO / "pipeline", install / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "schemas", install / "schemas")
    return install


def imported_by(install: Path, *args: str, stdin: Path | None = None) -> set[str]:
    """The modules a real ``python -m pipeline ARGS`` run from ``install`` imports, by name."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with open(stdin or os.devnull, "rb") as source:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipeline", *args], stdin=source,
                              capture_output=True, text=True, check=False, cwd=str(install),
                              env={**env, "PYTHONPATH": str(install)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.integration
def test_two_installations_sharing_a_home_each_keep_their_validated_config(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (home / "config.yaml").write_text("inject: {max_files: 6}\n")
    _settle()
    installs = [REPO, second_installation(tmp_path)]
    args = ("--home", str(home), "--project", str(project), "inject")
    runs = [imported_by(install, *args) for _ in range(2) for install in installs]
    assert all("pydantic" in run and "yaml" in run for run in runs[:2])  # each validates once
    assert not any({"pydantic", "yaml"} & run for run in runs[2:]), "an installation validated again"
    caches = sorted(p.name for p in (home / "cache").iterdir() if p.name.startswith("config-"))
    assert caches == sorted(Path(cache_file(home, str(install / "pipeline"))).name for install in installs)
    for name in caches:
        assert json.loads((home / "cache" / name).read_text())["value"]["values"]["inject"]["max_files"] == 6


@pytest.mark.parametrize("depth", [100, 5000])
def test_a_config_nested_too_deep_is_a_config_problem_never_a_recursion_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("privacy:\n  allowlist: " + "[" * depth + "]" * depth + "\n")
    cfg = load_config(path)
    assert [p.code for p in cfg.problems] == ["config.depth"]
    with pytest.raises(ConfigError) as info:
        _ = cfg.privacy
    assert info.value.exit_code == 2 and "nested deeper than 64" in info.value.message


def test_a_config_whose_aliases_unfold_past_the_bound_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert [p.code for p in load_config(path).problems] == ["config.depth"]


@pytest.mark.parametrize(("what", "mode"), [("file", 0o664), ("file", 0o646), ("folder", 0o777), ("folder", 0o775)])
def test_a_config_others_may_write_is_refused_before_anything_in_it_is_used(
        tmp_path: Path, what: str, mode: int) -> None:
    folder = tmp_path / "home"
    folder.mkdir(mode=0o700)
    path = folder / "config.yaml"
    path.write_text('privacy:\n  allowlist: ["(?s).*"]\n')
    (path if what == "file" else folder).chmod(mode)
    with pytest.raises(UnsafeOwner) as info:
        load_config(path)
    where = path if what == "file" else folder
    assert info.value.code == "settings.unsafe" and info.value.exit_code == 2
    assert str(where) in info.value.message and f"mode {mode:04o}" in info.value.message
    assert f"chmod go-w {where}" in (info.value.hint or "")
    assert not (folder / "cache").exists()  # nothing was validated or cached from it
    (path if what == "file" else folder).chmod(0o644 if what == "file" else 0o700)
    assert load_config(path).privacy.allowlist == ["(?s).*"]
