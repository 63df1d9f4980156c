"""A team on real git: a bare remote, and people each with a memfold home of their own and a clone."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

from conftest import Result


def git(where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Real git, as a person runs it (never through memfold's helper)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", GIT_CONFIG_GLOBAL=os.devnull)
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=check, env=env,
                          timeout=60)


@dataclass
class Person:
    name: str
    home: Path
    clone: Path

    def run(self, line: str, where: Path | None = None) -> Result:
        """A memfold command line, run by the real CLI in this process with this person's home and clone."""
        from pipeline.cli import main

        args = ["--home", str(self.home), "--project", str(where or self.clone), *shlex.split(line)]
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(args)
        return Result(code, out.getvalue(), err.getvalue())

    def spawn(self, line: str) -> Result:
        """The same command as a process of its own (what a git hook or a host starts)."""
        proc = subprocess.run([sys.executable, "-m", "pipeline", "--home", str(self.home), "--project",
                               str(self.clone), *shlex.split(line)], capture_output=True, text=True, timeout=120,
                              cwd=str(self.clone), env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return git(self.clone, *args, check=check)

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    @property
    def mirror(self) -> Path:
        return self.clone / ".memory"

    def project_home(self) -> Path:
        homes = sorted((self.home / "projects").iterdir())
        assert len(homes) == 1, homes
        return homes[0]

    def harness(self) -> Path:
        return self.project_home() / "memory"


@dataclass
class Team:
    root: Path
    remote: Path
    people: dict[str, Person] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path) -> Team:
        remote = root / "remote.git"
        git(root, "init", "-q", "--bare", "-b", "main", str(remote))
        return cls(root, remote)

    def person(self, name: str) -> Person:
        if name not in self.people:
            self.people[name] = Person(name, self.root / f"home-{name}", self.root / name)
        return self.people[name]

    def clone(self, name: str) -> Person:
        person = self.person(name)
        git(self.root, "clone", "-q", str(self.remote), str(person.clone))
        person.git("config", "user.name", name)
        person.git("config", "user.email", f"{name}@example.org")
        person.git("checkout", "-q", "-B", "main")
        return person
