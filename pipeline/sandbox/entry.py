"""The launcher's command line: a policy file or descriptor, or a policy awaited from the parent.

``python -m pipeline.sandbox (--policy FILE | --policy-fd N) -- argv...`` confines and starts ``argv`` at
once; ``--await-policy N [--planner]`` is started ahead of its run and waits for the policy (see
``_await``). Everything after the policy is read is ``launcher.launch``.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

from . import AWAIT, EXIT_LAUNCHER_ERROR, POLICY_DEFAULTS
from .launcher import _say, launch

TYPE_CHECKING = False  # typing costs ~5 ms of every sandboxed start
if TYPE_CHECKING:
    from .policy import Policy


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not data:
            return b"".join(chunks).decode(errors="replace")
        chunks.append(data)



def _load(text: str) -> Policy:
    """The policy as read-only attributes, without importing dataclasses (start-up cost)."""
    raw = json.loads(text)
    if not isinstance(raw, dict):
        raise ValueError("policy must be a JSON object")
    policy: Policy = SimpleNamespace(**{**POLICY_DEFAULTS, **raw})  # type: ignore[assignment]
    return policy


USAGE = ("usage: python -m pipeline.sandbox (--policy FILE | --policy-fd N) -- argv...\n"
         f"       python -m pipeline.sandbox {AWAIT} N [--planner]")


def _preload_planner() -> None:
    """Import the built-in planner while the parent still prepares the run (before any policy exists).

    Only this package's own code is loaded, from the import path the launcher was started with; no
    input of the run exists yet and nothing is read from it. A confined worker can import, but never
    write bytecode, so this is also where a source checkout's planner gets its ``__pycache__``.
    """
    try:
        from ..planner import run  # noqa: F401
    except Exception:
        pass  # the confined process imports it again and reports the error with its traceback


def _await(args: list[str]) -> tuple[Policy, list[str]]:
    """``--await-policy N [--planner]``: started ahead of its run, the launcher boots, then blocks on
    pipe N until the parent writes the policy (with ``argv`` and ``cwd``) and closes it. A pipe closed
    with nothing written means the parent gave up: the launcher exits, having started nothing."""
    if len(args) not in (2, 3) or args[2:] not in ([], ["--planner"]):
        raise ValueError(USAGE)
    fd = int(args[1])
    if args[2:]:
        _preload_planner()
    text = _read_all(fd)
    os.close(fd)
    if not text:
        raise ValueError("no policy: the run was given up before its worker started")
    raw = json.loads(text)
    argv, cwd = raw.pop("argv", None), raw.pop("cwd", None)
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)) or not isinstance(cwd, str):
        raise ValueError("the policy names no worker argv and cwd")
    os.chdir(cwd)
    return _load(json.dumps(raw)), argv


def main(args: list[str]) -> int:
    try:
        if args[:1] == [AWAIT]:
            policy, argv = _await(args)
            return _launch_reported(policy, argv)
        if "--" not in args:
            raise ValueError(USAGE)
        split = args.index("--")
        opts, argv = args[:split], args[split + 1 :]
        if not argv or len(opts) != 2 or opts[0] not in ("--policy", "--policy-fd"):
            raise ValueError(USAGE)
        if opts[0] == "--policy-fd":
            fd = int(opts[1])
            os.lseek(fd, 0, os.SEEK_SET)
            text = _read_all(fd)
            os.close(fd)
        else:
            with open(opts[1], encoding="utf-8") as fh:
                text = fh.read()
        policy = _load(text)
    except (OSError, ValueError) as exc:
        _say(f"launcher-error {exc}")
        return EXIT_LAUNCHER_ERROR
    return _launch_reported(policy, argv)


def _launch_reported(policy: Policy, argv: list[str]) -> int:
    try:
        return launch(policy, argv)
    except Exception as exc:  # report distinctly instead of a traceback the parent cannot classify
        _say(f"launcher-error {type(exc).__name__}: {exc}")
        return EXIT_LAUNCHER_ERROR
