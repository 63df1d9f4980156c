"""The state cache: a write reads a bounded number of files, and nothing cached outlives a change."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Env

from pipeline.bench.synth import write_store
from pipeline.store.cachefile import MAGIC
from pipeline.store.statecache import FOLDER, NAME, StateCache, _load

# Counts every open of a file inside the store roots, then runs the real CLI in this interpreter.
_COUNT_OPENS = """
import atexit, os, sys
roots = tuple(os.path.realpath(p) + os.sep for p in sys.argv[1:3])
opened, listed = [], [0, 0]
def hook(event, args):
    if event in ("open", "os.scandir", "os.listdir") and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.realpath(os.fsdecode(args[0]))
        if event == "open" and path.startswith(roots):
            opened.append(path)
        elif event != "open":
            for i, root in enumerate(roots):
                listed[i] += (path + os.sep).startswith(root)
sys.addaudithook(hook)
atexit.register(lambda: sys.stderr.write(f"\\nOPENS {len(opened)} LISTS {listed[0]} {listed[1]}\\n"))
from pipeline.cli import run
sys.argv = ["memfold", *sys.argv[3:]]
run()
"""


def _settle() -> None:
    time.sleep(2.1)  # past the racy window, as for a store not written in the last two seconds


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _counted(home: Path, project: Path, harness: Path, mirror: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _COUNT_OPENS, str(harness), str(mirror), "--home", str(home), "--project",
         str(project), *args], capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def counting_opens(home: Path, project: Path, harness: Path, mirror: Path, *args: str) -> tuple[int, str]:
    """The real CLI in its own process: how many store files it opened, and what it printed."""
    proc = _counted(home, project, harness, mirror, *args)
    return int(proc.stderr.rsplit("OPENS ", 1)[1].split()[0]), proc.stdout


def listings(home: Path, project: Path, harness: Path, mirror: Path, *args: str) -> tuple[int, int, str]:
    """As ``counting_opens``: how many times the CLI listed a directory of each root, and its output."""
    proc = _counted(home, project, harness, mirror, *args)
    private, public = proc.stderr.rsplit("LISTS ", 1)[1].split()[:2]
    return int(private), int(public), proc.stdout


def _add_counting_opens(home: Path, project: Path, harness: Path, mirror: Path, name: str) -> int:
    return counting_opens(home, project, harness, mirror, "add", name, "-d", f"a note called {name} about the release",
                          "-b", f"{name} body")[0]


@pytest.mark.integration
def test_add_opens_as_many_store_files_at_ten_times_the_size(tmp_path: Path) -> None:
    stores = [write_store(tmp_path / f"s{n}", n) for n in (40, 400)]
    _settle()
    counts = []
    for store in stores:
        layout = store.layout
        assert layout.mirror is not None
        args = (store.home, store.project, layout.harness, layout.mirror)
        _add_counting_opens(*args, "project_first-probe")  # the first write after a copy enters every file
        _settle()
        counts.append(_add_counting_opens(*args, "project_second-probe"))
        assert (layout.harness / "project_second-probe.md").is_file()
    # What the second add opens: the files the first one wrote (still within the racy window, so
    # read again) and its own; not one of the hundreds of settled memories.
    assert counts[0] == counts[1], counts
    assert counts[1] <= 12, counts


@pytest.mark.integration
def test_show_lists_each_store_once_the_mirror_only_when_trusted_and_prints_its_bytes_after_a_hand_edit(
        tmp_path: Path) -> None:
    from pipeline.mirror.trust import set_trust

    store = write_store(tmp_path / "s", 60)
    layout = store.layout
    assert layout.mirror is not None
    args = (store.home, store.project, layout.harness, layout.mirror)
    name = sorted(p.name for p in layout.harness.glob("*.md") if p.name != "MEMORY.md")[0]
    private, public, out = listings(*args, "show", name)
    assert (private, public) == (1, 1)  # trusted: reads show the team's memories, so the mirror is listed once
    set_trust(store.home, layout.project_root, False)
    private, public, out = listings(*args, "show", name)
    assert (private, public) == (1, 0)  # untrusted: one scan of the private store; the mirror is never listed
    assert out.rstrip("\n") == (layout.harness / name).read_text().rstrip("\n")
    path = layout.harness / name
    edited = path.read_bytes().replace(b"\n---\n", b"\n---\nA line added by hand.\n", 1)
    assert edited != path.read_bytes()
    path.write_bytes(edited)
    assert "A line added by hand." in listings(*args, "show", name)[2]


def _stored(env: Env) -> StateCache:
    """The cache as the next process loads it from disk."""
    path = env.project_home / FOLDER / NAME
    return _load(str(path), tuple(path.stat()))


def _cache(env: Env) -> dict[str, dict[str, str]]:
    """The content hash entered for each file, by root."""
    return _stored(env).digests


def _newest_receipt(env: Env) -> dict[str, dict[str, dict[str, str]]]:
    receipt: dict[str, dict[str, dict[str, str]]] = json.loads(
        max((env.project_home / "receipts").iterdir()).read_bytes())
    return receipt


def _seed(env: Env) -> None:
    assert env.spawn("add", "project_alpha", "-d", "alpha deploys use the blue green script", "-b", "alpha").code == 0
    assert env.spawn("add", "project_beta", "-d", "beta runs the smoke tests first", "--visibility", "safe",
                     "-b", "beta").code == 0
    _settle()
    assert env.spawn("add", "project_gamma", "-d", "gamma tags after review", "-b", "gamma").code == 0
    harness = _cache(env)[str(env.harness)]
    assert harness["project_alpha.md"] == _sha(env.harness / "project_alpha.md")


@pytest.mark.integration
def test_a_hand_edit_of_the_same_size_is_read_again_not_served_from_the_cache(env: Env) -> None:
    _seed(env)
    path = env.harness / "project_alpha.md"
    before = path.stat()
    edited = path.read_bytes().replace(b"alpha deploys use", b"ALPHA DEPLOYS USE")
    assert len(edited) == before.st_size
    with open(path, "r+b") as fh:  # in place: same inode, same size
        fh.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # even the old mtime: ctime still moves
    assert env.spawn("add", "project_delta", "-d", "delta waits for the window", "-b", "delta").code == 0
    receipt = _newest_receipt(env)
    assert receipt["sourceHashes"]["harness"]["project_alpha.md"] == hashlib.sha256(edited).hexdigest()
    assert path.read_bytes() == edited
    index = (env.harness / "MEMORY.md").read_text(encoding="utf-8")
    assert "ALPHA DEPLOYS USE the blue green script" in index and "alpha deploys use" not in index


@pytest.mark.integration
def test_a_forgotten_memory_leaves_the_cache_and_a_new_file_of_that_name_is_read(env: Env) -> None:
    _seed(env)
    assert env.spawn("forget", "project_beta").code == 0
    for root in (env.harness, env.mirror):
        assert "project_beta.md" not in _cache(env).get(str(root), {})
        assert not (root / "project_beta.md").exists()
    assert "project_beta.md" not in _newest_receipt(env)["finalHashes"]["harness"]
    fresh = b"---\nname: project_beta\ndescription: beta is back with new words\ntype: project\n---\nnew\n"
    (env.harness / "project_beta.md").write_bytes(fresh)
    assert env.spawn("add", "project_delta", "-d", "delta waits for the window", "-b", "delta").code == 0
    receipt = _newest_receipt(env)
    assert receipt["sourceHashes"]["harness"]["project_beta.md"] == hashlib.sha256(fresh).hexdigest()
    index = (env.harness / "MEMORY.md").read_text(encoding="utf-8")
    assert "beta is back with new words" in index and "beta runs the smoke tests" not in index


@pytest.mark.integration
def test_after_a_crash_and_recovery_the_rolled_forward_bytes_are_read(env: Env) -> None:
    _seed(env)
    old = _sha(env.harness / "project_alpha.md")
    assert _cache(env)[str(env.harness)]["project_alpha.md"] == old
    from pipeline.apply import journal

    def crash(*_args: object) -> None:
        raise KeyboardInterrupt  # a crash right after the commit point

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "roll_forward", crash)
        assert env.run("update", "project_alpha", "-d", "alpha now deploys through the canary").code == 130
    assert _sha(env.harness / "project_alpha.md") == old  # not rolled forward yet
    assert env.spawn("recover").code == 0
    rolled = _sha(env.harness / "project_alpha.md")
    assert rolled != old
    assert env.spawn("add", "project_epsilon", "-d", "epsilon watches the queue", "-b", "epsilon").code == 0
    receipt = _newest_receipt(env)
    assert receipt["sourceHashes"]["harness"]["project_alpha.md"] == rolled
    assert receipt["finalHashes"]["harness"]["project_alpha.md"] == rolled
    index = (env.harness / "MEMORY.md").read_text(encoding="utf-8")
    assert "alpha now deploys through the canary" in index


def test_a_torn_or_foreign_cache_file_is_ignored_and_rewritten(env: Env) -> None:
    assert env.run("add", "project_alpha", "-d", "alpha deploys use the blue green script", "-b", "a").code == 0
    cache = env.project_home / FOLDER / NAME
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(b'{"version": 1, "roots": {"x": [1, 2')
    from pipeline.store.statecache import cache_for

    assert cache_for(env.project_home).roots == {}
    assert env.spawn("add", "project_beta", "-d", "beta runs the smoke tests first", "-b", "b").code == 0
    assert cache.read_bytes().startswith(MAGIC)
    assert (env.harness / "project_beta.md").is_file()


@pytest.mark.integration
def test_a_near_duplicate_is_refused_from_the_folded_keys_another_process_kept(env: Env) -> None:
    _seed(env)
    stored = _stored(env)
    digest = _sha(env.harness / "project_beta.md")
    assert stored.folded["project_beta.md"] == digest
    assert f" project_beta.md {digest}\n" in stored.fold_text
    assert sum(line.endswith(f" project_beta.md {digest}") for line in stored.fold_text.split("\n")) == 3
    result = env.spawn("add", "project_beta_again", "-d", "Beta runs the SMOKE tests first.", "-b", "other words")
    assert result.code == 1 and "memory.near-duplicate" in result.err and "project_beta.md" in result.err
    assert not (env.harness / "project_beta_again.md").exists()


def test_a_flushed_cache_holds_each_name_and_hash_once_and_loads_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / FOLDER / NAME
    cache = StateCache(str(path))
    names = [f"project_n{i}.md" for i in range(40)]
    shas = [hashlib.sha256(name.encode()).hexdigest() for name in names]
    for root in ("/store/memory", "/project/.memory"):
        for i, (name, sha) in enumerate(zip(names, shas, strict=True)):
            # Equal strings as distinct objects, as a process builds them table by table.
            cache.roots.setdefault(root, {})["".join(name)] = (1, 1000 + i, 10, 2, 3)
            cache.digests.setdefault(root, {})["".join(name)] = "".join(sha)
    for name, sha in zip(names, shas, strict=True):
        cache.memory["".join(name)] = ("".join(sha), "N", "a description", "project", "private", None, None, None, 40)
        cache.folded["".join(name)] = "".join(sha)
    cache.clean["scope"] = {"".join(name): "".join(sha) for name, sha in zip(names, shas, strict=True)}
    cache.seen.update(shas)
    cache.dirty = True
    cache.flush()
    loaded = _load(str(path), (0,))
    assert loaded.roots == cache.roots and loaded.digests == cache.digests and loaded.memory == cache.memory
    assert loaded.folded == cache.folded and loaded.clean == cache.clean
    one, other = loaded.digests["/store/memory"], loaded.digests["/project/.memory"]
    for name in names:
        # One object per name and per hash across every table of the loaded cache.
        keys = [next(k for k in table if k == name) for table in (one, other, loaded.memory, loaded.folded,
                                                                 loaded.roots["/store/memory"], loaded.clean["scope"])]
        assert all(key is keys[0] for key in keys)
        assert one[name] is other[name] is loaded.memory[name][0] is loaded.folded[name] is loaded.clean["scope"][name]
