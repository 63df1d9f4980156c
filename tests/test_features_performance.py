"""Step definitions for features/performance.feature (shared steps live in conftest.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from conftest import Env
from pytest_bdd import given, parsers, scenarios, then, when
from test_statecache import _add_counting_opens, _newest_receipt, _seed, _settle, counting_opens, listings

from pipeline.bench.synth import write_store

scenarios("performance.feature")


@given(parsers.parse("settled synthetic stores of {small:d} and {large:d} memories"))
def settled_stores(ctx: dict[str, Any], tmp_path: Path, small: int, large: int) -> None:
    ctx["stores"] = [write_store(tmp_path / f"s{n}", n) for n in (small, large)]
    _settle()


@when("I add two memories to each store, each add in its own process")
def add_twice(ctx: dict[str, Any]) -> None:
    counts = []
    for store in ctx["stores"]:
        args = (store.home, store.project, store.layout.harness, store.layout.mirror)
        _add_counting_opens(*args, "project_first-probe")
        _settle()
        counts.append(_add_counting_opens(*args, "project_second-probe"))
        assert (store.layout.harness / "project_second-probe.md").is_file()
    ctx["counts"] = counts


@then(parsers.parse("the second add opened the same number of store files in both stores, at most {most:d}"))
def same_opens(ctx: dict[str, Any], most: int) -> None:
    small, large = ctx["counts"]
    assert small == large <= most, ctx["counts"]


@when("I list each store twice, each list in its own process")
def list_twice(ctx: dict[str, Any]) -> None:
    ctx["lists"] = []
    for store in ctx["stores"]:
        args = (store.home, store.project, store.layout.harness, store.layout.mirror)
        first = counting_opens(*args, "list")
        assert first[0] >= store.count, first[0]  # a copied store: every memory is read once
        ctx["lists"].append((first, counting_opens(*args, "list")))


@then("the second list opened no store file in either store, and both listings are the same")
def second_list_opens_nothing(ctx: dict[str, Any]) -> None:
    for store, (first, second) in zip(ctx["stores"], ctx["lists"], strict=True):
        assert second[0] == 0, second[0]
        assert first[1] == second[1] and len(second[1].splitlines()) == store.count


@when("I show the first memory of each store in its own process")
def show_first(ctx: dict[str, Any]) -> None:
    ctx["shows"] = []
    for store in ctx["stores"]:
        args = (store.home, store.project, store.layout.harness, store.layout.mirror)
        name = sorted(p.name for p in store.layout.harness.glob("*.md") if p.name != "MEMORY.md")[0]
        opened, out = counting_opens(*args, "show", name)
        private, public, again = listings(*args, "show", name)
        assert again == out
        ctx["shows"].append((store, name, opened, private, public, out))


@then("each show opened at most one store file, listed the private store once and the mirror at most once")
def show_bounded(ctx: dict[str, Any]) -> None:
    # In a trusted project a read shows the team's memories too: it lists the mirror, and opens none of its
    # files while the mirror holds exactly the store's safe memories.
    for _store, _name, opened, private, public, _out in ctx["shows"]:
        assert opened <= 1 and private == 1 and public <= 1, (opened, private, public)


@then("each show printed the bytes of that memory's file")
def show_bytes(ctx: dict[str, Any]) -> None:
    for store, name, _opened, _private, _public, out in ctx["shows"]:
        assert out.rstrip("\n") == (store.layout.harness / name).read_text().rstrip("\n")


@when("I list the memories in a new process")
def list_in_process(env: Env, ctx: dict[str, Any]) -> None:
    result = env.spawn("list")
    assert result.code == 0, result.err
    ctx["listing"] = result.out


@then(parsers.parse('the listing shows "{text}"'))
def listing_shows(ctx: dict[str, Any], text: str) -> None:
    assert text in ctx["listing"], ctx["listing"]
    assert text.lower() not in ctx["listing"]


@given("three settled memories written by separate processes")
def three_memories(env: Env) -> None:
    _seed(env)


@when(parsers.parse('I rewrite "{name}" in place to say "{words}", keeping its size and mtime'))
def rewrite_in_place(env: Env, ctx: dict[str, Any], name: str, words: str) -> None:
    path = env.harness / name
    before = path.stat()
    data = path.read_bytes()
    edited = data.replace(words.lower().encode(), words.encode())
    assert edited != data and len(edited) == len(data)
    with open(path, "r+b") as fh:
        fh.write(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_ino == before.st_ino and path.stat().st_mtime_ns == before.st_mtime_ns
    ctx["edited"] = (name, hashlib.sha256(edited).hexdigest())


@when(parsers.parse('I add "{name}" in a new process'))
def add_in_process(env: Env, name: str) -> None:
    result = env.spawn("add", name, "-d", f"{name} waits for the window", "-b", name)
    assert result.code == 0, result.err


@then(parsers.parse("the newest receipt's source hash of \"{name}\" is the hash of the edited bytes"))
def receipt_has_edit(env: Env, ctx: dict[str, Any], name: str) -> None:
    assert ctx["edited"][0] == name
    assert _newest_receipt(env)["sourceHashes"]["harness"][name] == ctx["edited"][1]
    assert hashlib.sha256((env.harness / name).read_bytes()).hexdigest() == ctx["edited"][1]


@then(parsers.parse('the private index shows "{text}"'))
def index_shows(env: Env, text: str) -> None:
    assert text in (env.harness / "MEMORY.md").read_text(encoding="utf-8")


def _newest_run(env: Env) -> Path:
    """The run of the newest receipt (run ids made within one second do not sort by time)."""
    run_id = json.loads(max((env.project_home / "receipts").iterdir()).read_bytes())["runId"]
    return env.project_home / "runs" / str(run_id)


@then("each document of the newest run is the stable JSON form of its own content")
def documents_exact(env: Env) -> None:
    run = _newest_run(env)
    names = ("snapshot.json", "manifest.json", "pre-receipt.json", "post-receipt.json")
    for name in names:
        data = (run / name).read_bytes()
        stable = json.dumps(json.loads(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        assert data == stable.encode("utf-8"), name
    post = json.loads((run / "post-receipt.json").read_bytes())
    for name in ("snapshot.json", "manifest.json", "pre-receipt.json"):
        assert json.loads((run / name).read_bytes())["sourceHashes"] == post["sourceHashes"], name
    assert json.loads((run / "pre-receipt.json").read_bytes())["finalHashes"] == post["finalHashes"]
    assert "project_epsilon.md" in post["finalHashes"]["harness"]
    assert "project_epsilon.md" not in post["sourceHashes"]["harness"]


@then("the receipt log holds the same bytes as the newest run's post receipt")
def log_matches_run(env: Env) -> None:
    run = _newest_run(env)
    logged = max((env.project_home / "receipts").iterdir())
    assert logged.name.endswith(f"-{run.name}.json")
    assert logged.read_bytes() == (run / "post-receipt.json").read_bytes()


@then("the newest receipt's previous is the RFC 8785 digest of the receipt before it")
def previous_is_digest(env: Env) -> None:
    import rfc8785

    *_, before, newest = sorted((env.project_home / "receipts").iterdir())
    expected = hashlib.sha256(rfc8785.dumps(json.loads(before.read_bytes()))).hexdigest()
    assert json.loads(newest.read_bytes())["previous"] == expected


@then("the newest receipt's final hashes are the hashes of the files on disk")
def final_hashes_on_disk(env: Env) -> None:
    final = _newest_receipt(env)["finalHashes"]
    for root, folder in (("harness", env.harness), ("public", env.project / ".memory")):
        on_disk = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()
                   if p.name == "MEMORY.md" or (p.name.endswith(".md") and not p.name.startswith("."))}
        assert final[root] == on_disk, root


@then("memfold verify and memfold audit exit 0")
def verify_and_audit(env: Env) -> None:
    for command in ("verify", "audit"):
        result = env.spawn(command)
        assert result.code == 0, (command, result.out, result.err)


@when(parsers.parse('I rewrite "{name}" by hand to describe "{words}"'))
def rewrite_description(env: Env, name: str, words: str) -> None:
    from pipeline.store.memory import parse_memory, render_memory

    path = env.harness / name
    memory = parse_memory(path.read_bytes(), name)
    path.write_bytes(render_memory(memory.with_changes(description=words)))
    assert words in path.read_text(encoding="utf-8")


@then(parsers.parse('adding "{name}" described as "{words}" in a new process succeeds'))
def add_described(env: Env, name: str, words: str) -> None:
    result = env.spawn("add", name, "-d", words, "-b", f"{name} body")
    assert result.code == 0, result.err
    assert (env.harness / f"{name}.md").is_file()


@then(parsers.parse('adding "{name}" described as "{words}" in a new process is refused as a near-duplicate '
                    'of "{twin}"'))
def add_refused(env: Env, name: str, words: str, twin: str) -> None:
    result = env.spawn("add", name, "-d", words, "-b", f"{name} body")
    assert result.code == 1 and "memory.near-duplicate" in result.err and f"{twin} (same description)" in result.err
    assert not (env.harness / f"{name}.md").exists()
