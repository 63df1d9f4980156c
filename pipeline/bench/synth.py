"""Synthetic stores written straight to disk, byte-identical to what the engine would write."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from ..mirror.trust import set_trust
from ..paths import Layout, make_layout
from ..paths.ondisk import ensure_layout
from ..store.index import render_index
from ..store.memory import INDEX_NAME, TYPES, Memory, render_memory

_WORDS = (
    "deploy staging cache database migration schema index queue worker retry backoff timeout "
    "build release branch review lint format test fixture mock api endpoint client server "
    "cookie header proxy docker image registry volume network port config yaml json parser logger metric "
    "alert dashboard trace span latency budget quota shard replica backup restore cron job script python "
    "typescript rust go module package version lockfile dependency vendor patch upgrade rollback feature "
    "flag experiment user team owner oncall incident runbook postmortem ticket sprint roadmap customer "
    "billing invoice payment refund webhook event stream kafka redis postgres sqlite s3 bucket bluegreen"
).split()
# Real notes are short lines of prose; sizes follow what hosts write (a few hundred bytes to a few KB).
_BODY_LINES = (1, 2, 3, 4, 6, 8, 12, 20, 35)
DUPLICATE_SHARE = 0.10
EXPIRED_SHARE = 0.03
SAFE_SHARE = 0.6


@dataclass(frozen=True)
class Synthetic:
    home: Path
    project: Path
    layout: Layout
    count: int
    files: int  # memory files in both roots, indexes included


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _memory(rng: random.Random, i: int) -> tuple[str, Memory]:
    kind = TYPES[i % len(TYPES)]
    topic = "-".join(rng.sample(_WORDS, 2))
    file = f"{kind}_{topic}-{i:05d}.md"
    body = "\n".join(f"- {_sentence(rng, 6, 16)}." for _ in range(rng.choice(_BODY_LINES)))
    expired = rng.random() < EXPIRED_SHARE
    return file, Memory(
        name=file.removesuffix(".md"), description=_sentence(rng, 7, 18).capitalize(), type=kind,
        visibility="safe" if rng.random() < SAFE_SHARE else "private",
        created=f"2026-{rng.randint(1, 9):02d}-{rng.randint(1, 28):02d}",
        modified=f"2026-10-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
        expires="2026-01-01" if expired else None, body=body,
    )


def _duplicate(rng: random.Random, i: int, of: Memory) -> tuple[str, Memory]:
    """A paraphrase hosts really produce: the same fact saved again under a new name, slightly reworded."""
    file = f"{of.type}_again-{i:05d}.md"
    lines = of.body.split("\n")
    if len(lines) > 4:
        lines.pop(rng.randrange(len(lines)))
    return file, Memory(name=file.removesuffix(".md"), description=of.description + " (again)", type=of.type,
                        visibility=of.visibility, created=of.created, modified="2026-11-01T00:00:00Z",
                        body="\n".join(lines))


def build_memories(count: int, seed: int = 7) -> dict[str, Memory]:
    rng = random.Random(seed)
    memories: dict[str, Memory] = {}
    originals: list[Memory] = []
    for i in range(count):
        if originals and rng.random() < DUPLICATE_SHARE:
            file, memory = _duplicate(rng, i, rng.choice(originals))
        else:
            file, memory = _memory(rng, i)
            originals.append(memory)
        memories[file] = memory
    return memories


def _write(path: Path, data: bytes, mode: int) -> None:
    # Bench setup only: no fsync, the page cache is what every measured path reads from anyway.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


CITED_LINES = 60
CITED_PER_FILE = 10
CHANGED_SHARE = 0.10


def _cite_sources(project: Path, memories: dict[str, Memory], cited: int, rng: random.Random) -> dict[str, Memory]:
    """Every other memory (``cited`` of them) cites three lines of a source file in the project, ten memories
    a file; a tenth of the files then change under their citations, so their memories are marked."""
    from ..store.citecheck import anchor

    (project / "src").mkdir(exist_ok=True)
    names = [n for i, n in enumerate(sorted(memories)) if i % 2 == 0][:cited]
    sources: dict[str, bytes] = {}
    out = dict(memories)
    for i, name in enumerate(names):
        path = f"src/module_{i // CITED_PER_FILE:04d}.py"
        if path not in sources:
            sources[path] = "".join(f"def {_sentence(rng, 1, 1)}_{j}(): return {j}\n"
                                    for j in range(CITED_LINES)).encode()
        start = 1 + (i % CITED_PER_FILE) * 5
        out[name] = memories[name].with_changes(evidence=(anchor(path, sources[path], start, start + 2),))
    for k, (path, data) in enumerate(sorted(sources.items())):
        if k < len(sources) * CHANGED_SHARE:
            data = data.replace(b"return 3\n", b"return -3\n")  # line 4: cited by one memory of the file
        _write(project / path, data, 0o644)
    return out


def write_store(base: Path, count: int, *, seed: int = 7, cited: int = 0) -> Synthetic:
    """A temp home + project with ``count`` memories in the private store, the safe ones mirrored;
    ``cited`` of them cite lines of source files in the project."""
    home, project = base / "home", base / "project"
    home.mkdir(parents=True)
    project.mkdir()
    # Large stores need the bounds raised, as a user with such a store would.
    (home / "config.yaml").write_text(
        f"limits: {{max_files: {max(50_000, count * 2)}, index_lines: {max(200, count * 2)}, "
        f"index_bytes: {max(25_600, count * 400)}, mirror_bytes: {max(8 << 20, count * 4096)}}}\n",
        encoding="utf-8")
    layout = make_layout(home, project)
    ensure_layout(layout)
    set_trust(home, layout.project_root, True)
    memories = build_memories(count, seed)
    if cited:
        memories = _cite_sources(project, memories, cited, random.Random(seed))
    mirror = layout.mirror
    assert mirror is not None
    files = 0
    for file, memory in memories.items():
        data = render_memory(memory)
        _write(layout.harness / file, data, 0o600)
        files += 1
        if memory.is_safe:
            _write(mirror / file, data, 0o644)
            files += 1
    _write(layout.harness / INDEX_NAME, render_index(memories, mirror=False), 0o600)
    _write(mirror / INDEX_NAME, render_index(memories, mirror=True), 0o644)
    return Synthetic(home, layout.project_root, layout, count, files + 2)
