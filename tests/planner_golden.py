"""The stores the recorded planner plans come from, and the bytes the planner prints for each."""

# ``python tests/planner_golden.py --write`` records the sha256, length and line count of the plan
# the planner prints for every store below in ``tests/data/planner_golden.json``; ``--check``
# compares. Only a deliberate change of what a plan says regenerates the record.

from __future__ import annotations

import hashlib
import json
import random
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from pipeline.bench.evaluate import load_cases  # noqa: E402
from pipeline.bench.synth import build_memories  # noqa: E402
from pipeline.planner.run import plan_run  # noqa: E402
from pipeline.store.jsontext import dump_json  # noqa: E402
from pipeline.store.memory import Memory, render_memory  # noqa: E402

GOLDEN = HERE / "data" / "planner_golden.json"
NOW = "2026-11-30T12:00:00Z"
HEX = {"scopeKey": "a" * 64, "scopeDigest": "b" * 64, "artifactHash": "c" * 64, "snapshotDigest": "c" * 64}
PLAN_BOUND = 8 << 20


class Store:
    """One planner input: the private store's files, the repository's files, candidates and the clock."""

    __slots__ = ("files", "repo", "candidates", "now", "selected", "mirror", "limits")

    def __init__(self, files: dict[str, bytes], repo: dict[str, str] | None = None,
                 candidates: list[dict[str, Any]] | None = None, now: str = NOW,
                 selected: list[str] | None = None, mirror: tuple[str, ...] = (),
                 limits: dict[str, int] | None = None) -> None:
        self.files = files
        self.repo = repo or {}
        self.candidates = candidates or []
        self.now = now
        self.selected = sorted(files) if selected is None else selected
        self.mirror = mirror
        self.limits = limits or {}


def _synthetic(count: int, seed: int) -> Store:
    files = {n: render_memory(m) for n, m in build_memories(count, seed).items()}
    some = sorted(files)
    rng = random.Random(seed)
    picked = [files[n] for n in rng.sample(some, min(4, len(some)))]
    # Candidates: repeats of stored notes (updates or "already recorded") and new notes.
    candidates: list[dict[str, Any]] = [{"body": data.decode().split("---\n", 2)[2], "origin": "session"}
                                        for data in picked]
    candidates += [{"body": f"- the {w} job now retries {n} times", "name": f"{w} retries", "type": "project"}
                   for w, n in (("billing", 3), ("search", 5), ("billing", 4))]
    return Store(files, candidates=candidates)


_SERVICES = ("api", "billing", "search", "auth", "worker", "gateway", "cache", "ledger", "mailer", "queue")
_HOSTS = ("web01", "web02", "app1", "app2", "db3")
_ENVS = ("staging", "production", "dev", "qa")
_FILES = ("src/app.py", "src/billing/invoice.py", "ops/deploy.sh", "config/settings.yaml", "Makefile",
          "docs/runbook.md", "scripts/migrate.py", "lib/cache.rs")
_TYPES = ("project", "feedback", "user", "reference")


def _line(rng: random.Random) -> str:
    svc, host, env = rng.choice(_SERVICES), rng.choice(_HOSTS), rng.choice(_ENVS)
    choices = (
        f"The {svc} service listens on port {rng.choice((8080, 8081, 9090, 5432, 6379))}",
        f"{host} uses port {rng.choice((80, 443, 8443))} in {env}",
        f"Deploy {svc} with `ops/deploy.sh --env {env}`",
        f"`{rng.choice(_FILES)}` holds `{svc}_handler()`",
        f"The {svc} API lives at https://{svc}.example.com/v{rng.randint(1, 3)}",
        f"Remind me on 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} to check the {svc} quota",
        f"TODO by 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}: rotate the {svc} keys",
        f"{svc} needs Python 3.{rng.randint(9, 12)} and node {rng.choice((16, 18, 20))}",
        f"Use {rng.choice(_FILES)} for the {svc} {env} settings",
        f"- [ ] review the {svc} retry budget of {rng.randint(1, 9)} attempts",
        f"> the {svc} cache TTL is {rng.choice((30, 60, 300))} seconds",
        f"Replies about {svc} should be terse and concise",
        f"Прод {svc} настроен на порт {rng.choice((80, 443))}",
    )
    return rng.choice(choices)


def _valued(count: int, seed: int) -> Store:
    """Notes with values, hosts, environments, paths, reminders and shared titles: every planner stage works."""
    rng = random.Random(seed)
    files: dict[str, bytes] = {}
    made: list[Memory] = []
    for i in range(count):
        kind = rng.choice(_TYPES)
        if made and rng.random() < 0.25:
            base = rng.choice(made)
            lines = base.body.split("\n")
            if rng.random() < 0.5:
                lines[rng.randrange(len(lines))] = _line(rng)
            body = "\n".join(lines)
            memory = Memory(name=base.name if rng.random() < 0.4 else f"{base.name} v{rng.randint(2, 3)}",
                            description=base.description if rng.random() < 0.5 else _line(rng), type=base.type,
                            visibility=base.visibility if rng.random() < 0.8 else rng.choice(("safe", "private")),
                            created=base.created, modified=rng.choice((base.modified, "2026-11-0"
                                                                       f"{rng.randint(1, 9)}T10:00:00Z")),
                            body=body)
            stem = base.name.replace(" ", "-").lower()
            file = f"{base.type}_{stem}-{rng.choice(('v2', 'new', 'copy', str(i)))}.md"
        else:
            subject = f"{rng.choice(_SERVICES)} {rng.choice(('port', 'deploy', 'retries', 'owner', 'runtime'))}"
            body = "\n".join(f"- {_line(rng)}" if rng.random() < 0.7 else _line(rng)
                             for _ in range(rng.choice((1, 1, 2, 3, 5, 8))))
            memory = Memory(name=subject, description=_line(rng), type=kind,
                            visibility="safe" if rng.random() < 0.5 else "private",
                            created=f"2026-{rng.randint(1, 9):02d}-{rng.randint(1, 28):02d}",
                            modified=f"2026-10-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                            expires="2026-03-01" if rng.random() < 0.03 else None, body=body)
            file = f"{kind}_{subject.replace(' ', '-')}-{i:05d}.md"
            made.append(memory)
        if file.lower() in {f.lower() for f in files}:
            file = file.removesuffix(".md") + f"-{i}.md"
        files[file] = render_memory(memory)
    repo = {path: f"def {svc}_handler():\n    pass\n" for path, svc in zip(_FILES[::2], _SERVICES, strict=False)}
    candidates: list[dict[str, Any]] = [{"body": _line(rng), "origin": "remember-line"} for _ in range(6)]
    candidates.append({"body": files[sorted(files)[0]].decode().split("---\n", 2)[2], "name": sorted(files)[0]})
    return Store(files, repo, candidates)


def _projects() -> dict[str, Callable[[], Store]]:
    import yaml
    from test_planner_support import DATA, store_of

    out: dict[str, Callable[[], Store]] = {}
    projects = [yaml.safe_load(p.read_text()) for p in sorted(DATA.glob("*.yaml"))]
    for project in projects:
        out[f"fixture-{project['id']}"] = (lambda p=project: Store(store_of(p), p.get("files", {})))
    out["fixture-all"] = lambda: Store({n: b for p in projects for n, b in store_of(p).items()})
    return out


def _evalset() -> Store:
    today, cases = load_cases()
    return Store({c.file: c.data for c in cases}, now=f"{today}T12:00:00Z")


def stores() -> dict[str, tuple[Callable[[], Store], bool]]:
    """Label → (store maker, whether it takes long enough to be a stress run: 2,000 memories and more)."""
    out: dict[str, tuple[Callable[[], Store], bool]] = {}
    for seed in (7, 11, 23):
        out[f"synthetic-200-seed{seed}"] = (lambda s=seed: _synthetic(200, s), False)
    out["synthetic-2000-seed7"] = (lambda: _synthetic(2000, 7), True)
    out["synthetic-20000-seed7"] = (lambda: _synthetic(20000, 7), True)
    for count, seed in ((300, 1), (300, 2), (3000, 3)):
        out[f"valued-{count}-seed{seed}"] = (lambda c=count, s=seed: _valued(c, s), count >= 2000)
    out["valued-20000-seed4"] = (lambda: _valued(20000, 4), True)
    out["evalset"] = (_evalset, False)
    for label, make in _projects().items():
        out[label] = (make, False)
    return out


def write_run(base: Path, store: Store) -> Path:
    """A read-only run directory as the launcher gives the planner: manifest, snapshot and the roots."""
    harness, public, run, project = base / "harness", base / "public", base / "run", base / "project"
    for d in (harness, public, run, project):
        d.mkdir(parents=True)
    for name, data in store.files.items():
        (harness / name).write_bytes(data)
    for name in store.mirror:
        (public / name).write_bytes(b"")
    for rel, text in store.repo.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    limits = {"maxFileBytes": 65536, "maxFiles": 100_000, "indexLines": 100_000, "indexBytes": 1 << 24,
              "maxPlanBytes": PLAN_BOUND, **store.limits}
    manifest = {"kind": "memory-consolidation-manifest", "schemaVersion": 1, "runId": "run-golden", **HEX,
                "selected": store.selected, "scope": "all", "createdAt": store.now, "limits": limits,
                "roots": {"harness": str(harness), "public": str(public), "project": str(project),
                          "runDir": str(run)}}
    (run / "manifest.json").write_bytes(dump_json(manifest))
    (run / "snapshot.json").write_bytes(dump_json({"kind": "memfold-context-snapshot",
                                                   "candidates": store.candidates}))
    for d in (harness, public, run):
        for f in d.iterdir():
            f.chmod(stat.S_IRUSR)
        d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return run


def digest(data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "lines": data.count(b"\n")}


def plan_bytes(base: Path, store: Store) -> bytes:
    return plan_run(write_run(base, store))


def _planned(make: Callable[[], Store]) -> tuple[bytes, float]:
    """The plan bytes of one store, planned in a scratch directory, and the seconds planning took."""
    import tempfile
    import time

    with tempfile.TemporaryDirectory() as tmp:
        store = make()
        start = time.perf_counter()
        data = plan_bytes(Path(tmp) / "w", store)
        took = time.perf_counter() - start
        for d in Path(tmp).rglob("*"):
            if d.is_dir():
                d.chmod(0o700)
    return data, took


def main(args: list[str]) -> int:
    if not args or args[0] not in ("--write", "--check"):
        raise SystemExit("usage: python tests/planner_golden.py --write|--check [--keep DIR] [LABEL...]")
    keep = Path(args[args.index("--keep") + 1]) if "--keep" in args else None
    labels = [a for i, a in enumerate(args[1:], 1) if a != "--keep" and args[i - 1] != "--keep"]
    record = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    bad = 0
    for label, (make, _) in stores().items():
        if labels and label not in labels:
            continue
        data, took = _planned(make)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{label}.json").write_bytes(data)
        if args[0] == "--write":
            record[label] = digest(data)
        same = digest(data) == record.get(label)
        bad += not same
        print(f"{label:28} {'same' if same else 'DIFFERS'} {took * 1000:9.1f} ms", flush=True)
    if args[0] == "--write":
        GOLDEN.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
