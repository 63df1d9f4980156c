"""A team sharing one repository through a bare remote: each teammate a clone, a memfold home and a git
identity of their own; real git and the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from conftest import REPO, Env, Result

from pipeline.receipts.witness import Head
from pipeline.store.memory import parse_memory, render_memory

HEADS = Path(".memfold") / "heads"


def git_env() -> dict[str, str]:
    """The test process's environment for git: no system config; the package importable for the driver."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "PYTHONPATH": str(REPO), "GIT_TERMINAL_PROMPT": "0"})
    return env


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(("git", *args), cwd=cwd, capture_output=True, text=True, timeout=120, env=git_env(),
                          check=False)


def ok_git(cwd: Path, *args: str) -> str:
    done = run_git(cwd, *args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@dataclass
class Mate:
    name: str
    clone: Path
    home: Path
    env: Env = field(init=False)

    def __post_init__(self) -> None:
        self.env = Env(home=self.home, project=self.clone)

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_git(self.clone, *args)

    def ok(self, *args: str) -> str:
        return ok_git(self.clone, *args)

    def memfold(self, *args: str) -> Result:
        return self.env.run(*args)

    def commit(self, message: str) -> None:
        self.ok("add", "-A")
        self.ok("commit", "-q", "-m", message)

    def path(self, name: str) -> Path:
        return self.clone / ".memory" / name

    def edit_memory(self, name: str, now: str, **changes: str) -> None:
        """Change a memory file as memfold writes one: the given fields, ``modified`` stamped ``now``."""
        path = self.path(name)
        memory = parse_memory(path.read_bytes(), name)
        path.write_bytes(render_memory(memory.with_changes(modified=now, **changes)))

    def write_head(self, chain: str, seq: int) -> Path:
        """A chain head file as memfold writes it, in ``.memfold/heads/``."""
        path = self.clone / HEADS / f"{chain[:16]}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(Head(chain, seq, f"20261130T120000Z-{seq:08x}", f"{seq:064x}").to_bytes())
        return path


@dataclass
class Team:
    remote: Path
    mates: dict[str, Mate] = field(default_factory=dict)

    def join(self, name: str, root: Path) -> Mate:
        clone = root / name
        ok_git(root, "clone", "-q", str(self.remote), str(clone))
        mate = Mate(name, clone, root / f"{name}-home")
        mate.ok("config", "user.name", name)
        mate.ok("config", "user.email", f"{name}@example.com")
        mate.ok("config", "pull.rebase", "false")
        self.mates[name] = mate
        return mate


def make_team(root: Path, names: tuple[str, ...], drivers: tuple[str, ...]) -> Team:
    """A bare remote whose first commit is an initialised mirror and memfold's .gitattributes block,
    cloned once per name; those in ``drivers`` registered memfold's merge drivers."""
    remote = root / "remote.git"
    ok_git(root, "init", "-q", "--bare", "-b", "main", str(remote))
    team = Team(remote)
    first = team.join(names[0], root)
    first.ok("checkout", "-q", "-b", "main")
    assert first.memfold("init").code == 0
    assert first.memfold("hooks", "install", "git").code == 0
    first.commit("memfold: initialised mirror and merge attributes")
    first.ok("push", "-q", "origin", "main")
    if names[0] not in drivers:
        assert first.memfold("hooks", "uninstall", "git").code == 0
    for name in names[1:]:
        mate = team.join(name, root)
        assert mate.memfold("init").code == 0
        if name in drivers:
            assert mate.memfold("hooks", "install", "git").code == 0
    return team


def memfold_stub(bin_dir: Path, log: Path, sync_exit: int) -> Path:
    """An executable named ``memfold``: ``sync`` is recorded in ``log`` (arguments, working directory) and
    exits ``sync_exit``; anything else runs the real CLI."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    stub = bin_dir / "memfold"
    stub.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "if 'sync' in sys.argv[1:]:\n"
        f"    with open({str(log)!r}, 'a') as fh:\n"
        "        fh.write(' '.join(sys.argv[1:]) + '\\t' + os.getcwd() + '\\n')\n"
        f"    sys.exit({sync_exit})\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from pipeline.cli import run\n"
        "sys.exit(run())\n")
    stub.chmod(0o755)
    return stub
