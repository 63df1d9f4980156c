"""How well evidence marks memories that went stale: a labelled set of memories about a public repository,
written at one commit and checked at a later one, through the real commands.

``python -m pipeline.bench.evidence --repo GIT_DIR [--set FILE] [--json]``: ``GIT_DIR`` is a clone (or
mirror) of the set's repository holding both commits. Each memory is added at the first commit (with
``--cite`` as written in the set, and again with no ``--cite``, where only the tracked files its text
names are cited); the work tree then moves to the second commit, and ``memfold status`` says which
memories drifted. Recall is the share of memories whose fact no longer holds that are marked; a false
alarm is a marked memory whose fact still holds.

``--mentions MIRRORS --corpus FILE`` measures the citing of paths a text names on real agent files: each
text of the corpus (``source`` is ``owner/name@commit:path``) against the tracked files of its own
repository at that commit, from a folder of ``<owner>+<name>/repo`` git directories.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

SET = Path(__file__).resolve().parents[2] / "tests" / "data" / "evidence" / "requests.json"


def _git(where: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    return subprocess.run(("git", "-c", "core.hooksPath=" + os.devnull, "-C", str(where), *args), check=True,
                          capture_output=True, text=True, env=env).stdout


def _cli(home: Path, project: Path, *args: str) -> tuple[int, str, str]:
    """One ``memfold`` command in its own process, as a user runs it."""
    proc = subprocess.run((sys.executable, "-m", "pipeline", "--home", str(home), "--project", str(project), *args),
                          capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def evaluate(repo: Path, labelled: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Both variants (cited lines, named paths only) of the labelled set, through the CLI."""
    work = workdir / "work"
    _git(workdir, "clone", "-q", "--no-checkout", "--shared", str(repo), str(work))
    _git(work, "checkout", "-q", "--detach", labelled["written_at"]["commit"])
    homes = {"cited": workdir / "home-cited", "named": workdir / "home-named"}
    for variant, home in homes.items():
        for memory in labelled["memories"]:
            args = ["add", memory["name"], "-d", memory["description"], "-b", memory["body"]]
            if variant == "cited":
                args += ["--cite", memory["cite"]]
            code, _, err = _cli(home, work, *args)
            if code != 0:
                raise RuntimeError(f"{memory['name']}: {err.strip()}")
    detected = _detected(homes["named"], work, labelled)
    _git(work, "checkout", "-q", "--detach", labelled["checked_at"]["commit"])
    out: dict[str, Any] = {"repository": labelled["repository"], "from": labelled["written_at"],
                           "to": labelled["checked_at"], "memories": len(labelled["memories"]),
                           "stale": sum(1 for m in labelled["memories"] if not m["holds"])}
    for variant, home in homes.items():
        code, text, err = _cli(home, work, "status", "--json")
        if code != 0:
            raise RuntimeError(err)
        drifted = {d["file"].removesuffix(".md"): d for d in json.loads(text)["drifted"]}
        block = _cli(home, work, "inject", "--max-bytes", "200000", "--max-files", "1")[1]
        out[variant] = _score(labelled["memories"], drifted, block)
    out["named"]["detected"] = detected
    return out


def _detected(home: Path, project: Path, labelled: dict[str, Any]) -> dict[str, Any]:
    """The paths cited from the memories' text alone, and whether each is the file the fact rests on."""
    from ..evidence.cite import parse_spec
    from ..store.memory import parse_memory

    store = next((home / "projects").iterdir()) / "memory"
    rows = []
    for memory in labelled["memories"]:
        cites = parse_memory((store / f"{memory['name']}.md").read_bytes()).evidence
        wanted = parse_spec(memory["cite"])[0]
        rows += [{"memory": memory["name"], "path": c.path, "right": c.path == wanted} for c in cites]
    return {"paths": len(rows), "right": sum(r["right"] for r in rows),
            "memoriesWithNone": sum(1 for m in labelled["memories"] if not any(r["memory"] == m["name"] for r in rows)),
            "wrong": [r for r in rows if not r["right"]]}


def _score(memories: list[dict[str, Any]], drifted: dict[str, Any], block: str) -> dict[str, Any]:
    stale = [m["name"] for m in memories if not m["holds"]]
    marked = sorted(drifted)
    in_block = sorted(m["name"] for m in memories if _marked_in(block, m["name"]))
    statuses = Counter(e["status"] for d in drifted.values() for e in d["evidence"] if e["status"] != "holds")
    return {"marked": len(marked), "staleMarked": len(set(stale) & set(marked)),
            "recall": round(len(set(stale) & set(marked)) / len(stale), 3) if stale else None,
            "falseAlarms": sorted(set(marked) - set(stale)), "missed": sorted(set(stale) - set(marked)),
            "statuses": dict(statuses), "blockAgrees": in_block == marked}


def _marked_in(block: str, name: str) -> bool:
    line = next((ln for ln in block.splitlines() if ln.startswith(f"- {name}.md ")), "")
    return "[code changed since" in line or "[cited file is gone" in line or "[cited file moved" in line


def mentions(mirrors: Path, corpus: Path) -> dict[str, Any]:
    """Paths named by real agent texts, cited against the tracked files of each text's own repository."""
    from ..planner.grounding import extract
    from ..store.memory import Memory

    trees: dict[str, set[str] | None] = {}
    texts = tokens = cited = 0
    examples: list[dict[str, str]] = []
    names: Counter[str] = Counter()
    for line in corpus.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        source = str(row.get("source", ""))
        repo, _, rest = source.partition("@")
        commit, _, _ = rest.partition(":")
        if not commit or "/" not in repo:
            continue
        if source.split(":")[0] not in trees:
            trees[source.split(":")[0]] = _tree(mirrors / repo.replace("/", "+", 1) / "repo", commit)
        tree = trees[source.split(":")[0]]
        if tree is None:
            continue
        texts += 1
        paths = extract(Memory("m", "-", body=str(row["text"]))).paths
        tokens += len(paths)
        for path in paths:
            if path in tree:
                cited += 1
                names[path.rsplit("/", 1)[-1]] += 1
                examples.append({"source": source, "path": path, "text": str(row["text"])[:300]})
    return {"texts": texts, "repositories": sum(1 for t in trees.values() if t is not None), "pathTokens": tokens,
            "cited": cited, "notTracked": tokens - cited, "commonNames": names.most_common(10),
            "examples": examples}


def _tree(git_dir: Path, commit: str) -> set[str] | None:
    if not git_dir.exists():
        return None
    try:
        listed = _git(git_dir, "ls-tree", "-r", "--name-only", "-z", commit)
    except subprocess.CalledProcessError:
        return None
    return {p for p in listed.split("\0") if p}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.bench.evidence", description=__doc__.split("\n")[0])
    parser.add_argument("--repo", type=Path, help="a git directory holding both commits of the set")
    parser.add_argument("--set", type=Path, default=SET, help="the labelled set (JSON)")
    parser.add_argument("--mentions", type=Path, help="a folder of <owner>+<name>/repo git directories")
    parser.add_argument("--corpus", type=Path, help="JSONL texts with source owner/name@commit:path")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {}
    if args.repo is not None:
        labelled = json.loads(args.set.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory(prefix="memfold-evidence-eval-") as tmp:
            result["labelled"] = evaluate(args.repo, labelled, Path(tmp))
    if args.mentions is not None and args.corpus is not None:
        result["mentions"] = mentions(args.mentions, args.corpus)
    sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + "\n" if args.json else _table(result))
    return 0


def _table(result: dict[str, Any]) -> str:
    lines = []
    labelled = result.get("labelled")
    if labelled:
        lines.append(f"{labelled['repository']} {labelled['from']['tag']} -> {labelled['to']['tag']}: "
                     f"{labelled['memories']} memories, {labelled['stale']} no longer hold")
        for variant in ("cited", "named"):
            s = labelled[variant]
            lines.append(f"  {variant:<6} marked {s['marked']:>3}  stale marked "
                         f"{s['staleMarked']:>3}/{labelled['stale']} (recall {s['recall']})  "
                         f"false alarms {len(s['falseAlarms'])}  statuses {s['statuses']}")
            lines.append(f"         missed: {', '.join(s['missed']) or '-'}")
            lines.append(f"         false alarms: {', '.join(s['falseAlarms']) or '-'}")
        d = labelled["named"]["detected"]
        lines.append(f"  named paths cited {d['paths']}, the file the fact rests on {d['right']}, "
                     f"memories with none {d['memoriesWithNone']}")
    found = result.get("mentions")
    if found:
        lines.append(f"mentions: {found['texts']} texts of {found['repositories']} repositories, "
                     f"{found['pathTokens']} path-shaped names, {found['cited']} tracked (cited), "
                     f"{found['notTracked']} not tracked; commonest cited: {found['commonNames']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
