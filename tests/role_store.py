"""A labelled store of thousands of memories where the same words stand in other roles.

Every memory carries the outcome a careful reader expects: kept, or merged into the one named.
Three kinds of near twins are never one fact: the same pairs recombined ("timeout from chat-cron to
catalog-web" and "from chat-web to catalog-cron"), the same two things the other way round ("from
db-primary to db-reporting" and back), and key and value exchanged ("the db-primary alias points to
db-blue" and "the db-blue alias points to db-primary"). Real duplicates (the same fact saved again,
reworded a little) merge into the newer copy. The rest are ordinary notes, some saved twice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pipeline.store.memory import Memory, render_memory

_APPS = "chat catalog billing search auth orders ledger media mailer pricing".split()
_TIERS = "web cron api worker edge jobs".split()
_METRICS = ("timeout", "retry budget", "rate limit", "queue depth")
_AMOUNTS = ("5 seconds", "30 seconds", "3 attempts", "100 per second", "500 messages")
_VERBS = ("alias points to", "route forwards to", "label maps to the queue")
_WORDS = ("deploy cache database migration schema index queue retry backoff build release branch review lint "
          "format fixture endpoint client server header proxy image registry volume network config parser "
          "logger metric alert dashboard trace latency budget quota shard replica backup restore script module "
          "package version lockfile dependency vendor patch upgrade rollback experiment owner runbook ticket "
          "sprint roadmap customer invoice payment refund webhook stream bucket").split()


@dataclass(frozen=True)
class Labelled:
    files: dict[str, bytes]
    visibility: dict[str, str]
    expect: dict[str, str]  # file -> "keep" or the file it merges into


def _service(rng: random.Random) -> tuple[str, str]:
    return rng.choice(_APPS), rng.choice(_TIERS)


def _note(title: str, description: str, body: str, visibility: str, month: int) -> Memory:
    return Memory(name=title, description=description, type="project", visibility=visibility,
                  created=f"2026-{month:02d}-01", modified=f"2026-{month:02d}-01T09:00:00Z", body=body)


def build(count: int = 3000, seed: int = 48) -> Labelled:
    rng = random.Random(seed)
    memories: dict[str, Memory] = {}
    expect: dict[str, str] = {}

    def put(file: str, memory: Memory, outcome: str = "keep") -> None:
        assert file not in memories, file
        memories[file] = memory
        expect[file] = outcome

    edges: set[tuple[str, str, str]] = set()
    i = 0
    while len(memories) < count * 3 // 10:
        i += 1
        (a, x), (b, y) = _service(rng), _service(rng)
        if a == b or x == y:
            continue
        metric, amount = rng.choice(_METRICS), rng.choice(_AMOUNTS)
        visibility = "safe" if rng.random() < 0.6 else "private"
        kind = i % 4
        first = (metric, f"{a}-{x}", f"{b}-{y}")
        second = {0: (metric, f"{a}-{y}", f"{b}-{x}"), 1: (metric, f"{b}-{y}", f"{a}-{x}")}.get(kind)
        if first in edges or (second is not None and second in edges):
            continue
        if kind in (0, 1, 2):
            for number, (m, src, dst) in enumerate([first] + ([second] if second else []), 1):
                edges.add((m, src, dst))
                stem = f"{m.replace(' ', '-')}-{src}-{dst}"
                put(f"project_{stem}.md", _note(f"{m.capitalize()} {src} to {dst}", f"{m} from {src} to {dst} is {amount}",
                                                f"- The {m} from {src} to {dst} is {amount}.", visibility, 2 + 3 * number))
            if kind == 2:  # the first edge saved again, a little reworded: one fact
                m, src, dst = first
                stem = f"{m.replace(' ', '-')}-{src}-{dst}"
                expect[f"project_{stem}.md"] = f"project_{stem}-again.md"
                put(f"project_{stem}-again.md",
                    _note(f"{m.capitalize()} {src} to {dst} (again)", f"The {m} from {src} to {dst} is {amount}",
                          f"The {m} from {src} to {dst} is {amount}.", visibility, 9))
        else:
            key, value = f"{a}-{x}", f"{b}-{y}"
            verb = rng.choice(_VERBS)
            for number, (k, v) in enumerate(((key, value), (value, key)), 1):
                stem = f"{verb.split()[0]}-{k}-{v}"
                if f"project_{stem}.md" in memories:
                    break
                put(f"project_{stem}.md", _note(f"{verb.split()[0].capitalize()} {k}", f"the {k} {verb} {v}",
                                                f"- The {k} {verb} {v}.", visibility, 2 + 3 * number))
    n = 0
    while len(memories) < count:
        n += 1
        subject = f"{rng.choice(_WORDS)}-{n:05d}"
        visibility = "safe" if rng.random() < 0.6 else "private"
        lines = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 12))) for _ in range(rng.randint(1, 5))]
        description = f"{subject} " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 12)))
        note = _note(f"Note {subject}", description, "\n".join(f"- The {subject} {line}." for line in lines),
                     visibility, rng.randint(1, 6))
        put(f"project_note-{subject}.md", note)
        if rng.random() < 0.1 and len(memories) < count:
            again = note.with_changes(name=f"Note {subject} (again)", modified="2026-11-01T09:00:00Z",
                                      body=note.body.replace("- The", "The", 1))
            expect[f"project_note-{subject}.md"] = f"project_note-{subject}-again.md"
            put(f"project_note-{subject}-again.md", again)
    return Labelled({f: render_memory(m) for f, m in memories.items()},
                    {f: m.visibility for f, m in memories.items()}, expect)
