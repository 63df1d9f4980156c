"""Run a piece of the sandbox as an ordinary user: the same checks must hold for every uid.

Under root (as CI runs) the tests create one system user, ``memfold-test``, and run a script
as that user with the system ``python3`` (the test interpreter may live in root's home, which
other users cannot read). The package and the hostile workers are copied into a directory that
user owns, so it needs no access to the checkout. Run as an ordinary user, the script simply
runs as that user.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
USER = "memfold-test"
_SYSTEM_PYTHON = "/usr/bin/python3"


def _ensure_user() -> pwd.struct_passwd:
    """Create the test user once per machine; safe when several test processes race."""
    with open("/tmp/.memfold-test-user.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(USER)
        except KeyError:
            pass
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, capture_output=True)
        return pwd.getpwnam(USER)


@dataclass
class OrdinaryUser:
    """A uid without privileges and a directory it owns, holding a copy of the package."""

    uid: int
    gid: int
    base: Path
    python: str
    _code: str | None = field(default=None, repr=False)

    def path(self, name: str) -> Path:
        return self.base / name

    def run(self, script: str, *args: str, timeout: float = 60, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[bytes]:
        """Run ``python -c script args`` as this user, cwd the base dir, package importable."""
        full_env = {"PYTHONPATH": str(self.base), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
                    "HOME": str(self.base / "home"), **(env or {})}
        kwargs: dict[str, Any] = {}
        if os.getuid() != self.uid:
            kwargs = {"user": self.uid, "group": self.gid, "extra_groups": []}
        return subprocess.run([self.python, "-c", script, *args], env=full_env, cwd=str(self.base),
                              capture_output=True, timeout=timeout, check=False, **kwargs)

    def checkout_path(self) -> str:
        """A PYTHONPATH under which this user imports the checkout's package and the venv's packages: the
        checkout itself where the user may read it, else a readable copy in the user's directory (a
        checkout below a root-only directory such as /root, or a 0700 temporary one)."""
        if self._code is None:
            site = sysconfig.get_paths()["purelib"]
            probe = self.run("import sys\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
                             "import pipeline.cli, yaml\n", env={"PYTHONPATH": f"{REPO}:{site}"})
            self._code = f"{REPO}:{site}" if probe.returncode == 0 else readable_copy(self.base / "code", site)
        return self._code

    def run_json(self, script: str, *args: str, timeout: float = 60) -> Any:
        """Run a script whose last stdout line is JSON; fail the test with its stderr otherwise."""
        proc = self.run(script, *args, timeout=timeout)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])


def readable_copy(into: Path, site: str) -> str:
    """The package, its data dirs, the test workers and the venv's packages under ``into`` (root-owned,
    world-readable): a world-readable file is hard-linked, anything else copied and made readable, so
    no mode of the checkout itself changes."""
    def link(src: str, dst: str) -> None:
        if os.stat(src).st_mode & 0o004:
            try:
                os.link(src, dst)
                return
            except OSError:
                pass  # another filesystem: copied
        shutil.copy2(src, dst)
        os.chmod(dst, os.stat(dst).st_mode | 0o444)

    skip = shutil.ignore_patterns("__pycache__")
    for name in ("pipeline", "schemas", "procedures", "docs", "tests/workers"):
        shutil.copytree(REPO / name, into / "src" / name, ignore=skip, copy_function=link)
    shutil.copytree(site, into / "site", ignore=skip, copy_function=link, symlinks=True)
    for path in [into, *into.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    return f"{into / 'src'}:{into / 'site'}"


@pytest.fixture
def ordinary_user() -> Iterator[OrdinaryUser]:
    if os.getuid() == 0:
        if not os.access(_SYSTEM_PYTHON, os.X_OK) or shutil.which("useradd") is None:
            pytest.skip("needs useradd and a system python3 to run as an ordinary user")
        entry = _ensure_user()
        uid, gid, python = entry.pw_uid, entry.pw_gid, _SYSTEM_PYTHON
    else:
        uid, gid, python = os.getuid(), os.getgid(), sys.executable
    base = Path(f"/tmp/memfold-user-{secrets.token_hex(6)}")
    base.mkdir(mode=0o755)
    shutil.copytree(REPO / "pipeline", base / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tests" / "workers", base / "workers", ignore=shutil.ignore_patterns("__pycache__"))
    (base / "home").mkdir()
    if os.getuid() == 0:
        for path in [base, *base.rglob("*")]:
            os.chown(path, uid, gid, follow_symlinks=False)
    try:
        yield OrdinaryUser(uid, gid, base, python)
    finally:
        shutil.rmtree(base, ignore_errors=True)
