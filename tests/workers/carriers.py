"""Which processes carry a token in their command line: how tests find a worker that outlived its run.

Plain standard library, so scripts run as an ordinary user (who has only this directory) share it.
"""

from __future__ import annotations

import os


def carriers(token: str) -> list[int]:
    """Pids (other than this process) whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if token.encode() in fh.read():
                    found.append(int(name))
        except OSError:
            pass
    return found
