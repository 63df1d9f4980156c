"""The sandbox holds: each hostile worker's attack fails and leaves no process behind."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Env, survivors
from unprivileged import OrdinaryUser

from pipeline.errors import WorkerFailed
from pipeline.paths import Layout
from pipeline.sandbox import EXIT_REFUSED, cgroup, probe, readable, seccomp
from pipeline.sandbox.policy import Policy
from pipeline.worker import spawn
from pipeline.worker.run import WorkerResult, WorkerSpec, build_env, run_worker

HOSTILE = Path(__file__).parent / "workers" / "hostile.py"
KILLED_PARENT = HOSTILE.parent / "killed_parent.py"
# Run a script file as __main__ through ``python -c``, as the ordinary-user fixture runs code.
RUN_FILE = ("import os, runpy, sys; sys.argv = sys.argv[1:]; sys.path.insert(0, os.path.dirname(sys.argv[0])); "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
ROOT = Path(__file__).resolve().parent.parent
PROBE = probe()
needs_landlock = pytest.mark.skipif(PROBE["landlock"]["abi"] < 1, reason="kernel has no Landlock")
needs_seccomp = pytest.mark.skipif(not PROBE["seccomp"], reason="kernel has no seccomp filters")




@pytest.fixture
def run(tmp_path: Path) -> Iterator[Any]:
    """Run hostile.py ATTACK under the sandbox; check no process with the run's token survives."""
    tokens: list[str] = []
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def go(attack: str, *args: str, network: bool = False, timeout: float = 20, **kw: Any) -> tuple[dict[str, Any], WorkerResult]:
        token = f"tok-{secrets.token_hex(6)}"
        tokens.append(token)
        spec = WorkerSpec(
            argv=(sys.executable, str(HOSTILE), attack, token, *args),
            cwd=scratch,
            env=build_env(os.environ, [], scratch),
            timeout=timeout,
            network=network,
            **kw,
        )
        res = run_worker(spec, stdout_path=tmp_path / f"{token}.out", stderr_path=tmp_path / f"{token}.err")
        assert survivors(token) == []
        lines = res.stdout.decode().strip().splitlines()
        return (json.loads(lines[-1]) if lines else {}), res

    yield go
    for token in tokens:
        assert survivors(token) == []


@pytest.fixture
def store(tmp_path: Path) -> Path:
    d = tmp_path / "store"
    d.mkdir(mode=0o700)
    (d / "memory.md").write_text("original")
    (d / "sub").mkdir()
    return d


def test_policy_round_trips() -> None:
    p = Policy(read_paths=("/a",), write_paths=("/b",), env={"X": "1"}, cgroup_procs=("/c",))
    assert Policy.from_json(p.to_json()) == p
    assert Policy.from_json("{}").read_paths == ("/",)


def test_probe_is_cheap_and_complete() -> None:
    t = time.monotonic()
    info = probe()
    assert time.monotonic() - t < 0.5
    assert {"landlock", "seccomp", "pid_namespace", "cgroup", "uid"} <= set(info)


def test_seccomp_program_is_well_formed() -> None:
    for arch in ("x86_64", "aarch64"):
        for network in (False, True):
            code = seccomp.build(network, arch)
            assert len(code) % 8 == 0 and len(code) // 8 < 256


_HEADERS = {"x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "aarch64": "/usr/include/asm-generic/unistd.h"}


@pytest.mark.parametrize("arch", sorted(_HEADERS))
def test_seccomp_syscall_numbers_match_the_kernel_headers(arch: str) -> None:
    """A wrong number would leave a call open on that architecture; check every one the headers define."""
    if not os.path.exists(_HEADERS[arch]):
        pytest.skip(f"no kernel headers for {arch}")
    defined = {m[1]: int(m[2]) for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)\b",
                                                        Path(_HEADERS[arch]).read_text())}
    table = seccomp._NR[arch]
    checked = {name: nr for name, nr in table.items() if name in defined}
    assert {name: defined[name] for name in checked} == checked
    assert {"fchmodat", "fchownat", "utimensat", "setxattr", "pidfd_getfd", "openat"} <= set(checked)


@pytest.mark.integration
@needs_landlock
def test_write_outside_scratch_fails(run: Any, store: Path, tmp_path: Path) -> None:
    home_target = Path.home() / f".memfold-attack-{secrets.token_hex(4)}"
    verdict, res = run("write", str(store / "new.md"), str(store / "memory.md"), str(home_target), str(tmp_path / "x"))
    assert res.protections["landlock"]["fs"] is True
    assert all(v.startswith("failed") for k, v in verdict.items() if k != "attack"), verdict
    assert not (store / "new.md").exists() and not home_target.exists() and not (tmp_path / "x").exists()
    assert (store / "memory.md").read_text() == "original"


@pytest.mark.integration
@needs_landlock
def test_scratch_and_worker_home_are_writable(run: Any, tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    verdict, _ = run("write", str(scratch / "ok"), str(scratch / "home" / "ok"))
    assert set(verdict.values()) == {"write", "succeeded"}


@pytest.mark.integration
@needs_landlock
def test_delete_rename_truncate_in_read_only_dir_fail(run: Any, store: Path) -> None:
    verdict, _ = run("remove", str(store / "memory.md"), str(store / "renamed.md"), str(store / "sub"))
    assert all(v.startswith("failed") for k, v in verdict.items() if k != "attack"), verdict
    assert (store / "memory.md").read_text() == "original"
    assert (store / "sub").is_dir() and not (store / "renamed.md").exists()


@pytest.mark.integration
@needs_landlock
def test_symlink_planted_in_scratch_does_not_reach_store(run: Any, store: Path, tmp_path: Path) -> None:
    link = tmp_path / "scratch" / "link"
    verdict, _ = run("symlink", str(link), str(store / "memory.md"), str(store / "planted.md"))
    assert verdict["through"].startswith("failed") and verdict["create"].startswith("failed")
    assert verdict["hardlink"].startswith("failed")
    assert (store / "memory.md").read_text() == "original" and not (store / "planted.md").exists()


def _expect_nothing(sock: socket.socket) -> None:
    sock.settimeout(0.3)
    with pytest.raises(socket.timeout):
        conn = sock.accept()[0] if sock.type == socket.SOCK_STREAM else None
        if conn is not None:
            pytest.fail(f"worker connected and sent {conn.recv(100)!r}")
        sock.recvfrom(100)


@pytest.mark.integration
@needs_seccomp
def test_tcp_connect_fails(run: Any) -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        verdict, _ = run("tcp", str(srv.getsockname()[1]))
        assert verdict["connect"].startswith("failed")
        _expect_nothing(srv)


@pytest.mark.integration
@needs_seccomp
def test_udp_send_fails(run: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as srv:
        srv.bind(("127.0.0.1", 0))
        verdict, _ = run("udp", str(srv.getsockname()[1]))
        assert verdict["sendto"].startswith("failed")
        _expect_nothing(srv)


@pytest.mark.integration
def test_network_worker_can_connect(run: Any) -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        srv.settimeout(5)
        verdict, res = run("tcp", str(srv.getsockname()[1]), network=True)
        assert verdict["connect"] == "succeeded"
        assert res.protections["seccomp"]["sockets"] == "allowed"
        conn = srv.accept()[0]
        assert conn.recv(10) == b"pwned"
        conn.close()


@pytest.mark.integration
@needs_landlock
def test_parent_secret_is_not_visible(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"s3cret-{secrets.token_hex(8)}"
    monkeypatch.setenv("MEMFOLD_TEST_SECRET", secret)
    verdict, res = run("env", str(os.getpid()))
    assert "MEMFOLD_TEST_SECRET" not in verdict["environ"]
    assert verdict["parent_environ"].startswith("failed")
    assert secret.encode() not in res.stdout


@pytest.mark.integration
@pytest.mark.skipif(os.getuid() != 0, reason="root-only powers are what is tested")
def test_root_powers_are_gone(run: Any, tmp_path: Path) -> None:
    target = tmp_path / "scratch" / "owned"
    target.write_text("x")
    mnt = tmp_path / "scratch" / "mnt"
    mnt.mkdir()
    verdict, res = run("root", str(target), str(mnt))
    assert res.protections["capabilities"] == "dropped"
    for key in ("chown", "setuid", "mount", "unshare", "chroot"):
        assert verdict[key].startswith("failed"), (key, verdict)
    assert verdict["uid"] == 0 and target.stat().st_uid == 0
    assert not os.path.ismount(mnt)


@pytest.mark.integration
def test_setsid_grandchild_dies_with_the_worker(run: Any, tmp_path: Path) -> None:
    marker = tmp_path / "scratch" / "marker"
    verdict, res = run("orphan", str(marker), "1")
    assert verdict["forked"] and res.returncode == 0
    time.sleep(2)
    assert not marker.exists()


@pytest.mark.integration
def test_launcher_refuses_when_fs_sandbox_required_but_missing(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    policy = tmp_path / "policy.json"
    marker = tmp_path / "ran"
    policy.write_text(Policy(landlock=False, require_fs=True, report_path=str(report)).to_json())
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.sandbox", "--policy", str(policy), "--", "touch", str(marker)],
        cwd=ROOT, capture_output=True, timeout=20,
    )
    assert proc.returncode == EXIT_REFUSED and b"refused" in proc.stderr
    assert json.loads(report.read_text().splitlines()[0])["refused"]
    assert not marker.exists()


UNPRIV = """
import json, os, sys, time
from pathlib import Path
from pipeline.worker.run import WorkerSpec, build_env, run_worker
base = Path(sys.argv[1]); scratch = base / "scratch"; scratch.mkdir()
spec = WorkerSpec(argv=(sys.executable, sys.argv[2], "orphan", sys.argv[3], str(scratch / "marker"), "1"),
                  cwd=scratch, env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch), timeout=20)
res = run_worker(spec, stdout_path=base / "out", stderr_path=base / "err")
w = WorkerSpec(argv=(sys.executable, sys.argv[2], "write", sys.argv[3], str(base / "escaped")),
               cwd=scratch, env=spec.env, timeout=20)
res2 = run_worker(w, stdout_path=base / "out2", stderr_path=base / "err2")
time.sleep(2)
print(json.dumps({"protections": res.protections, "marker": (scratch / "marker").exists(), "uid": os.getuid(),
                  "escaped": (base / "escaped").exists(), "rc": res.returncode}))
"""


@pytest.mark.integration
def test_unprivileged_user_gets_the_same_guarantees(ordinary_user: OrdinaryUser) -> None:
    token = f"tok-{secrets.token_hex(6)}"
    out = ordinary_user.run_json(UNPRIV, str(ordinary_user.base), str(ordinary_user.path("workers/hostile.py")),
                                 token, timeout=40)
    assert out["uid"] == ordinary_user.uid != 0
    assert out["rc"] == 0 and not out["marker"] and not out["escaped"]
    assert out["protections"]["capabilities"] in ("none-held", "dropped")
    assert out["protections"]["landlock"]["fs"] is (PROBE["landlock"]["abi"] >= 1)
    assert out["protections"]["kill"] in ("pid-namespace", "cgroup.kill", "subreaper+pidfd")
    assert survivors(token) == []


@pytest.mark.integration
def test_subreaper_fallback_kills_setsid_grandchild(tmp_path: Path) -> None:
    """Without a PID namespace the launcher, as subreaper, sweeps orphans by pidfd."""
    report = tmp_path / "report.json"
    policy = tmp_path / "policy.json"
    marker = tmp_path / "marker"
    token = f"tok-{secrets.token_hex(6)}"
    policy.write_text(Policy(pid_namespace=False, write_paths=(str(tmp_path),), report_path=str(report),
                             env={"PATH": "/usr/bin:/bin"}).to_json())
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline.sandbox", "--policy", str(policy), "--",
         sys.executable, str(HOSTILE), "orphan", token, str(marker), "1"],
        cwd=ROOT, capture_output=True, timeout=20, start_new_session=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(report.read_text().splitlines()[0])["kill"] == "subreaper+pidfd"
    assert survivors(token) == []
    time.sleep(2)
    assert not marker.exists()


@pytest.mark.integration
@needs_landlock
def test_explicit_read_paths_keep_private_files_out_of_reach(run: Any, tmp_path: Path, store: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "key").write_text("secret")
    readable = [str(store / "memory.md")]
    root_only = [str(private / "key")]
    if os.getuid() == 0:
        # A root worker without capabilities still owns root's files: only the rules keep these out.
        root_only += [p for p in ("/etc/shadow", "/etc/gshadow") if os.path.exists(p)]
    verdict, res = run("read", *readable, *root_only, read_paths=(store, HOSTILE.parent))
    assert res.protections["landlock"]["fs"] is True
    assert verdict[readable[0]] == "succeeded"
    for path in root_only:
        assert verdict[path].startswith("failed: PermissionError"), (path, verdict)
    assert verdict["attack"] == "read" and b"secret" not in res.stdout


@pytest.mark.integration
@needs_landlock
def test_explicit_read_paths_still_run_an_interpreter_with_tls_and_users(run: Any, store: Path) -> None:
    # What a networked agent CLI reads in /etc must stay readable after the narrowing.
    wanted = [p for p in ("/etc/passwd", "/etc/ld.so.cache", "/etc/ssl/certs", "/etc/resolv.conf")
              if os.path.isfile(p)]
    verdict, res = run("read", *wanted, read_paths=(store, HOSTILE.parent))
    assert res.returncode == 0
    assert all(verdict[p] == "succeeded" for p in wanted), verdict


def test_the_launcher_imports_no_typing_dataclasses_or_json_schema_machinery() -> None:
    """It starts before every sandboxed worker, with -S: only what it uses."""
    code = ("import sys\nimport pipeline.sandbox.entry\n"
            "print(sorted(m for m in ('typing', 'dataclasses', 'inspect', 'pathlib', 'jsonschema', 'pydantic')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"


# --- Each attack below runs twice: as the test process's uid (root in CI) and as an ordinary user.

ATTACK = """
import json, os, sys
from pathlib import Path
from pipeline.worker.run import WorkerSpec, build_env, run_worker
cfg = json.loads(sys.argv[1])
scratch = Path(cfg["scratch"])
argv = tuple(sys.executable if a == "{python}" else a.replace("<parent>", str(os.getpid())) for a in cfg["argv"])
spec = WorkerSpec(argv=argv, cwd=scratch, env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch), timeout=30,
                  network=cfg["network"], read_paths=tuple(Path(p) for p in cfg["read_paths"]))
res = run_worker(spec, stdout_path=scratch.parent / (scratch.name + ".out"),
                 stderr_path=scratch.parent / (scratch.name + ".err"))
lines = res.stdout.decode().strip().splitlines()
print(json.dumps({"verdict": json.loads(lines[-1]) if lines else {}, "rc": res.returncode, "uid": os.getuid(),
                  "protections": res.protections, "stderr": res.stderr_tail.decode(errors="replace")}))
"""


@dataclass
class Attacker:
    """Runs a worker under the sandbox as one uid; ``base`` is a directory that uid owns."""

    base: Path
    workers: Path
    user: OrdinaryUser | None

    @property
    def uid(self) -> int:
        return self.user.uid if self.user else os.getuid()

    def own(self, *paths: Path) -> None:
        """Hand files the test made to the attacking uid (a worker can only chmod what it owns)."""
        if self.user is not None and os.getuid() == 0:
            for path in paths:
                os.chown(path, self.user.uid, self.user.gid, follow_symlinks=False)

    def go(self, *argv: str, network: bool = False, read: tuple[Path, ...] = ()) -> dict[str, Any]:
        """Run ``argv`` (``{python}`` is the interpreter) with read paths narrowed as consolidate does."""
        token = f"tok-{secrets.token_hex(6)}"
        scratch = self.base / f"scratch-{token}"
        scratch.mkdir()
        self.own(scratch)
        cfg = json.dumps({"argv": [a.replace("<token>", token) for a in argv], "scratch": str(scratch),
                          "network": network, "read_paths": [str(self.workers), *map(str, read)]})
        if self.user is not None:
            out: dict[str, Any] = self.user.run_json(ATTACK, cfg)
        else:
            proc = subprocess.run([sys.executable, "-c", ATTACK, cfg], capture_output=True, timeout=60, check=False,
                                  env={**os.environ, "PYTHONPATH": str(REPO)})
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")
            out = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        assert out["uid"] == self.uid
        assert survivors(token) == []
        return out

    def hostile(self, attack: str, *args: str, **kw: Any) -> dict[str, Any]:
        return self.go("{python}", str(self.workers / "hostile.py"), attack, "<token>", *args, **kw)


@pytest.fixture(params=["test-uid", "ordinary-user"])
def attacker(request: pytest.FixtureRequest, tmp_path: Path) -> Attacker:
    if request.param == "ordinary-user":
        user: OrdinaryUser = request.getfixturevalue("ordinary_user")
        base = user.path("attack")
        base.mkdir()
        attacker = Attacker(base, user.path("workers"), user)
        attacker.own(base)
        return attacker
    return Attacker(tmp_path, HOSTILE.parent, None)


def _meta(path: Path) -> tuple[int, int, int, int, list[str]]:
    st = os.stat(path, follow_symlinks=False)
    return st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, sorted(os.listxattr(path, follow_symlinks=False))


@pytest.mark.integration
@needs_seccomp
def test_metadata_calls_fail_everywhere_even_in_scratch(attacker: Attacker) -> None:
    home = attacker.base / "memfold-home"
    ssh = attacker.base / "dot-ssh"
    for d in (home, ssh):
        d.mkdir(mode=0o700)
    store, key, mine = home / "store.md", ssh / "id_rsa", attacker.base / "scratch-file"
    for f in (store, key, mine):
        f.write_text("private")
        f.chmod(0o600)
    tool = attacker.base / "id"
    shutil.copy2("/usr/bin/id", tool)
    attacker.own(home, ssh, store, key, mine, tool)
    targets = (home, store, key, mine, tool)
    before = {p: _meta(p) for p in targets}
    new = attacker.base / "created-setuid"
    out = attacker.hostile("metadata", str(home), str(store), str(key), str(mine), "--setuid", str(tool), str(new),
                           read=(attacker.base,))
    verdict = out["verdict"]
    assert out["protections"]["seccomp"]["metadata"] == "denied"
    calls = {k: v for k, v in verdict.items() if k != "attack"}
    assert len(calls) == 4 * 5 + 2
    assert set(calls.values()) == {"failed: PermissionError 1"}, calls
    assert {p: _meta(p) for p in targets} == before
    assert not new.exists()
    assert tool.stat().st_mode & 0o7777 == 0o755


@pytest.mark.integration
@needs_seccomp
@pytest.mark.parametrize("network", [False, True], ids=["network-denied", "network-allowed"])
def test_no_worker_reaches_a_unix_socket(attacker: Attacker, network: bool) -> None:
    stream_path, dgram_path = attacker.base / "agent.sock", attacker.base / "dgram.sock"
    abstract = f"memfold-test-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX) as stream, socket.socket(socket.AF_UNIX) as named, \
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as dgram:
        stream.bind(str(stream_path))
        named.bind(b"\0" + abstract.encode())
        dgram.bind(str(dgram_path))
        for sock in (stream, named):
            sock.listen()
        for path in (stream_path, dgram_path):
            path.chmod(0o777)  # so only the sandbox stands between an ordinary user and them
        out = attacker.hostile("unix", str(stream_path), abstract, str(dgram_path), network=network,
                               read=(attacker.base,))
        verdict = out["verdict"]
        for key in ("connect", "abstract", "dgram", "dgram_pair_sendto", "seqpacket_pair"):
            assert verdict[key] == "failed: PermissionError 1", (key, verdict)
        assert verdict["stream_pair_connect"].startswith("failed"), verdict
        assert verdict["stream_pair"] == "succeeded"
        assert out["protections"]["seccomp"]["unix_sockets"] == "denied"
        for sock in (stream, named, dgram):
            _expect_nothing(sock)


@pytest.mark.integration
@needs_landlock
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_worker_spawns_a_child_and_resolves_names_with_network(attacker: Attacker) -> None:
    node = os.path.realpath(shutil.which("node") or "node")
    out = attacker.go(node, str(attacker.workers / "spawner.js"), "<token>", network=True)
    assert out["rc"] == 0, out["stderr"]
    verdict = out["verdict"]
    assert verdict["child"] == "child says hello" and verdict["childExit"] == 0
    assert verdict["lookup"] in ("127.0.0.1", "::1")


@pytest.mark.integration
@needs_seccomp
def test_the_worker_cannot_forge_the_outcome_through_the_launchers_descriptors(attacker: Attacker) -> None:
    out = attacker.hostile("forge")
    verdict = out["verdict"]
    assert verdict["pidfd_open"] == "failed: PermissionError 1"
    assert verdict["pidfd_getfd"].startswith("failed"), verdict
    assert verdict["proc_fd"] == "failed"
    if PROBE["landlock"]["abi"] >= 6:
        assert verdict["kill_init"] == "failed: PermissionError 1"
    assert out["rc"] == 3
    assert out["protections"]["launcher_outcome"] == {"outcome": "exit", "code": 3}


@pytest.mark.integration
@needs_landlock
def test_only_four_device_files_are_readable(attacker: Attacker) -> None:
    shm = Path("/dev/shm") / f"memfold-test-{secrets.token_hex(6)}"
    shm.write_text("shared secret")
    shm.chmod(0o600)
    leader, follower = os.openpty()
    tty = os.ttyname(follower)
    attacker.own(shm, Path(tty))
    try:
        denied = [str(shm), tty, "/dev/tty", "/dev/pts/ptmx"]
        allowed = ["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"]
        out = attacker.hostile("read", *denied, *allowed)
        verdict = out["verdict"]
        assert out["rc"] == 0, out["stderr"]
        for path in denied:
            assert verdict[path] == "failed: PermissionError 13", (path, verdict)
        for path in allowed:
            assert verdict[path] == "succeeded", (path, verdict)
        assert "shared secret" not in json.dumps(out)
    finally:
        shm.unlink()
        os.close(leader)
        os.close(follower)


def test_etc_narrowing_raises_past_its_limit_instead_of_granting_the_whole_dir(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    (etc / "ssl").mkdir(parents=True)
    for i in range(12):
        (etc / "ssl" / f"cert{i}").write_text("public")
    (etc / "shadow").write_text("root:x")
    (etc / "shadow").chmod(0o600)
    assert sorted(readable.world_readable(str(etc), limit=100)) == [str(etc / "ssl")]
    with pytest.raises(readable.NarrowingFailed):
        readable.world_readable(str(etc), limit=10)


@pytest.mark.integration
def test_a_run_whose_etc_cannot_be_narrowed_is_refused_and_never_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readable, "MAX_ENTRIES", 10)  # the real /etc has far more than 10 entries
    scratch = tmp_path / "scratch"
    marker = scratch / "started"
    spec = WorkerSpec(argv=("/bin/sh", "-c", f"touch {marker}"), cwd=scratch,
                      env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch), timeout=10, read_paths=(tmp_path,))
    with pytest.raises(WorkerFailed) as err:
        run_worker(spec, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err")
    assert err.value.code == "worker.etc-unnarrowable" and err.value.exit_code == 4
    assert err.value.hint and "/etc" in err.value.message
    assert not marker.exists() and not (tmp_path / "out").exists()
    assert not [d for d in os.listdir("/sys/fs/cgroup") if d.startswith(f"memfold-{os.getpid()}-")]
    # Without the sandbox nothing is narrowed, so the walk (and its refusal) does not apply.
    unsafe = spec.with_changes(sandbox=False)
    assert run_worker(unsafe, stdout_path=tmp_path / "out", stderr_path=tmp_path / "err").returncode == 0
    assert marker.exists()


ROOT_CASES = ["project-is-home", "project-contains-home", "project-contains-memfold-home", "project-is-root"]


def _unsafe_layout(base: Path, case: str) -> tuple[Path, Path, Path]:
    """(project root, memfold home, $HOME) for one way of exposing a home through the project."""
    project = base / "dotfiles"
    (project / ".ssh").mkdir(parents=True)
    (project / ".ssh" / "id_rsa").write_text("private key")
    home, user_home = base / "memfold-home", base / "elsewhere"
    if case == "project-is-home":
        user_home = project
    elif case == "project-contains-home":
        user_home = project / "me"
    elif case == "project-contains-memfold-home":
        home = project / ".local" / "share" / "memfold"
    elif case == "project-is-root":
        project = Path("/")
    return project, home, user_home


@pytest.mark.integration
@pytest.mark.parametrize("case", ROOT_CASES)
def test_a_project_root_that_exposes_a_home_is_refused_before_the_worker_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    project, home, user_home = _unsafe_layout(tmp_path, case)
    monkeypatch.setenv("HOME", str(user_home))
    env = Env(home, project)
    if case == "project-is-root":
        # `init` would write .memory/ into /: the refusal is checked on the layout alone.
        layout = Layout(home, project, "0" * 64)
        with pytest.raises(WorkerFailed) as err:
            spawn._refuse_unsafe_project_root(layout, {"HOME": str(user_home)})
        assert err.value.code == "worker.project-root-unsafe"
        return
    assert env.run("init").code == 0
    result = env.run("consolidate", "--no-context")
    assert result.code == 4, result.err
    assert "[worker.project-root-unsafe]" in result.err and "hint:" in result.err
    assert "private key" not in result.out + result.err
    run = next(p for p in (env.project_home / "runs").iterdir())
    assert not (run / "stdout.jsonl").exists() and not (run / "stdout.jsonl.sandbox.json").exists()


UNSAFE_ROOT = """
import json, sys
from pathlib import Path
from pipeline.worker import spawn
from pipeline.errors import WorkerFailed
from pipeline.paths import Layout
project, home, user_home = map(Path, sys.argv[1:4])
try:
    spawn._refuse_unsafe_project_root(Layout(home, project, "0" * 64), {"HOME": str(user_home)})
    print(json.dumps({"code": None}))
except WorkerFailed as exc:
    print(json.dumps({"code": exc.code, "exit": exc.exit_code}))
"""


@pytest.mark.integration
def test_an_ordinary_user_is_refused_the_same_project_roots(ordinary_user: OrdinaryUser) -> None:
    for case in ROOT_CASES:
        base = ordinary_user.path(case)
        project, home, user_home = _unsafe_layout(base, case)
        out = ordinary_user.run_json(UNSAFE_ROOT, str(project), str(home), str(user_home))
        assert out == {"code": "worker.project-root-unsafe", "exit": 4}, case
    below = ordinary_user.path("home") / "src" / "app"
    below.mkdir(parents=True)
    out = ordinary_user.run_json(UNSAFE_ROOT, str(below), str(ordinary_user.path("mf")), str(ordinary_user.path("home")))
    assert out == {"code": None}


@pytest.mark.integration
@needs_landlock
def test_etc_is_narrowed_to_its_world_readable_part_for_every_uid(attacker: Attacker) -> None:
    # A file only its owner may read: the owner bits would let the worker's uid read it.
    own = Path("/etc") / f"memfold-test-{secrets.token_hex(6)}"
    own.write_text("owner only")
    own.chmod(0o600)
    attacker.own(own)
    try:
        out = attacker.hostile("read", str(own), "/etc/passwd")
        assert out["verdict"][str(own)] == "failed: PermissionError 13", out["verdict"]
        assert out["verdict"]["/etc/passwd"] == "succeeded"
        assert out["protections"]["reads"] == "narrowed"
    finally:
        own.unlink()


@pytest.mark.integration
@needs_landlock
def test_the_parents_proc_entries_stay_closed_for_every_uid(attacker: Attacker) -> None:
    """/proc stays readable, but Landlock refuses ptrace-class access to processes outside the sandbox."""
    out = attacker.hostile("env", "<parent>")
    assert out["verdict"]["parent_environ"] == "failed: PermissionError 13", out["verdict"]


@pytest.mark.integration
def test_a_worker_keeps_its_own_uid_inside_the_namespaces(attacker: Attacker) -> None:
    """The launchers turn non-dumpable only after the uid map is written: the worker is not `nobody`."""
    out = attacker.go("/usr/bin/id", "-u")
    assert out["rc"] == 0 and out["verdict"] == out["protections"]["uid"] == attacker.uid
    assert out["protections"]["supervisor"] == "non-dumpable"


def _kill_parent_mid_run(tmp_path: Path, token: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(KILLED_PARENT), "drive", str(tmp_path), str(HOSTILE), token], check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=90)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stdout.decode().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.integration
def test_the_worker_dies_within_a_second_of_a_killed_parent(tmp_path: Path) -> None:
    token = f"tok-{secrets.token_hex(6)}"
    out = _kill_parent_mid_run(tmp_path, token)
    assert out["up"] >= 2  # the worker and its setsid grandchild were running at the kill
    assert out["left"] == [] and out["seconds"] < 1.0, out
    assert survivors(token) == []


@pytest.mark.integration
def test_an_ordinary_users_worker_dies_within_a_second_of_a_killed_parent(ordinary_user: OrdinaryUser) -> None:
    token = f"tok-{secrets.token_hex(6)}"
    out = ordinary_user.run_json(RUN_FILE, str(ordinary_user.path("workers/killed_parent.py")), "drive",
                                 str(ordinary_user.base), str(ordinary_user.path("workers/hostile.py")), token,
                                 timeout=90)
    assert out["up"] >= 2
    assert out["left"] == [] and out["seconds"] < 1.0, out
    assert survivors(token) == []


@pytest.mark.integration
@pytest.mark.skipif(not (PROBE["cgroup"]["v2"] or PROBE["cgroup"]["pids"]), reason="no writable cgroup on this machine")
def test_a_run_removes_the_cgroups_of_dead_parents_and_kills_their_members(run: Any, tmp_path: Path) -> None:
    bases = cgroup._bases()
    (tmp_path / "killed").mkdir()
    out = _kill_parent_mid_run(tmp_path / "killed", f"tok-{secrets.token_hex(6)}")
    left = [Path(d) for d in out["cgroups"]]
    assert len(left) == len(bases)  # one run cgroup in every writable hierarchy while the parent ran
    # Our own pid with another start time: the owner's pid was recycled, so the owner is dead.
    ns = os.stat("/proc/self/ns/pid").st_ino
    reused = [base / f"memfold-{ns}-{os.getpid()}-1-0badc0de" for base in bases.values()]
    alive = [base / cgroup.run_name() for base in bases.values()]
    token = f"tok-{secrets.token_hex(6)}"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", token])
    try:
        for d in reused + alive:
            d.mkdir()
        for d in reused:
            (d / "cgroup.procs").write_text(str(sleeper.pid))
        run("nothing")
        assert sleeper.wait(timeout=5) == -9  # the member of a dead run's cgroup was killed
        assert [d for d in left + reused if d.exists()] == []
        assert all(d.is_dir() for d in alive)  # a live owner's cgroups are left alone
    finally:
        sleeper.kill()
        for d in alive + reused:
            if d.exists():
                d.rmdir()


# One bounded run of hostile.py as a given user; "{scratch}" in the arguments is the run's scratch dir,
# which the run bounds and deletes when the options hold "own_scratch".
ONE_RUN = """
import json, os, sys
from pathlib import Path
from pipeline.worker.run import WorkerSpec, build_env, run_worker
base, hostile, token, attack = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
args, kw = json.loads(sys.argv[5]), json.loads(sys.argv[6])
scratch = base / "scratch"
scratch.mkdir()
if kw.pop("own_scratch", False):
    kw["scratch"] = scratch
spec = WorkerSpec(argv=(sys.executable, hostile, attack, token, *[a.replace("{scratch}", str(scratch)) for a in args]),
                  cwd=scratch, env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch), timeout=kw.pop("timeout", 20), **kw)
res = run_worker(spec, stdout_path=base / "out", stderr_path=base / "err")
lines = res.stdout.decode().strip().splitlines()
print(json.dumps({"verdict": json.loads(lines[-1]) if lines else {}, "over": res.over_bound, "rc": res.returncode,
                  "killed": res.killed_reason, "protections": res.protections, "uid": os.getuid(),
                  "scratch_left": os.path.lexists(scratch)}))
"""


@pytest.fixture(params=["this-user", "ordinary-user"])
def bounded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """``bounded(attack, *args, **spec)``: one run as the test's user (root in CI), then as an ordinary one."""
    tokens: list[str] = []

    def go(attack: str, *args: str, **kw: Any) -> dict[str, Any]:
        token = f"tok-{secrets.token_hex(6)}"
        tokens.append(token)
        extra = (attack, json.dumps(list(args)), json.dumps(kw))
        if request.param == "ordinary-user":
            user: OrdinaryUser = request.getfixturevalue("ordinary_user")
            base = user.path(token)
            user.run(f"import os; os.mkdir({str(base)!r})")
            out = user.run_json(ONE_RUN, str(base), str(user.path("workers/hostile.py")), token, *extra, timeout=60)
            assert out["uid"] == user.uid != 0
        else:
            base = tmp_path / token
            base.mkdir()
            proc = subprocess.run([sys.executable, "-c", ONE_RUN, str(base), str(HOSTILE), token, *extra],
                                  env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=60, check=False)
            assert proc.returncode == 0, proc.stderr.decode(errors="replace")
            out = json.loads(proc.stdout.decode().splitlines()[-1])
        assert survivors(token) == []
        return out  # type: ignore[no-any-return]

    yield go
    for token in tokens:
        assert survivors(token) == []


@pytest.mark.integration
def test_a_fork_bomb_of_1500_never_exceeds_the_process_bound(bounded: Any) -> None:
    out = bounded("forkbomb", "3", "1500", pids_max=64, timeout=30)
    # Every fork that succeeded is still alive when the bomb ends: this is the peak count.
    assert out["verdict"]["spawned"] < 64 and out["verdict"]["limited"] > 0, out["verdict"]
    assert out["protections"]["pids_max"] == 64 or out["protections"]["rlimits"]["nproc"] >= 64


@pytest.mark.integration
def test_one_allocation_past_the_memory_bound_fails_for_every_uid(bounded: Any) -> None:
    out = bounded("memory", "1024", "1", memory_bytes=512 << 20)
    assert out["verdict"]["children"] == ["memory-error"]
    assert out["protections"]["rlimits"]["data"] == 512 << 20


@pytest.mark.integration
def test_the_memory_bound_holds_for_the_whole_tree(bounded: Any) -> None:
    # Four children of 200 MiB each stay under the per-process bound; together they pass 512 MiB.
    out = bounded("memory", "200", "4", memory_bytes=512 << 20)
    if out["protections"].get("memory_max") == 512 << 20:  # a memory cgroup: the kernel's OOM killer acts
        children = out["verdict"]["children"]
        assert children.count("ok") * 200 <= 512 and "status -9" in children, children
    else:  # no writable cgroup (an ordinary user here): memfold measures the tree and kills it
        assert out["protections"]["memory_watch_bytes"] == 512 << 20
        assert out["over"] == "memory" and out["killed"] == "over-bound", out


@pytest.mark.integration
def test_a_worker_filling_its_scratch_is_killed_and_the_scratch_removed(bounded: Any) -> None:
    out = bounded("fill", "{scratch}", "64", own_scratch=True, scratch_bytes=8 << 20, timeout=20)
    assert out["over"] == "scratch-bytes" and out["killed"] == "over-bound"
    assert out["scratch_left"] is False


@pytest.mark.integration
def test_a_file_unlinked_while_held_open_still_counts_against_scratch(bounded: Any) -> None:
    out = bounded("unlinked", "{scratch}", "64", own_scratch=True, scratch_bytes=8 << 20, timeout=20)
    assert out["over"] == "scratch-bytes" and out["killed"] == "over-bound", out
    assert out["scratch_left"] is False


@pytest.mark.integration
def test_more_scratch_entries_than_the_budget_are_over_bound(bounded: Any) -> None:
    out = bounded("files", "{scratch}", "3000", own_scratch=True, scratch_entries=1000, timeout=20)
    assert out["over"] == "scratch-entries" and out["scratch_left"] is False


@pytest.mark.integration
def test_a_scratch_dir_the_parent_cannot_list_is_over_bound_and_still_removed(bounded: Any) -> None:
    out = bounded("hidden", "{scratch}", own_scratch=True, timeout=3)
    if out["uid"] == 0:
        assert out["killed"] == "timeout"  # root lists it anyway: it is counted, not refused
    else:
        assert out["over"] == "scratch-unreadable"
    assert out["scratch_left"] is False


@pytest.mark.integration
def test_scratch_is_removed_after_a_normal_run_and_after_a_timeout(bounded: Any) -> None:
    done = bounded("write", "{scratch}/kept", own_scratch=True)
    assert done["rc"] == 0 and list(done["verdict"].values()) == ["write", "succeeded"]
    assert done["scratch_left"] is False
    late = bounded("hang", own_scratch=True, timeout=1)
    assert late["killed"] == "timeout" and late["scratch_left"] is False
