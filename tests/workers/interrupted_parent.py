"""A parent that runs an orphan-making worker and gets SIGINT or SIGTERM while waiting."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from pipeline.worker.run import WorkerSpec, build_env, run_worker

base, hostile, token, signame = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
scratch = base / "scratch"
scratch.mkdir()
# The marker goes outside scratch, which the run deletes: its absence then still means no survivor wrote it.
marks = base / "marks"
marks.mkdir()
# The worker leaves a setsid grandchild that writes a marker after 1 s, then hangs itself.
script = (
    "import os, sys, time, runpy\n"
    "sys.argv = [sys.argv[1], 'orphan', sys.argv[2], sys.argv[3], '1']\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "time.sleep(60)\n"
)
spec = WorkerSpec(
    argv=(sys.executable, "-c", script, hostile, token, str(marks / "marker")),
    cwd=scratch,
    env=build_env({"PATH": "/usr/bin:/bin"}, [], scratch),
    timeout=30,
    write_paths=(marks,),
    scratch=scratch,
)
sig = getattr(signal, signame)
threading.Timer(0.7, lambda: os.kill(os.getpid(), sig)).start()
try:
    run_worker(spec, stdout_path=base / "out", stderr_path=base / "err")
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
    sys.exit(130)
print("returned", flush=True)
