"""``killed_parent.py drive BASE HOSTILE TOKEN``: start a run in a child parent, SIGKILL that parent, time the end.

The child (``killed_parent.py run ...``) runs a worker that leaves a setsid grandchild, writes
``scratch/ready`` and then sleeps, both far past the moment of the kill. The driver prints one JSON line: how many
processes carried the token before the kill, which pids still carry it after, and how many
seconds it took until none did (bounded wait), plus the killed parent's pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from carriers import carriers


def run(base: Path, hostile: str, token: str) -> None:
    from pipeline.worker.run import WorkerSpec, build_env, run_worker

    scratch = base / "scratch"
    scratch.mkdir()
    script = (
        "import sys, time, runpy\n"
        "sys.argv = [sys.argv[1], 'orphan', sys.argv[2], sys.argv[3], '60']\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "open('ready', 'w').close()\n"
        "time.sleep(60)\n"
    )
    spec = WorkerSpec(argv=(sys.executable, "-c", script, hostile, token, str(scratch / "marker")), cwd=scratch,
                      env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch), timeout=60)
    run_worker(spec, stdout_path=base / "out", stderr_path=base / "err")


def drive(base: Path, hostile: str, token: str) -> None:
    parent = subprocess.Popen([sys.executable, __file__, "run", str(base), hostile, token])
    # The kill comes only once the worker has left its grandchild and sleeps (or the wait ran out).
    until = time.monotonic() + 30
    while time.monotonic() < until and not (base / "scratch" / "ready").exists():
        time.sleep(0.05)
    up = [p for p in carriers(token) if p != parent.pid]
    from pipeline.sandbox import cgroup

    # Listed while the parent lives: once it is dead any run (another test's too) may sweep them.
    cgroups = [str(d) for base in cgroup._bases().values() for d in base.glob(f"memfold-*-{parent.pid}-*")]
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    killed_at = time.monotonic()
    while carriers(token) and time.monotonic() - killed_at < 10:
        time.sleep(0.02)
    print(json.dumps({"up": len(up), "left": carriers(token), "seconds": round(time.monotonic() - killed_at, 3),
                      "parent": parent.pid, "cgroups": cgroups}), flush=True)


if __name__ == "__main__":
    mode, base_arg, hostile_arg, token_arg = sys.argv[1:5]
    (run if mode == "run" else drive)(Path(base_arg), hostile_arg, token_arg)
