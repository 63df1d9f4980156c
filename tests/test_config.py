"""The user config: per-section validation, the shipped schema, and extraction bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.config import config_schema, load_config
from pipeline.errors import ConfigError
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
