"""Bounded capture of a running worker's output, and the kill of its whole process tree."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..frozen import Slotted
from ..sandbox import cgroup

TAIL_BYTES = 64 << 10
_CHUNK = 1 << 16
_DRAIN_GRACE = 2.0  # seconds to collect output still buffered in pipes after the kill
# How often ``check`` runs: a worker writing at disk speed overshoots a bound by at most this long.
CHECK_INTERVAL = 0.2


class Capture(Slotted):
    __slots__ = ("stdout", "head_len", "tail", "beyond")
    stdout: bytearray
    head_len: int
    tail: bytearray
    # stderr bytes that did not fit in the head
    beyond: int

    def __init__(self, stdout: bytearray | None = None, head_len: int = 0, tail: bytearray | None = None,
                 beyond: int = 0) -> None:
        self.stdout = bytearray() if stdout is None else stdout
        self.head_len = head_len
        self.tail = bytearray() if tail is None else tail
        self.beyond = beyond


    @property
    def dropped(self) -> int:
        return self.beyond - len(self.tail)


class Run:
    """One spawned launcher and everything needed to kill its whole tree."""

    def __init__(self, proc: subprocess.Popen[bytes], cg: cgroup.RunCgroups, report_path: Path | None) -> None:
        self.proc = proc
        self.cg = cg
        self.report_path = report_path

    def kill_all(self) -> None:
        """Kill the whole tree and return only when it is gone (or after a bounded wait).

        SIGTERM first asks the launcher, which the worker cannot signal, to SIGKILL its
        child and wait for it: PID 1 of the namespace exits only after every member is
        reaped, and a subreaper sweeps orphans. SIGKILL to the process group and
        cgroup.kill then catch anything left, e.g. if the launcher itself was killed.
        """
        proc = self.proc
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=2.0)
            except (OSError, subprocess.TimeoutExpired):
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        self.cg.kill()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def file_tail(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - TAIL_BYTES))
            return fh.read()
    except OSError:
        return b""


def pump(
    run: Run,
    timeout: float,
    start: float,
    out_f: Any,
    err_f: Any,
    cap: Capture,
    stdout_limit: int,
    stderr_limit: int,
    stop_when: Callable[[bytearray], bool] | None,
    check: Callable[[], str | None] | None = None,
) -> tuple[bool, str | None, str | None]:
    """Read both pipes until EOF; enforce the deadline, the stdout bound, ``stop_when`` and ``check``.

    ``check`` runs every ``CHECK_INTERVAL`` seconds and names the bound the worker broke, if any.
    """
    proc = run.proc
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    head_limit = stderr_limit // 2
    tail_keep = stderr_limit - head_limit
    sel = selectors.DefaultSelector()
    sel.register(out_fd, selectors.EVENT_READ)
    sel.register(err_fd, selectors.EVENT_READ)
    deadline = start + timeout
    drain_until: float | None = None
    timed_out, killed, over = False, None, None
    next_check = start + CHECK_INTERVAL
    try:
        while sel.get_map():
            now = time.monotonic()
            if drain_until is not None and now >= drain_until:
                break  # something we could not kill still holds a pipe; stop waiting for it
            if drain_until is None and now >= deadline:
                timed_out, killed = True, "timeout"
                run.kill_all()
                drain_until = time.monotonic() + _DRAIN_GRACE
                continue
            if drain_until is None and check is not None and now >= next_check:
                next_check = now + CHECK_INTERVAL
                broken = check()
                if broken is not None:
                    over, killed = broken, "over-bound"
                    run.kill_all()
                    drain_until = time.monotonic() + _DRAIN_GRACE
                    continue
            limit = (drain_until or deadline) - now
            for key, _ in sel.select(min(limit, 0.1)):
                fd = int(key.fd)
                try:
                    data = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(fd)
                    continue
                if fd == out_fd:
                    if killed:
                        continue  # output after a kill is not part of the result
                    room = stdout_limit - len(cap.stdout)
                    if len(data) > room:
                        data = data[:room]
                        over, killed = "stdout", "over-bound"
                    cap.stdout += data
                    out_f.write(data)
                    # The buffer itself, not a copy: copying it per chunk made capture quadratic.
                    if killed is None and stop_when is not None and stop_when(cap.stdout):
                        killed = "stopped"
                    if killed:
                        out_f.flush()
                        run.kill_all()
                        drain_until = time.monotonic() + _DRAIN_GRACE
                else:
                    _stderr(data, err_f, cap, head_limit, tail_keep)
            if drain_until is None and proc.poll() is not None:
                # The launcher is gone: whatever still runs in its tree dies now.
                run.kill_all()
                drain_until = time.monotonic() + _DRAIN_GRACE
    finally:
        sel.close()
    if proc.returncode is None:
        run.kill_all()
    return timed_out, killed, over


def _stderr(data: bytes, err_f: Any, cap: Capture, head_limit: int, tail_keep: int) -> None:
    room = head_limit - cap.head_len
    if room > 0:
        err_f.write(data[:room])
        cap.head_len += min(room, len(data))
        data = data[room:]
        if not data:
            return
    cap.beyond += len(data)
    cap.tail += data
    if len(cap.tail) > tail_keep:
        del cap.tail[: len(cap.tail) - tail_keep]
