"""The two bodies the bench runs in fresh processes, as the command line would run them.

``python -m pipeline.commands.benchbody consolidate HOME PROJECT`` is the body of
``memfold --json consolidate --no-context``: the same function the command line runs (services,
cached rules and config, the config's own output bounds: the built-in planner's plan fits the
defaults at every measured size), called without the command-line shell; its JSON summary carries
the stage timings the bench reports.

``python -m pipeline.commands.benchbody settle HOME PROJECT`` leaves the state a finished
transaction leaves: both roots entered in the state cache (every file is past the racy window),
their memories parsed, the mirror's files privacy-checked, and both search indexes built.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .context import STATE, config, services


def consolidate_as_cli(home: Path, project: Path) -> int:
    from .consolidation import consolidate

    STATE.home, STATE.project, STATE.json = home, project, True
    return consolidate(no_context=True, json_out=True)


def settle(home: Path, project: Path) -> int:
    from ..mirror.guard import privacy_issues
    from ..state.post import compute_post
    from ..state.read import read_pre
    from ..store.indexbuild import rebuild
    from ..store.searchdb import cache_file
    from ..store.statecache import cache_for, flush_all

    STATE.home, STATE.project = home, project
    svc = services()
    pre = read_pre(svc.layout, config().store_limits())
    found = list(privacy_issues(compute_post(pre, []), svc.ruleset, cache_for(svc.layout.project_home)))
    flush_all()
    limits = config().store_limits()
    # Every commit leaves each root's search index current (the per-prompt path reads it).
    for kind, root in (("memory", svc.layout.harness), ("mirror", svc.layout.mirror)):
        if root is not None:
            rebuild(str(root), cache_file(str(svc.layout.project_home), kind), limits.max_file_bytes,
                    limits.max_files)
    return 1 if found else 0


BODIES = {"consolidate": consolidate_as_cli, "settle": settle}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in BODIES:
        sys.exit("usage: python -m pipeline.commands.benchbody consolidate|settle HOME PROJECT")
    # As the command line runs it: no cyclic collector, no interpreter teardown after the exit handlers.
    import gc

    from ..errors import exit_after_handlers

    gc.disable()
    exit_after_handlers(BODIES[sys.argv[1]](Path(sys.argv[2]), Path(sys.argv[3])))
