"""The team rows: a pull that brings 100 teammates' memories into a trusted project's mirror, then the
prompt that sees them before any write, and the write that adopts them.

Each sample starts from the state a user's store is in when they pull: settled, as a finished
transaction leaves it (state cache, parsed memories, search indexes, and its receipt with the chain
head beside the mirror, which is the base the next sync reconciles against), with the teammates' files
(and the mirror index git's union merge would leave) then put into the mirror as a pull puts them there.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..store.memory import INDEX_NAME, Memory, render_memory
from .consolidate import RACY_S, _swap_in, _swap_out, settled_copies
from .synth import _sentence

PULLED = 100
TARGET_ADD = 1.5  # an add that adopts a pull may cost at most half again a full re-read of the store


def pulled_memories(count: int = PULLED, seed: int = 11) -> dict[str, bytes]:
    """Teammates' new memories as their memfold wrote them: safe, in files of their own."""
    rng = random.Random(seed)
    out = {}
    for i in range(count):
        name = f"project_teammate-{i:04d}.md"
        memory = Memory(name=name.removesuffix(".md"), description=_sentence(rng, 7, 14).capitalize(),
                        type="project", visibility="safe", created="2026-11-20", modified="2026-11-20T09:00:00Z",
                        body="\n".join(f"- {_sentence(rng, 6, 14)}." for _ in range(rng.choice((1, 3, 6)))))
        out[name] = render_memory(memory)
    return out


def pull(mirror: Path, files: dict[str, bytes]) -> None:
    """What a pull leaves: the new files, and their lines appended to the index (git's union merge)."""
    for name, data in files.items():
        (mirror / name).write_bytes(data)
    index = mirror / INDEX_NAME
    lines = [f"- [{n.removesuffix('.md')}]({n}) — teammate's note" for n in sorted(files)]
    index.write_bytes(index.read_bytes() + ("\n".join(lines) + "\n").encode())


def bench_team(cli: Any, add: Callable[..., Any], store: Any, pristine: Path, live: Path, env: dict[str, str],
               n: int, reps: int, fl: dict[str, float]) -> None:
    """``add after a pull`` and ``inject --prompt after a pull`` for one store size."""
    files = pulled_memories()
    mirror = store.layout.mirror
    assert mirror is not None
    samples_add: list[float] = []
    samples_prompt: list[float] = []
    with settled_copies(pristine, live, reps + 1, env) as copies:
        # The synthetic store was written file by file: one write of the user's own gives each copy the
        # receipt and head that every store written through memfold has. Without them the sync has no
        # base, and every mirror file (not the 100 pulled) is incoming and screened.
        for rep, copy in enumerate(copies):
            _swap_in(copy, live)
            cli.run("add", f"project_before-pull-{rep}", "-d", f"a note written before pulling ({rep})",
                    "-b", "written before the pull")
            _swap_out(live, copy)
        time.sleep(RACY_S)  # settled, as a store is by the time a teammate's work arrives
        for rep, copy in enumerate(copies):
            _swap_in(copy, live)
            pull(mirror, files)
            ms, _ = cli.run("inject", "--prompt", "teammate note about the release")
            if rep:
                samples_prompt.append(ms)
            ms, _ = cli.run("add", f"project_after-pull-{rep}", "-d", f"a note written after pulling ({rep})",
                            "-b", "written right after a pull")
            if rep:
                samples_add.append(ms)
    # The floor: starting Python and reading and hashing both roots whole, what a write that could not
    # trust its state cache would pay before adopting anything (as for verify and audit).
    fl.setdefault("python+read+hash", fl["python"] + fl["read+hash"])
    add(f"add after a pull of {PULLED}", samples_add, "python+read+hash",
        f"<= {TARGET_ADD}x floor at 2,000" if n == 2000 else "",
        (lambda r: (r.ratio or 0) <= TARGET_ADD) if n == 2000 else None)
    add(f"inject --prompt after a pull of {PULLED}", samples_prompt, "python")
