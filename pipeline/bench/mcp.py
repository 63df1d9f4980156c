"""``memfold mcp`` start-up: spawn to the ``initialize`` answer, against importing the MCP SDK alone."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from . import floors

SDK_IMPORT = "import mcp.server.mcpserver"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "memfold-bench", "version": "0"}}}


def initialize_ms(argv: list[str], env: Mapping[str, str]) -> float:
    """One server: start it, send ``initialize``, time the answer; then close stdin and reap it."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(env))
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline() or b"{}")
        elapsed = floors.ms_since(start)
        if answer.get("id") != 1 or "result" not in answer:
            raise RuntimeError(f"memfold mcp gave no initialize result: {str(answer)[:300]}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return elapsed


def samples(home: Path, project: Path, env: Mapping[str, str], reps: int) -> tuple[list[float], list[float]]:
    """(SDK import alone, ``memfold mcp`` to its initialize answer), warmed up, ``reps`` each."""
    argv = [sys.executable, "-m", "pipeline", "--home", str(home), "--project", str(project), "mcp"]
    sdk = floors.interpreter(env, reps, SDK_IMPORT)
    initialize_ms(argv, env)
    return sdk, [initialize_ms(argv, env) for _ in range(reps)]
