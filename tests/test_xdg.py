"""The default home follows the XDG base directories; an explicit home keeps everything inside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO

from pipeline.paths import user_files


def _xdg(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "u"), "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_STATE_HOME": str(tmp_path / "state")}


def test_the_default_home_puts_config_cache_and_logs_in_their_xdg_dirs(tmp_path: Path) -> None:
    env = _xdg(tmp_path)
    home = str(tmp_path / "data" / "memfold")
    assert user_files(home, env) == (str(tmp_path / "config" / "memfold" / "config.yaml"),
                                     str(tmp_path / "cache" / "memfold"),
                                     str(tmp_path / "state" / "memfold" / "logs"))


def test_a_config_at_the_old_place_is_still_read_until_one_exists_at_the_new(tmp_path: Path) -> None:
    env = _xdg(tmp_path)
    home = tmp_path / "data" / "memfold"
    home.mkdir(parents=True)
    (home / "config.yaml").write_text("lock:\n  timeout: 1\n")
    assert user_files(str(home), env)[0] == str(home / "config.yaml")
    new = tmp_path / "config" / "memfold"
    new.mkdir(parents=True)
    (new / "config.yaml").write_text("lock:\n  timeout: 2\n")
    assert user_files(str(home), env)[0] == str(new / "config.yaml")


def test_an_explicit_home_keeps_everything_inside_it(tmp_path: Path) -> None:
    env = {**_xdg(tmp_path), "MEMFOLD_HOME": str(tmp_path / "mine")}
    assert user_files(str(tmp_path / "mine"), env) == (str(tmp_path / "mine" / "config.yaml"),
                                                       str(tmp_path / "mine"), str(tmp_path / "mine" / "logs"))
    other = {k: v for k, v in env.items() if k != "MEMFOLD_HOME"}
    assert user_files(str(tmp_path / "elsewhere"), other)[0] == str(tmp_path / "elsewhere" / "config.yaml")


def test_memfold_path_shows_the_xdg_locations_of_the_default_home(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    environ = {k: v for k, v in os.environ.items() if k != "MEMFOLD_HOME"}
    environ.update(_xdg(tmp_path), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--project", str(project), "--json", "path"],
                          capture_output=True, text=True, timeout=60, env=environ)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["config"] == str(tmp_path / "config" / "memfold" / "config.yaml")
    assert data["logs"] == str(tmp_path / "state" / "memfold" / "logs")
    assert data["home"] == str(tmp_path / "data" / "memfold")
