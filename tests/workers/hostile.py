"""A hostile worker: ``hostile.py [--run-dir DIR --then MODE] ATTACK TOKEN [ARGS...]`` tries one escape.

Without ``--run-dir`` it prints a JSON verdict on stdout. With it (as a configured worker of
``memfold consolidate``) the verdict goes to stderr, one ``hostile: KEY: RESULT`` line each, so the
run dir names what was stopped, and ``--then`` says what stdout gets afterwards:
``verdict`` (not a plan), ``plan`` (the built-in planner's plan for the run), ``bad-plan`` (that plan
bound to another run id, which validation refuses), ``event-then-hang`` (the plan as a
consolidation_plan event, then never exit) or ``two-plans`` (two different plan events).
The ``forge`` attack always exits 3, after trying to make the launcher report 0.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import time


def attempt(fn):  # type: ignore[no-untyped-def]
    try:
        fn()
        return "succeeded"
    except OSError as exc:
        return f"failed: {exc.__class__.__name__} {exc.errno}"


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--run-dir"]:
        run_dir, then, argv = argv[1], argv[3], argv[4:]
        out = attack(argv)
        for key, value in out.items():
            print(f"hostile: {key}: {value}", file=sys.stderr, flush=True)
        finish(run_dir, then, out)
        _forged_exit(out)
        return
    out = attack(argv)
    if out:
        print(json.dumps(out), flush=True)
    _forged_exit(out)


def _forged_exit(out: dict[str, object]) -> None:
    """The forge attack exits 3 after writing "exit 0" wherever it could: the run must see 3."""
    if out.get("attack") == "forge":
        sys.stdout.flush()
        os._exit(3)


def finish(run_dir: str, then: str, out: dict[str, object]) -> None:
    from pathlib import Path

    from pipeline.planner.run import plan_run

    if then == "verdict":
        print(json.dumps(out), flush=True)
        return
    plan = json.loads(plan_run(Path(run_dir)))
    if then == "plan":
        sys.stdout.write(json.dumps(plan) + "\n")
    elif then == "bad-plan":
        sys.stdout.write(json.dumps({**plan, "runId": "20000101T000000Z-00000000"}) + "\n")
    elif then == "two-plans":
        other = {**plan, "report": [{**r, "summary": "a different plan"} for r in plan["report"]]}
        # One write: both plans reach the parent together, whatever stops the worker.
        sys.stdout.write("".join(json.dumps({"type": "consolidation_plan", "plan": p}) + "\n" for p in (plan, other)))
    elif then == "event-then-hang":
        sys.stdout.write(json.dumps({"type": "consolidation_plan", "plan": plan}) + "\n")
        sys.stdout.flush()
        while True:
            time.sleep(1)
    sys.stdout.flush()


def attack(argv: list[str]) -> dict[str, object]:
    attack, _token, *args = argv
    out: dict[str, object] = {"attack": attack}
    if attack == "write":  # create/overwrite files at each path given
        for path in args:
            out[path] = attempt(lambda p=path: open(p, "w").write("pwned"))
    elif attack == "remove":  # args: file, new name, dir
        out["unlink"] = attempt(lambda: os.unlink(args[0]))
        out["rename"] = attempt(lambda: os.rename(args[0], args[1]))
        out["rmdir"] = attempt(lambda: os.rmdir(args[2]))
        out["truncate"] = attempt(lambda: os.truncate(args[0], 0))
    elif attack == "symlink":  # args: link in scratch, existing target outside, new target outside
        os.symlink(args[1], args[0])
        out["through"] = attempt(lambda: open(args[0], "w").write("pwned"))
        os.symlink(args[2], args[0] + ".new")
        out["create"] = attempt(lambda: open(args[0] + ".new", "w").write("pwned"))
        out["hardlink"] = attempt(lambda: os.link(args[1], args[0] + ".hard"))
    elif attack == "tcp":
        def tcp() -> None:
            s = socket.create_connection(("127.0.0.1", int(args[0])), timeout=2)
            s.sendall(b"pwned")
            s.close()
        out["connect"] = attempt(tcp)
    elif attack == "udp":
        def udp() -> None:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(b"pwned", ("127.0.0.1", int(args[0])))
        out["sendto"] = attempt(udp)
    elif attack == "unix":  # args: path of a stream listener, [abstract name, path of a datagram listener]
        def unix(address: str | bytes, kind: int = socket.SOCK_STREAM) -> None:
            s = socket.socket(socket.AF_UNIX, kind)
            s.connect(address)
            s.sendall(b"pwned")
        out["connect"] = attempt(lambda: unix(args[0]))
        if len(args) > 1:
            out["abstract"] = attempt(lambda: unix(b"\0" + args[1].encode()))
            out["dgram"] = attempt(lambda: unix(args[2], socket.SOCK_DGRAM))
            out["dgram_pair_sendto"] = attempt(lambda: _pair(socket.SOCK_DGRAM).sendto(b"pwned", args[2]))
            out["seqpacket_pair"] = attempt(lambda: _pair(socket.SOCK_SEQPACKET))
            out["stream_pair"] = attempt(_stream_pair)
            out["stream_pair_connect"] = attempt(lambda: _pair(socket.SOCK_STREAM).connect(args[0]))
        else:
            out["socketpair"] = attempt(lambda: socket.socketpair())
    elif attack == "metadata":  # args: files to chmod/chown/utime/setxattr, then "--setuid" FILE [NEW]
        split = args.index("--setuid") if "--setuid" in args else len(args)
        for path in args[:split]:
            out[f"chmod {path}"] = attempt(lambda p=path: os.chmod(p, 0o777))
            out[f"chown {path}"] = attempt(lambda p=path: os.chown(p, os.getuid(), os.getgid()))
            out[f"utime {path}"] = attempt(lambda p=path: os.utime(p, (0, 0)))
            out[f"setxattr {path}"] = attempt(lambda p=path: os.setxattr(p, "user.memfold", b"pwned"))
            out[f"fchmod {path}"] = attempt(lambda p=path: _with_fd(p, lambda fd: os.fchmod(fd, 0o777)))
        if split < len(args):
            out["setuid"] = attempt(lambda: os.chmod(args[split + 1], 0o4755))
            out["setuid_create"] = attempt(lambda: os.close(os.open(args[split + 2], os.O_CREAT | os.O_WRONLY, 0o4755)))
    elif attack == "forge":  # take the launcher's descriptors and write a forged status to each, exit 3
        out["pidfd_open"] = attempt(lambda: os.close(_pidfd_open(1)))
        out["pidfd_getfd"] = _forge_pidfd()
        out["proc_fd"] = _forge_proc_fd()
        out["kill_init"] = attempt(lambda: os.kill(1, 0))
    elif attack == "env":  # args: parent pid
        out["environ"] = dict(os.environ)
        out["parent_environ"] = attempt(lambda: print(open(f"/proc/{args[0]}/environ", "rb").read()))
    elif attack == "root":  # args: file in scratch (created if missing), dir to mount on
        libc = ctypes.CDLL(None, use_errno=True)
        attempt(lambda: open(args[0], "a").close())
        out["chown"] = attempt(lambda: os.chown(args[0], 1000, 1000))
        out["setuid"] = attempt(lambda: os.setuid(1000))
        out["uid"] = os.getuid()
        ret = libc.mount(b"tmpfs", args[1].encode(), b"tmpfs", 0, None)
        out["mount"] = "succeeded" if ret == 0 else f"failed: {ctypes.get_errno()}"
        out["unshare"] = attempt(lambda: os.unshare(0x10000000) if hasattr(os, "unshare") else _unshare(libc))
        out["chroot"] = attempt(lambda: os.chroot("/tmp"))
    elif attack == "forkbomb":  # args: seconds[, most forks]: children sleep on, so every success stays alive
        end = time.monotonic() + float(args[0])
        most = int(args[1]) if len(args) > 1 else 1 << 30
        limited = 0
        spawned = 0
        # Fifty refusals prove the bound; stopping there keeps the attack short on a loaded machine, where
        # reaching the bound can take longer than the nominal duration.
        while time.monotonic() < end and spawned < most and limited < 50:
            try:
                if os.fork() == 0:
                    time.sleep(float(args[0]) + 30)
                    os._exit(0)
                spawned += 1
            except BlockingIOError:
                limited += 1
                time.sleep(0.01)
        out["spawned"] = spawned
        out["limited"] = limited
    elif attack == "memory":  # args: MiB per child, children: each fills its share and holds it 2 s
        kids = []
        for _ in range(int(args[1])):
            pid = os.fork()
            if pid == 0:
                try:
                    held = bytearray(int(args[0]) << 20)  # zero-filled: every page is touched
                except MemoryError:
                    os._exit(3)
                time.sleep(2)
                os._exit(0 if held else 1)
            kids.append(pid)
        ends = [os.waitpid(pid, 0)[1] for pid in kids]
        out["children"] = ["ok" if os.waitstatus_to_exitcode(s) == 0 else "memory-error"
                           if os.waitstatus_to_exitcode(s) == 3 else f"status {os.waitstatus_to_exitcode(s)}"
                           for s in ends]
    elif attack == "fill":  # args: dir, MiB: write that much in 1 MiB files, then stay
        block = os.urandom(1 << 20)
        written = 0
        for i in range(int(args[1])):
            try:
                with open(os.path.join(args[0], f"fill-{i}"), "wb") as fh:
                    fh.write(block)
                written += 1
            except OSError:
                break
        print(json.dumps({"attack": attack, "written_mib": written}), flush=True)
        time.sleep(30)
    elif attack == "unlinked":  # args: dir, MiB: a file unlinked at once, then written and held open
        path = os.path.join(args[0], "gone")
        fh = open(path, "wb")
        os.unlink(path)
        block = os.urandom(1 << 20)
        for _ in range(int(args[1])):
            fh.write(block)
        fh.flush()
        time.sleep(30)
    elif attack == "files":  # args: dir, count: that many empty files, then stay
        for i in range(int(args[1])):
            open(os.path.join(args[0], f"f{i}"), "w").close()
        time.sleep(30)
    elif attack == "hidden":  # args: dir: 1 MiB inside a dir its owner may write but not list, then stay
        inner = os.path.join(args[0], "hidden")
        os.mkdir(inner, 0o300)
        with open(os.path.join(inner, "data"), "wb") as fh:
            fh.write(os.urandom(1 << 20))
        time.sleep(30)
    elif attack == "orphan":  # args: marker path, delay: a setsid grandchild writes the marker later
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(float(args[1]))
                open(args[0], "w").write("survived")
                os._exit(0)
            os._exit(0)
        os.wait()
        out["forked"] = True
    elif attack == "fds":
        out["fds"] = {fd: _link(fd) for fd in os.listdir("/proc/self/fd")}
    elif attack == "stdout":  # args: megabytes
        block = b"x" * (1 << 20)
        for _ in range(int(args[0])):
            sys.stdout.buffer.write(block)
        sys.stdout.flush()
        return {}
    elif attack == "stderr":
        block = b"e" * (1 << 20)
        for _ in range(int(args[0])):
            sys.stderr.buffer.write(block)
        sys.stderr.flush()
    elif attack == "hang":
        while True:
            time.sleep(1)
    elif attack == "plan-then-hang":
        print(json.dumps({"schemaVersion": 1, "operations": []}), flush=True)
        while True:
            time.sleep(1)
    elif attack == "read":  # report the first bytes of each file given
        for path in args:
            out[path] = attempt(lambda p=path: open(p, "rb").read(64))
    return out


def _pair(kind: int) -> socket.socket:
    a, _b = socket.socketpair(socket.AF_UNIX, kind)
    return a


def _stream_pair() -> None:
    a, b = socket.socketpair()
    a.sendall(b"ok")
    if b.recv(2) != b"ok":
        raise OSError(0, "socketpair lost data")


def _with_fd(path: str, fn) -> None:  # type: ignore[no-untyped-def]
    fd = os.open(path, os.O_RDONLY)
    try:
        fn(fd)
    finally:
        os.close(fd)


_SYS_PIDFD_OPEN, _SYS_PIDFD_GETFD = 434, 438


def _pidfd_open(pid: int) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(_SYS_PIDFD_OPEN, pid, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")
    return int(fd)


def _forge_pidfd() -> str:
    """pidfd_getfd every descriptor number of PID 1 and write a forged status line to each."""
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        pidfd = _pidfd_open(1)
    except OSError as exc:
        return f"failed: {exc.__class__.__name__} {exc.errno}"
    got, errors = 0, set()
    for target in range(64):
        fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, target, 0)
        if fd < 0:
            errors.add(ctypes.get_errno())
            continue
        got += 1
        attempt(lambda f=fd: os.write(f, b"exit 0\n"))
    return f"succeeded: {got}" if got else f"failed: errno {sorted(errors)}"


def _forge_proc_fd() -> str:
    got = 0
    for target in range(64):
        try:
            fd = os.open(f"/proc/1/fd/{target}", os.O_WRONLY)
        except OSError:
            continue
        got += 1
        attempt(lambda f=fd: os.write(f, b"exit 0\n"))
    return f"succeeded: {got}" if got else "failed"


def _unshare(libc: ctypes.CDLL) -> None:
    if libc.unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
