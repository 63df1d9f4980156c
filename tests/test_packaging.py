"""The installed wheel finds its schemas and procedures from any directory; the demo passes."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.integration
def test_a_wheel_installed_in_a_fresh_venv_runs_init_and_consolidate_from_anywhere(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    # pip and the build backend keep caches under HOME, which the test fixture makes unusable on purpose.
    build_env = {**os.environ, "HOME": str(tmp_path / "build-home")}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(REPO)], check=True, timeout=300, env=build_env)
    wheel = next(wheels.glob("memfold-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    target = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, str(wheel)],
                   check=True, timeout=300, env=build_env)
    # Dependencies come from this interpreter's site-packages; memfold itself only from the wheel.
    deps = os.pathsep.join([sysconfig.get_path("purelib"), *site.getsitepackages()])
    project = tmp_path / "project"
    project.mkdir()
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": deps, "HOME": str(tmp_path), "MEMFOLD_HOME": str(tmp_path / "home")}
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import pipeline; print(pipeline.__file__)"],
                           capture_output=True, text=True, cwd=cwd, env=env, check=True).stdout
    assert where.startswith(target), where
    entry_points = next(Path(target).glob("memfold-*.dist-info")) / "entry_points.txt"
    assert "memfold = pipeline.cli:run" in entry_points.read_text()
    for args in (["init"], ["add", "project_a", "-d", "alpha fact", "--visibility", "safe"],
                 ["consolidate", "--no-context"]):
        proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pipeline", "--project", str(project), *args],
                              capture_output=True, text=True,
                              cwd=cwd, env=env, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    assert (project / ".memory" / "project_a.md").is_file()
    assert (Path(target) / "pipeline" / "_data" / "schemas" / "plan.schema.json").is_file()
    assert (Path(target) / "pipeline" / "_data" / "procedures" / "consolidate.md").is_file()


@pytest.mark.integration
def test_the_demo_runs_the_main_job_and_passes(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline", "demo"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("demo passed")
    assert "6 → 4 memories" in proc.stdout and "verified no-op" in proc.stdout
    assert "Zx81Zx81" not in proc.stdout + proc.stderr  # the token itself, never more than its public prefix


def test_the_demo_passes_when_its_two_duplicate_notes_fall_in_different_seconds(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import datetime as dt
    import itertools

    from pipeline.cli import main

    ticks = itertools.count()
    start = dt.datetime.now(dt.UTC)

    class Ticking(dt.datetime):
        """A clock one second further on at every reading: no two commands share a second."""

        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> Ticking:  # type: ignore[override]
            moment = start + dt.timedelta(seconds=next(ticks))
            return cls.fromtimestamp(moment.timestamp(), tz)

    monkeypatch.delenv("MEMFOLD_NOW", raising=False)
    monkeypatch.setattr(dt, "datetime", Ticking)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    # The second note is the newer one now: the pair merged into it, holding the facts of both.
    assert "merged into project_deploy-howto.md, which kept the facts of both: yes" in out
    assert out.rstrip().endswith("demo passed")
