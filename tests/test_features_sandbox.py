"""Step definitions for features/sandbox.feature: hostile workers run through `memfold consolidate`."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, Result, head_summary, survivors
from pytest_bdd import given, parsers, scenarios, then, when
from unprivileged import readable_copy

from pipeline.sandbox import probe

scenarios("sandbox.feature")
pytestmark = pytest.mark.integration

HOSTILE = REPO / "tests" / "workers" / "hostile.py"
PROBE = probe()
SECRET = f"memfold-secret-{secrets.token_hex(12)}"
# attack name -> (hostile.py attack, its arguments); {…} are worker placeholders, <…> test resources.
ATTACKS: dict[str, tuple[str, list[str]]] = {
    "write-store": ("write", ["{harness}/planted.md", "{harness}/user_tea.md"]),
    "write-mirror": ("write", ["{public}/planted.md", "{public}/project_deploy.md"]),
    "write-project": ("write", ["{repo}/planted.txt", "{repo}/.git/config"]),
    "write-home": ("write", ["<home>/planted", "<home>/.profile"]),
    "remove": ("remove", ["{harness}/user_tea.md", "{harness}/renamed.md", "{public}"]),
    "symlink": ("symlink", ["{run_dir}/scratch/link", "{harness}/user_tea.md", "{harness}/planted.md"]),
    "tcp": ("tcp", ["<port>"]),
    "udp": ("udp", ["<port>"]),
    "unix": ("unix", ["<unix>"]),
    "env": ("env", ["<pid>"]),
    "root": ("root", ["{run_dir}/scratch/owned", "{harness}"]),
    "forkbomb": ("forkbomb", ["10"]),
    "forkbomb-1500": ("forkbomb", ["3", "1500"]),
    "memory": ("memory", ["512", "1"]),
    "fill": ("fill", ["{run_dir}/scratch", "64"]),
    "orphan": ("orphan", ["{run_dir}/scratch/marker", "1"]),
    "stdout": ("stdout", ["100"]),
    "stderr": ("stderr", ["100"]),
    "hang": ("hang", []),
    "nothing": ("nothing", []),
    "metadata": ("metadata", ["{harness}/user_tea.md", "{harness}", "{public}/project_deploy.md", "<home>/.profile",
                              "{run_dir}/scratch/home"]),
    "setuid": ("metadata", ["--setuid", "<tool>", "{run_dir}/scratch/created-setuid"]),
    "unix-networked": ("unix", ["<unix>", "<abstract>", "<dgram>"]),
    "forge": ("forge", []),
    "devices": ("read", ["<shm>", "<pty>", "/dev/tty", "/dev/null", "/dev/urandom"]),
}
TIMEOUTS = {"hang": 3.0}
NETWORKED = {"unix-networked"}




def tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` (symlinks as their target text) with its mode, by relative path."""
    out: dict[str, str] = {}
    for path in sorted([root, *root.rglob("*")]) if root.exists() else []:
        rel = str(path.relative_to(root))
        mode = oct(path.lstat().st_mode)
        if path.is_symlink():
            out[rel] = "symlink:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() + " " + mode
        else:
            out[rel] = "dir " + mode
    return out


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[dict[str, socket.socket]]:
    socks: dict[str, socket.socket] = {}
    yield socks
    for sock in socks.values():
        sock.close()


def _resources(ctx: dict[str, Any], attack: str, tmp_path: Path, listeners: dict[str, socket.socket]) -> dict[str, str]:
    values = {"<home>": str(ctx["real_home"]), "<pid>": str(os.getpid())}
    if attack == "tcp":
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        listeners["tcp"] = srv
        values["<port>"] = str(srv.getsockname()[1])
    elif attack == "udp":
        srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        srv.bind(("127.0.0.1", 0))
        listeners["udp"] = srv
        values["<port>"] = str(srv.getsockname()[1])
    elif attack in ("unix", "unix-networked"):
        path = tmp_path / "listener.sock"
        srv = socket.socket(socket.AF_UNIX)
        srv.bind(str(path))
        srv.listen()
        listeners["unix"] = srv
        values["<unix>"] = str(path)
        abstract = f"memfold-test-{secrets.token_hex(6)}"
        named = socket.socket(socket.AF_UNIX)
        named.bind(b"\0" + abstract.encode())
        named.listen()
        listeners["abstract"] = named
        values["<abstract>"] = abstract
        dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        dgram.bind(str(tmp_path / "dgram.sock"))
        listeners["dgram"] = dgram
        values["<dgram>"] = str(tmp_path / "dgram.sock")
    elif attack == "setuid":
        tool = tmp_path / "bin" / "id"
        tool.parent.mkdir()
        shutil.copy2("/usr/bin/id", tool)
        ctx["tool"] = tool
        values["<tool>"] = str(tool)
    elif attack == "devices":
        shm = Path("/dev/shm") / f"memfold-test-{secrets.token_hex(6)}"
        shm.write_text(SECRET)
        leader, follower = os.openpty()
        ctx["devices"] = (shm, leader, follower)
        values["<shm>"], values["<pty>"] = str(shm), os.ttyname(follower)
    return values


def _write_config(env: Env, workers: dict[str, Any]) -> None:
    # JSON is YAML: the config is written exactly as a user would, without a YAML emitter's quirks.
    (env.home / "config.yaml").write_text(json.dumps({"workers": workers}, indent=2) + "\n")


@given(parsers.parse('the configured worker "{name}" attempts "{attack}" and then prints "{then}"'))
def configured_worker(env: Env, ctx: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      listeners: dict[str, socket.socket], name: str, attack: str, then: str) -> None:
    real_home = tmp_path / "real-home"
    real_home.mkdir(exist_ok=True)
    (real_home / ".profile").write_text("export EDITOR=vi\n")
    monkeypatch.setenv("HOME", str(real_home))
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # named in the worker's env allowlist below
    monkeypatch.setenv("MEMFOLD_TEST_SECRET", SECRET)
    token = f"tok-{secrets.token_hex(6)}"
    ctx.update(attack=attack, then=then, token=token, real_home=real_home,
               runs_before=set(_runs(env)))
    kind, args = ATTACKS[attack]
    values = _resources(ctx, attack, tmp_path, listeners)
    for key, value in values.items():
        args = [a.replace(key, value) for a in args]
    argv = [sys.executable, str(HOSTILE), "--run-dir", "{run_dir}", "--then", then, kind, token, *args]
    ctx["timeout"] = TIMEOUTS.get(attack, 10.0)
    _write_config(env, {name: {"argv": argv, "timeout": ctx["timeout"], "env": ["PYTHONPATH"],
                               "network": attack in NETWORKED}})


@pytest.fixture(autouse=True)
def _release_devices(ctx: dict[str, Any]) -> Iterator[None]:
    yield
    if "devices" in ctx:
        shm, leader, follower = ctx["devices"]
        shm.unlink(missing_ok=True)
        os.close(leader)
        os.close(follower)


@given(parsers.parse("the project directory {relation} the home directory"))
def project_exposes_home(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, relation: str) -> None:
    home = env.project if relation == "is" else env.project / "me"
    home.mkdir(exist_ok=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    ctx.update(real_home=home, runs_before=set(_runs(env)))


@given(parsers.parse('the worker "{name}" is limited to "{limits}"'))
def limited_worker(env: Env, name: str, limits: str) -> None:
    config = json.loads((env.home / "config.yaml").read_text())
    pairs = (item.split(":") for item in limits.split(","))
    config["workers"][name]["limits"] = {key.strip(): int(value) for key, value in pairs}
    _write_config(env, config["workers"])


@given(parsers.parse('the configured worker "{name}" leaves a setsid grandchild and then sleeps'))
def grandchild_then_sleep(env: Env, ctx: dict[str, Any], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    token = f"tok-{secrets.token_hex(6)}"
    ctx.update(token=token, runs_before=set(_runs(env)))
    script = (f"{sys.executable} {HOSTILE} orphan {token} {{run_dir}}/scratch/marker 60; "
              f"exec {sys.executable} {HOSTILE} hang {token}")
    _write_config(env, {name: {"argv": ["/bin/sh", "-c", script], "timeout": 60, "env": ["PYTHONPATH"]}})


def _argv_holding(token: str, word: str) -> bool:
    """A process whose argv holds both ``token`` and ``word`` as whole arguments (not inside a shell line)."""
    for pid in survivors(token):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if token.encode() in args and word.encode() in args:
            return True
    return False


@when("memfold is killed while the worker runs")
def kill_memfold(env: Env, ctx: dict[str, Any]) -> None:
    memfold = subprocess.Popen([sys.executable, "-m", "pipeline", *env.args("consolidate", "--no-context",
                                                                            "--worker", "evil")],
                               cwd=str(env.project), env={**os.environ, "PYTHONPATH": str(REPO)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    token = ctx["token"]
    until = time.monotonic() + 30
    while time.monotonic() < until and not (_argv_holding(token, "orphan") and _argv_holding(token, "hang")):
        time.sleep(0.05)
    assert _argv_holding(token, "orphan") and _argv_holding(token, "hang"), "the worker never started"
    from pipeline.sandbox import cgroup

    # Seen while the owner lives (nothing sweeps a live owner's): once it is dead, any run, another
    # test's included, may remove them, so they are taken down here and checked after the next run.
    bases = list(cgroup._bases().values())
    cgroups = [d for base in bases for d in base.glob(f"memfold-*-{memfold.pid}-*")]
    memfold.kill()
    memfold.wait()
    ctx.update(killed_at=time.monotonic(), memfold_pid=memfold.pid, cgroups=cgroups, cgroup_bases=bases)


@then("within a second no process of the worker is left")
def none_left_within_a_second(ctx: dict[str, Any]) -> None:
    while survivors(ctx["token"]) and time.monotonic() - ctx["killed_at"] < 5:
        time.sleep(0.02)
    assert survivors(ctx["token"]) == [] and time.monotonic() - ctx["killed_at"] < 1.0


@then("the next consolidation removes the run cgroups the killed memfold left")
def next_run_sweeps(env: Env, ctx: dict[str, Any]) -> None:
    # The killed memfold had one run cgroup in every writable hierarchy (none where no cgroup is writable).
    assert len(ctx["cgroups"]) == len(ctx["cgroup_bases"])
    result = env.run("consolidate", "--no-context")
    assert result.code == 0, result.err
    assert [d for d in ctx["cgroups"] if d.exists()] == []


@then("the worker had fewer than 64 processes at once, and some forks were refused")
def fork_bomb_bounded(env: Env, ctx: dict[str, Any]) -> None:
    said = dict(line.split(": ", 2)[1:] for line in (_new_run(env, ctx) / "stderr.txt").read_text().splitlines()
                if line.startswith("hostile: "))
    assert int(said["spawned"]) < 64 and int(said["limited"]) > 0, said


@then("the run's scratch dir is gone")
def scratch_gone(env: Env, ctx: dict[str, Any]) -> None:
    assert not (_new_run(env, ctx) / "scratch").exists()


def _runs(env: Env) -> list[Path]:
    runs = env.project_home / "runs"
    return sorted(runs.iterdir()) if runs.exists() else []


def _new_run(env: Env, ctx: dict[str, Any]) -> Path:
    """The consolidation's run dir (found once: a later `add` makes another)."""
    if "run" not in ctx:
        new = [r for r in _runs(env) if r not in ctx["runs_before"]]
        assert len(new) == 1, new
        ctx["run"] = new[0]
    return ctx["run"]  # type: ignore[no-any-return]


@given("I remember every file of the store, the mirror, the project and the home")
def remember_everything(env: Env, ctx: dict[str, Any]) -> None:
    ctx["trees"] = _trees(env, ctx)


def _trees(env: Env, ctx: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every file, except that the chain head stands for what it names (each run moves it on)."""
    trees = {"store": tree(env.harness), "mirror": tree(env.mirror), "project": tree(env.project),
             "home": tree(ctx["real_home"]) if "real_home" in ctx else {}}
    for rel in [r for r in trees["project"] if r.startswith(".memfold/heads/")]:
        trees["project"][rel] = head_summary(env.project / rel, env.project_home / "receipts")
    return trees


@given("Landlock is unavailable")
def no_landlock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMFOLD_SANDBOX_DISABLE", "landlock")


@then("every remembered file is byte-identical")
def byte_identical(env: Env, ctx: dict[str, Any]) -> None:
    now = _trees(env, ctx)
    for name, before in ctx["trees"].items():
        assert now[name] == before, name


@then("the attack left no trace")
def no_trace(env: Env, ctx: dict[str, Any], listeners: dict[str, socket.socket]) -> None:
    attack, run = ctx["attack"], _new_run(env, ctx)
    for sock in listeners.values():
        sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            if sock.type == socket.SOCK_STREAM:
                conn = sock.accept()[0]
                pytest.fail(f"the worker connected and sent {conn.recv(100)!r}")
            sock.recvfrom(100)
    outputs = [ctx["result"].out, ctx["result"].err] + [
        p.read_text(errors="replace") for p in run.iterdir() if p.is_file()]
    assert not any(SECRET in text for text in outputs)  # whatever the attack, the secret never shows
    if attack == "env":
        assert "MEMFOLD_TEST_SECRET" not in (run / "stderr.txt").read_text()
    # Whatever the outcome, the run deleted its scratch dir once nothing was left alive to write there.
    assert not (run / "scratch").exists()
    if attack == "root":
        assert not os.path.ismount(env.harness)
        assert "hostile: chown: failed" in (run / "stderr.txt").read_text()
    if attack == "forkbomb" and PROBE["cgroup"]["pids"]:
        limited = [line for line in (run / "stderr.txt").read_text().splitlines() if line.startswith("hostile: limited:")]
        assert int(limited[0].split(":")[-1]) > 0  # pids.max refused forks before the bomb ended
    if attack == "orphan":
        time.sleep(2)  # the grandchild would have written after 1 s, recreating the dir on its way
        assert not (run / "scratch").exists()
    if attack == "stderr":
        assert (run / "stderr.txt").stat().st_size < (1 << 20) + 4096
    if ctx["then"] == "event-then-hang":
        receipt = json.loads((run / "post-receipt.json").read_text())
        assert receipt["worker"]["planSource"] == "jsonl-event"
        assert receipt["sandbox"]["worker_end"] == "stopped"
        assert receipt["worker"]["durationSeconds"] < ctx["timeout"] / 2
    if attack == "setuid":
        assert ctx["tool"].stat().st_mode & 0o7777 == 0o755
        assert not (run / "scratch" / "created-setuid").exists()
    if attack == "forge":
        assert "exited with status 3" in ctx["result"].err
        report = (run / "stdout.jsonl.sandbox.json").read_text().splitlines()
        assert json.loads(report[-1]) == {"outcome": "exit", "code": 3}
    if attack == "devices":
        said = dict(line.removeprefix("hostile: ").split(": ", 1) for line in
                    (run / "stderr.txt").read_text().splitlines() if line.startswith("hostile: /"))
        shm, _, follower = ctx["devices"]
        for path in (str(shm), os.ttyname(follower), "/dev/tty"):
            assert said[path] == "failed: PermissionError 13", said
        assert said["/dev/null"] == said["/dev/urandom"] == "succeeded"
    if ctx["result"].code == 0:
        assert json.loads((run / "post-receipt.json").read_text())["sandbox"]["enforced"] is True


@then("no process of the worker is left")
def no_survivor(ctx: dict[str, Any]) -> None:
    assert survivors(ctx["token"]) == []


@then("the project lock is free")
def lock_free(env: Env) -> None:
    started = time.monotonic()
    result = env.run("add", "user_after", "-d", "added after the hostile run", "-b", "after")
    assert result.code == 0, result.err
    assert time.monotonic() - started < 2.0


@then(parsers.parse('the run names what was stopped: "{text}"'))
def names_what_was_stopped(env: Env, ctx: dict[str, Any], text: str) -> None:
    run = _new_run(env, ctx)
    said = ctx["result"].err + (run / "stderr.txt").read_text(errors="replace")
    assert text in said, said[-3000:]


@then("the worker never ran")
def never_ran(env: Env, ctx: dict[str, Any]) -> None:
    run = _new_run(env, ctx)
    for name in ("stdout.jsonl", "stderr.txt"):  # refused before anything was spawned
        assert not (run / name).exists()
    if "token" in ctx:
        assert survivors(ctx["token"]) == []


def _receipt(env: Env) -> dict[str, Any]:
    newest = max((env.project_home / "receipts").iterdir())
    return json.loads(newest.read_text())  # type: ignore[no-any-return]


@then("the manifest and the receipt record every protection this machine enforces")
def records_protections(env: Env) -> None:
    receipt = _receipt(env)
    manifest = json.loads((env.project_home / "runs" / receipt["runId"] / "manifest.json").read_text())
    planned, got = manifest["sandbox"], receipt["sandbox"]
    abi = PROBE["landlock"]["abi"]
    assert planned["status"] == "planned" and planned["landlock_abi"] == got["landlock_abi"] == abi
    assert got["filesystem"] == ("landlock" if abi >= 1 else "none") and got["enforced"] is (abi >= 1)
    assert got["network"]["requested"] == planned["network"]["requested"] == "denied"
    assert got["network"]["tcp"] == ("denied" if abi >= 4 else "not-restricted")
    if PROBE["seccomp"]:
        assert got["network"]["sockets"] == "denied"
        assert got["network"]["unix"] == planned["network"]["unix"] == "denied"
        assert got["metadata"] == planned["metadata"] == "denied"
        assert got["seccomp"]["io_uring"] == "denied" and got["seccomp"]["namespaces"] == "denied"
        assert got["seccomp"]["pidfd"] == "denied" and got["seccomp"]["setid_create"] == "denied"
    assert got["reads"] == "narrowed" and got["supervisor"] == "non-dumpable"
    assert got["no_new_privs"] is True
    assert got["capabilities"] == ("dropped" if os.getuid() == 0 else "none-held")
    assert got["rlimits"]["core"] == 0 and got["rlimits"]["nofile"] == 1024 and got["rlimits"]["cpu"] == 301
    assert got["rlimits"]["fsize"] == 256 << 20
    assert got["kill"] == planned["kill"] and got["kill"] in ("pid-namespace", "cgroup.kill", "subreaper+pidfd")
    assert got["pids_max"] == (512 if PROBE["cgroup"]["pids"] else None)
    # The default bounds, each named by the mechanism that enforced it; scratch is measured by memfold itself.
    assert got["limits"]["memory"]["rlimit-data"] == planned["limits"]["memory"]["rlimit-data"] == 4096 << 20
    assert got["limits"]["memory"].get("cgroup") == (4096 << 20 if PROBE["cgroup"].get("memory") else None)
    assert got["limits"]["processes"] and got["limits"]["scratch_bytes"] == 1024 << 20
    assert got["worker_end"] == "exit" and got["missing"] == planned["missing"]
    if abi >= 6 and PROBE["seccomp"] and PROBE["pid_namespace"]:
        assert got["missing"] == []


@given("the launchers that consolidations start ahead of their worker are watched")
def watch_launchers(monkeypatch: pytest.MonkeyPatch, ctx: dict[str, Any]) -> None:
    import pipeline.transaction as transaction
    import pipeline.worker.ahead as ahead

    started: list[Any] = []
    real = ahead.start_launcher

    def recorded(*, planner: bool) -> Any:
        started.append(real(planner=planner))
        return started[-1]

    # The command starts it (through the module), a direct caller of the transaction through its own name.
    monkeypatch.setattr(ahead, "start_launcher", recorded)
    monkeypatch.setattr(transaction, "start_launcher", recorded)
    ctx["launchers"] = started
    handed: list[dict[str, Any]] = []
    real_hand_over = ahead.Launcher.hand_over

    def hand_over(self: Any, policy_json: str) -> Any:
        # What the cgroups hold and bound at the moment the policy goes over, before anything is forked.
        policy = json.loads(policy_json)
        procs = policy["cgroup_procs"]
        handed.append({"pid": self.proc.pid, "procs": procs, "reads": policy["read_paths"],
                       "in_process": policy["in_process"],
                       "members": [Path(p).read_text().split() for p in procs],
                       "bounds": [{f.name: f.read_text().strip() for f in Path(p).parent.iterdir()
                                   if f.name in ("pids.max", "memory.max", "memory.limit_in_bytes")} for p in procs]})
        return real_hand_over(self, policy_json)

    monkeypatch.setattr(ahead.Launcher, "hand_over", hand_over)
    ctx["handed"] = handed


@then("the policy handed to the launcher runs the planner in-process and grants nothing under /etc")
def policy_without_etc(ctx: dict[str, Any]) -> None:
    [handed] = ctx["handed"]
    assert handed["in_process"] is True and handed["reads"]
    assert [p for p in handed["reads"] if p == "/etc" or p.startswith("/etc/")] == []


@then("every launcher started ahead was stopped before it started anything")
def launchers_stopped(ctx: dict[str, Any]) -> None:
    assert len(ctx["launchers"]) == 1
    for launcher in ctx["launchers"]:
        # Killed while it waited for a policy it never got (a launcher that ran a worker exits on its own).
        assert launcher.proc.returncode == -signal.SIGKILL
        assert not Path(f"/proc/{launcher.proc.pid}").exists()


@then("no run cgroup of this process is left")
def no_run_cgroup_left() -> None:
    from pipeline.sandbox import cgroup

    mine = [d for base in cgroup._bases().values() for d in base.glob(f"memfold-*-{os.getpid()}-*")]
    assert mine == []


@then("the launcher was in every run cgroup, each bounded, when its policy went over")
def launcher_in_its_cgroups(ctx: dict[str, Any]) -> None:
    from pipeline.sandbox import cgroup

    [handed] = ctx["handed"]
    assert len(handed["procs"]) == len(cgroup._bases())  # one in every writable hierarchy (none: none)
    for members in handed["members"]:
        assert str(handed["pid"]) in members
    limits = {name: value for bounds in handed["bounds"] for name, value in bounds.items() if value != "max"}
    if handed["procs"]:
        assert limits.get("pids.max") == "512"  # the default process bound, set before the worker started
        assert int(limits.get("memory.max") or limits["memory.limit_in_bytes"]) == 4096 << 20


@then("the launcher recorded its protections, then ran the built-in planner itself, which exited 0")
def planner_in_process(env: Env) -> None:
    run = env.project_home / "runs" / _receipt(env)["runId"]
    report, outcome = (json.loads(line) for line in (run / "stdout.jsonl.sandbox.json").read_text().splitlines())
    assert report["worker_start"] == "in-process" and outcome == {"outcome": "exit", "code": 0}
    assert report["no_new_privs"] is True and report["reads"] == "narrowed"
    assert report["landlock"]["fs"] is (PROBE["landlock"]["abi"] >= 1)
    assert report["seccomp"]["installed"] is bool(PROBE["seccomp"])
    assert json.loads((run / "plan.json").read_text())["runId"] == run.name


@then(parsers.parse('the receipt says "{what}" was missing'))
def receipt_missing(env: Env, what: str) -> None:
    sandbox = _receipt(env)["sandbox"]
    assert what in sandbox["missing"] and sandbox["filesystem"] == "none" and sandbox["enforced"] is False


@then("the receipt says the run was unsafe")
def receipt_unsafe(env: Env) -> None:
    sandbox = _receipt(env)["sandbox"]
    assert sandbox["unsafe_no_sandbox"] is True and sandbox["seccomp"] == "not-installed"


# --- the unprivileged scenario: the whole CLI as `nobody`, with a system interpreter nobody can run.

NOBODY = 65534


@given("the whole project belongs to an unprivileged user", target_fixture="unpriv")
def unprivileged(env: Env) -> Iterator[dict[str, Any]]:
    python = shutil.which("python3", path="/usr/bin:/bin")
    site = sysconfig.get_paths()["purelib"]
    if os.getuid() != 0 or python is None:
        pytest.skip("needs root to switch to nobody, and a system python3")
    base = Path(f"/tmp/memfold-nobody-{secrets.token_hex(4)}")  # pytest's tmp dirs are root-only
    base.mkdir(mode=0o755)
    for sub in ("home", "project"):
        (base / sub).mkdir(mode=0o700)
    for path in [base, *base.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    data = {"base": base, "python": python, "token": f"tok-{secrets.token_hex(6)}",
            "hostile": HOSTILE,
            "env": {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO}:{site}", "MEMFOLD_NOW": "2026-11-30T12:00:00Z",
                    "HOME": str(base / "home"), "LC_ALL": "C.UTF-8"}}
    probe = ("-c", "import pipeline.cli, yaml")
    probe_run = _as_nobody(data, *probe)
    if probe_run.returncode != 0:
        # A checkout (or its venv) below a root-only dir, such as /root: the same code and packages,
        # linked (copied across filesystems) into a tree nobody can read, so the scenario still runs.
        data["env"]["PYTHONPATH"] = readable_copy(base / "code", site)
        data["hostile"] = base / "code" / "src" / "tests" / "workers" / HOSTILE.name
        probe_run = _as_nobody(data, *probe)
    if probe_run.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"nobody cannot import memfold here: {probe_run.stderr[-300:]}")
    yield data
    shutil.rmtree(base, ignore_errors=True)


def _as_nobody(data: dict[str, Any], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([data["python"], *args], env=data["env"], cwd=str(data["base"]), user=NOBODY,
                          group=NOBODY, extra_groups=[], capture_output=True, text=True, timeout=timeout)


def _memfold(data: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    base = data["base"]
    return _as_nobody(data, "-m", "pipeline", "--home", str(base / "home"), "--project", str(base / "project"), *args)


@when("that user runs a consolidation with a worker that writes into the store and leaves a grandchild")
def nobody_runs(ctx: dict[str, Any], unpriv: dict[str, Any]) -> None:
    base = unpriv["base"]
    git_init = f"import subprocess; subprocess.run(['git', 'init', '-q', '{base}/project'], check=True)"
    assert _as_nobody(unpriv, "-c", git_init).returncode == 0
    for args in (("init",), ("add", "user_tea", "-d", "prefers green tea", "-b", "tea")):
        done = _memfold(unpriv, *args)
        assert done.returncode == 0, done.stderr
    store = next((base / "home" / "projects").iterdir()) / "memory"
    unpriv["store"] = store
    unpriv["before"] = tree(store)
    # Two workers in one run would need two configs; the grandchild is left by a wrapper shell line.
    argv = ["/bin/sh", "-c",
            (f"{unpriv['python']} {unpriv['hostile']} orphan {unpriv['token']} {{run_dir}}/scratch/marker 1; "
            f"exec {unpriv['python']} {unpriv['hostile']} --run-dir {{run_dir}} --then verdict write "
            f"{unpriv['token']} {{harness}}/planted.md {{harness}}/user_tea.md")]
    (base / "home" / "config.yaml").write_text(json.dumps({"workers": {"evil": {"argv": argv, "timeout": 10}}}))
    os.chown(base / "home" / "config.yaml", NOBODY, NOBODY)
    done = _memfold(unpriv, "consolidate", "--no-context", "--worker", "evil")
    ctx["result"] = Result(done.returncode, done.stdout, done.stderr)


@then("the store is byte-identical, the marker never appears and no process is left")
def nobody_contained(unpriv: dict[str, Any], ctx: dict[str, Any]) -> None:
    store = unpriv["store"]
    assert tree(store) == unpriv["before"]
    assert survivors(unpriv["token"]) == []
    run = next(r for r in (store.parent / "runs").iterdir() if (r / "task.md").exists())
    assert "planted.md: failed: PermissionError 13" in (run / "stderr.txt").read_text(), ctx["result"].err
    report = json.loads((run / "stdout.jsonl.sandbox.json").read_text().splitlines()[0])
    assert report["uid"] == NOBODY and report["capabilities"] in ("none-held", "dropped")
    assert report["landlock"]["fs"] is (PROBE["landlock"]["abi"] >= 1)
    assert report["kill"] in ("pid-namespace", "cgroup.kill", "subreaper+pidfd")
    time.sleep(2)
    assert not (run / "scratch").exists()  # deleted after the run; a survivor would have written the marker
    assert survivors(unpriv["token"]) == []
