"""Writing the search index after a commit: only the changed rows, or the whole post-state from memory."""

from __future__ import annotations

import _sqlite3 as sqlite3
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import Env
from test_searchcache import rewrite_in_place

from pipeline.store.searchdb import cache_file


def _add(env: Env, name: str, description: str, body: str) -> None:
    assert env.run("add", name, "-d", description, "-b", body).code == 0


def _index(env: Env) -> Path:
    return Path(cache_file(str(env.project_home), "memory"))


def _rows(env: Env) -> dict[str, tuple[int, str, str | None, int]]:
    conn = sqlite3.connect(str(_index(env)))
    try:
        return {file: (rowid, sha, st, racy) for rowid, file, sha, st, racy in
                conn.execute("SELECT id, file, sha, st, racy FROM docs")}
    finally:
        conn.close()


def _prompt(env: Env, prompt: str) -> str:
    result = env.run("inject", "--prompt", prompt)
    assert result.code == 0, result
    return result.out


def test_a_commit_changes_only_the_rows_of_the_files_it_changed(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    before = _rows(env)
    inode = _index(env).stat().st_ino
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")
    after = _rows(env)
    # Updated in place: the same file, the untouched rows exactly as they were, one new row.
    assert _index(env).stat().st_ino == inode
    assert {f: after[f] for f in before} == before
    assert set(after) - set(before) == {"project_gamma.md"}
    assert "GAMMA-BODY" in _prompt(env, "gamma red script")


def _offsets(env: Env, table: str) -> set[tuple[str, int | None]]:
    """(field, offset) of every token instance the FTS5 table holds, read through ``fts5vocab``."""
    conn = sqlite3.connect(str(_index(env)))
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.vocab_{table} USING fts5vocab(main, {table}, instance)")
        return set(conn.execute(f"SELECT col, offset FROM temp.vocab_{table}"))
    finally:
        conn.close()


def test_the_trigram_index_keeps_which_fields_hold_a_gram_not_where(env: Env) -> None:
    """Trigrams are looked up one by one, never as a phrase: their positions were a quarter of a large
    index and rewritten for every row a commit changed. The word index keeps them (its phrases need them)."""
    _add(env, "project_deploy", "deployments go through the blue script", "Run it from the release branch.")
    grams = _offsets(env, "grams")
    assert {col for col, _ in grams} == {"name", "description", "body"}
    assert {offset for _, offset in grams} == {None}
    assert None not in {offset for _, offset in _offsets(env, "words")}
    # A typo and a fragment are still found through the trigrams, the name ranked by its weight.
    for query in ("deplyoments", "ploym"):
        result = env.run("search", query)
        assert result.code == 0, result
        assert "project_deploy.md" in result.out


def test_an_index_of_the_previous_format_is_written_anew_before_it_is_read(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    conn = sqlite3.connect(str(_index(env)))
    with conn:
        conn.execute("UPDATE meta SET value = 'memfold-search-5' WHERE key = 'format'")
        conn.execute("DROP TABLE grams")
        conn.execute("CREATE VIRTUAL TABLE grams USING fts5(name, description, body, tokenize='trigram')")
    conn.close()
    assert "ALPHA-BODY" in _prompt(env, "alpha blue script")
    conn = sqlite3.connect(str(_index(env)))
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone() == ("memfold-search-7",)
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'grams'").fetchone()[0]
    finally:
        conn.close()
    assert "detail=column" in sql
    assert {offset for _, offset in _offsets(env, "grams")} == {None}


def test_the_index_keeps_its_rollback_journal_between_commits(env: Env) -> None:
    """Each refresh used to create and delete ``memory.sqlite-journal``; it now stays, its header zeroed
    (nothing to roll back), so a commit frees no inode for it."""
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    journal = Path(f"{_index(env)}-journal")
    inode = journal.stat().st_ino
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")
    assert journal.stat().st_ino == inode
    assert journal.read_bytes()[:28].strip(b"\0") == b""  # not a hot journal
    assert set(_rows(env)) == {"project_alpha.md", "project_beta.md", "project_gamma.md"}
    assert "GAMMA-BODY" in _prompt(env, "gamma red script")


def test_a_store_without_an_index_gets_one_written_from_the_commit_not_read_back(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    rows = _rows(env)
    assert set(rows) == {"project_alpha.md", "project_beta.md"}
    # No stat recorded: each row's file is hashed once before it is first served.
    assert all(st is None and racy == 1 for _, _, st, racy in rows.values())
    from pipeline.fsutil import sha256_bytes

    for file, (_, sha, _, _) in rows.items():
        assert sha == sha256_bytes((env.harness / file).read_bytes())


def test_a_hand_edit_right_after_the_commit_is_never_served_from_the_written_index(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    _add(env, "project_beta", "beta deploys use the green script", "OLD-BETA-WORD")
    path = env.harness / "project_beta.md"
    rewrite_in_place(path, b"OLD-BETA-WORD", b"NEW-BETA-WORD")
    out = _prompt(env, "beta green script")
    assert "NEW-BETA-WORD" in out and "OLD-BETA-WORD" not in out


def test_an_index_left_behind_by_a_crash_before_its_refresh_never_serves_a_forgotten_memory(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    assert "ALPHA-BODY" in _prompt(env, "alpha blue script")
    kept = env.project_home / "kept.sqlite"
    shutil.copy2(_index(env), kept)
    assert env.run("forget", "project_alpha").code == 0
    # As if the process died after the commit point and before the index was refreshed.
    os.replace(kept, _index(env))
    assert "ALPHA-BODY" not in _prompt(env, "alpha blue script")
    assert "ALPHA-BODY" not in env.run("inject").out
    assert "project_alpha.md" not in _rows(env)


def test_an_index_that_missed_a_hand_edit_before_the_transaction_is_written_anew(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    (env.harness / "project_hand.md").write_text("---\ndescription: hand notes on deploys\n---\nHAND-BODY\n")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    assert set(_rows(env)) == {"project_alpha.md", "project_beta.md", "project_hand.md"}
    assert "HAND-BODY" in _prompt(env, "hand notes deploys")


BROKEN = b"---\nname: project_broken\n  bad: [\n---\nREDIS-PORT-WORD\n"
FIXED = (b"---\nname: project_broken\ndescription: where redis listens\ntype: project\nvisibility: private\n"
         b"created: 2026-11-01\nmodified: 2026-11-01T00:00:00Z\n---\nREDIS-PORT-WORD is 6380.\n")


def _skipped(env: Env) -> dict[str, tuple[str, str | None, int]]:
    conn = sqlite3.connect(str(_index(env)))
    try:
        return {file: (sha, st, racy) for file, sha, st, racy in conn.execute("SELECT file, sha, st, racy FROM skipped")}
    finally:
        conn.close()


def test_a_file_that_does_not_parse_does_not_make_every_commit_rewrite_the_index(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    (env.harness / "project_broken.md").write_bytes(BROKEN)
    assert "ALPHA-BODY" in _prompt(env, "alpha blue script")  # the reader rescans: the directory changed
    from pipeline.fsutil import sha256_bytes

    assert _skipped(env)["project_broken.md"][0] == sha256_bytes(BROKEN)
    inode = _index(env).stat().st_ino
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")
    # Updated in place by both commits, the broken file still named, never indexed.
    assert _index(env).stat().st_ino == inode
    assert set(_rows(env)) == {"project_alpha.md", "project_beta.md", "project_gamma.md"}
    assert set(_skipped(env)) == {"project_broken.md"}
    assert "GAMMA-BODY" in _prompt(env, "gamma red script")


def test_a_broken_file_fixed_in_place_is_indexed_and_served(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    path = env.harness / "project_broken.md"
    path.write_bytes(BROKEN)
    assert "REDIS-PORT-WORD" not in _prompt(env, "where redis listens")
    directory = os.stat(env.harness)
    # Rewritten in place: the directory's stat does not change, only the file's.
    with open(path, "r+b") as fh:
        fh.write(FIXED)
        fh.truncate()
    assert os.stat(env.harness).st_mtime_ns == directory.st_mtime_ns
    assert "REDIS-PORT-WORD is 6380" in _prompt(env, "where redis listens")
    assert _skipped(env) == {} and "project_broken.md" in _rows(env)
    result = env.run("inject")
    assert result.code == 0 and "do not parse" not in result.err


def _open_index(env: Env) -> None:
    from pipeline.store.searchcache import Index

    Index.open(str(env.harness), str(_index(env)), 1 << 20, 10_000).close()


def _record_stat(env: Env, path: Path, racy: int) -> None:
    """Make the skipped entry's recorded stat the file's current one, as a write in the same clock
    tick as the scan leaves it (a test cannot keep a ctime)."""
    from pipeline.store.searchdb import stat_key

    conn = sqlite3.connect(str(_index(env)))
    with conn:
        conn.execute("UPDATE skipped SET st = ?, racy = ? WHERE file = ?", (stat_key(os.stat(path)), racy, path.name))
    conn.close()


def test_a_broken_file_recorded_within_the_racy_window_is_checked_by_its_bytes(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    path = env.harness / "project_broken.md"
    path.write_bytes(BROKEN)
    _open_index(env)
    assert _skipped(env)["project_broken.md"][2] == 1  # just written: racy when scanned
    # Same bytes, stat as recorded: kept, and settled once outside the racy window.
    inode = _index(env).stat().st_ino
    _record_stat(env, path, 1)
    os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns - 5_000_000_000))
    _record_stat(env, path, 1)
    time.sleep(2.1)
    _open_index(env)
    assert _index(env).stat().st_ino == inode and _skipped(env)["project_broken.md"][2] == 0
    # Other bytes behind a stat that still matches a racy record: the hash tells, the file is scanned.
    path.write_bytes(FIXED)
    _record_stat(env, path, 1)
    _open_index(env)
    assert _skipped(env) == {} and "project_broken.md" in _rows(env)


def _meta(env: Env, key: str) -> str | None:
    conn = sqlite3.connect(str(_index(env)))
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])
    finally:
        conn.close()


def _set_meta(env: Env, key: str, value: str) -> None:
    conn = sqlite3.connect(str(_index(env)))
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
        conn.commit()
    finally:
        conn.close()


def _on_disk(env: Env) -> dict[str, str]:
    from pipeline.fsutil import sha256_bytes

    return {p.name: sha256_bytes(p.read_bytes()) for p in env.harness.iterdir() if p.name.endswith(".md")}


def _memories(env: Env) -> dict[str, str]:
    return {name: sha for name, sha in _on_disk(env).items() if name != "MEMORY.md"}


def _digest(files: dict[str, str]) -> str:
    import hashlib

    return hashlib.sha256("\0".join(f"{name}/{sha}" for name, sha in sorted(files.items())).encode()).hexdigest()


def test_each_commit_records_the_digest_of_the_files_its_index_describes(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")  # written anew
    assert _meta(env, "state") == _digest(_on_disk(env))
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")  # updated in place
    assert _meta(env, "state") == _digest(_on_disk(env))
    assert {f: sha for f, (_, sha, _, _) in _rows(env).items()} == _memories(env)


def test_an_index_whose_digest_does_not_vouch_for_the_pre_state_has_its_rows_compared(env: Env) -> None:
    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    # A digest that says nothing (as from an older writer): the rows still match, so it is updated in place.
    _set_meta(env, "state", "0" * 64)
    inode = _index(env).stat().st_ino
    _add(env, "project_gamma", "gamma deploys use the red script", "GAMMA-BODY")
    assert _index(env).stat().st_ino == inode
    assert {f: sha for f, (_, sha, _, _) in _rows(env).items()} == _memories(env)
    # Rows that no longer describe the files under a digest that does not either: written anew.
    conn = sqlite3.connect(str(_index(env)))
    conn.execute("DELETE FROM docs WHERE file = 'project_alpha.md'")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'state'", ("1" * 64,))
    conn.commit()
    conn.close()
    _add(env, "project_delta", "delta deploys use the grey script", "DELTA-BODY")
    assert _index(env).stat().st_ino != inode
    assert {f: sha for f, (_, sha, _, _) in _rows(env).items()} == _memories(env)
    assert "ALPHA-BODY" in _prompt(env, "alpha blue script")


def test_rows_written_before_the_commit_point_are_dropped_when_the_commit_fails(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from pipeline import fsutil

    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    rows, state, inode = _rows(env), _meta(env, "state"), _index(env).stat().st_ino
    files = _on_disk(env)

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "no space left on device")

    monkeypatch.setattr(fsutil.ops, "fsync", full_disk)
    monkeypatch.setattr(fsutil.ops, "syncfs", full_disk)
    result = env.run("add", "project_gamma", "-d", "gamma deploys use the red script", "-b", "GAMMA-BODY")
    monkeypatch.undo()
    assert result.code == 6, result
    # Nothing landed, and the rows the index wrote meanwhile were rolled back, never committed.
    assert _on_disk(env) == files
    assert (_rows(env), _meta(env, "state"), _index(env).stat().st_ino) == (rows, state, inode)
    assert "GAMMA-BODY" not in _prompt(env, "gamma red script")


def test_the_index_records_the_directory_as_the_commit_left_it(env: Env) -> None:
    from pipeline.store.searchdb import stat_key

    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    # Written before the commit point, committed after the renames: the directory as they left it.
    assert _meta(env, "dir") == stat_key(os.stat(env.harness))


def test_a_large_batch_whose_commit_point_fails_leaves_the_index_as_it_was(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the syncfs threshold the index starts after the batch is durable: a failure after that
    (here the journal's rename, the commit point itself) still rolls its rows back."""
    import datetime as dt

    from test_commit import _content

    from pipeline import fsutil
    from pipeline.apply.commit import RunRecord, Services, commit_run, gate
    from pipeline.apply.runs import create_run_dir
    from pipeline.errors import ApplyFailed
    from pipeline.paths import make_layout
    from pipeline.state.model import Operation
    from pipeline.state.post import compute_post
    from pipeline.state.read import read_pre
    from pipeline.store.state import Limits

    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    rows, state, inode, files = _rows(env), _meta(env, "state"), _index(env).stat().st_ino, _on_disk(env)
    svc = Services(make_layout(env.home, env.project), Limits(), lambda: dt.datetime.now(dt.UTC), None)
    pre = read_pre(svc.layout, svc.limits)
    ops = [Operation(f"project_bulk-{i}.md", "create", "private", _content(f"project_bulk-{i}", f"bulk fact {i}",
                                                                           "private")) for i in range(80)]
    post = compute_post(pre, ops)
    gate(svc, pre, post)
    run_id = "20261130T120000Z-0000beef"
    run_dir = create_run_dir(svc.layout.runs, svc.layout.home, run_id)
    rename = fsutil.ops.rename

    def no_commit_point(src: str, dst: str) -> None:
        if dst.endswith("journal.json"):
            raise OSError(5, "input/output error")
        rename(src, dst)

    monkeypatch.setattr(fsutil.ops, "rename", no_commit_point)
    record = RunRecord(run_id, "a" * 64, "b" * 64, [], "import", {"name": "parent"}, {"kind": "none"})
    with pytest.raises(ApplyFailed):
        commit_run(svc, run_dir, record, pre, post, b"{}", {"plan.json": b"{}"})
    monkeypatch.undo()
    assert _on_disk(env) == files
    assert (_rows(env), _meta(env, "state"), _index(env).stat().st_ino) == (rows, state, inode)


def _index_files(env: Env) -> list[str]:
    return sorted(n for n in os.listdir(_index(env).parent) if n.startswith("memory.sqlite"))


def test_a_new_index_is_written_in_one_transaction_without_a_journal_file(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its schema and rows commit once, with the journal in memory; only the finished file is synced."""
    from pipeline.store import indexbuild

    _add(env, "project_alpha", "alpha deploys use the blue script", "ALPHA-BODY")
    _index(env).unlink()
    create, seen = indexbuild.create, []
    synced: list[int] = []
    fsync = os.fsync

    def watched(conn: sqlite3.Connection) -> None:
        create(conn)
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        seen.append((conn.in_transaction, mode, _index_files(env)))

    def counted(fd: int) -> None:
        synced.append(os.fstat(fd).st_ino)
        fsync(fd)

    monkeypatch.setattr(indexbuild, "create", watched)
    monkeypatch.setattr(indexbuild.os, "fsync", counted)
    _add(env, "project_beta", "beta deploys use the green script", "BETA-BODY")
    monkeypatch.undo()
    [(in_transaction, mode, names)] = seen
    assert (in_transaction, mode) == (True, "memory")
    assert len(names) == 1 and names[0].startswith("memory.sqlite.") and names[0].endswith(".tmp")
    assert _index_files(env) == ["memory.sqlite"]
    assert _index(env).stat().st_ino in synced
    assert set(_rows(env)) == {"project_alpha.md", "project_beta.md"}
    assert "BETA-BODY" in _prompt(env, "beta green script")


def _memory_file(i: int, words: str) -> bytes:
    from pipeline.store.memory import Memory, render_memory

    return render_memory(Memory(name=f"project_note-{i:03d}", description=f"note {i} about {words}", type="project",
                                visibility="safe", created="2026-11-20", modified="2026-11-20T09:00:00Z",
                                body=f"- {words} {i}.\n- the {words} runs on tuesdays."))


def _replace(path: Path, data: bytes) -> None:
    """Write as memfold and git do: a new file renamed over the old (a new inode, a new stat)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _content(cache: Path, *, stats: bool) -> dict[str, object]:
    """What an index says, by file: its rows (with their stats, or without: a commit's rows carry
    none), its skipped files, and every token instance of both full-text indexes."""
    conn = sqlite3.connect(str(cache))
    try:
        fields = "file, sha, " + ("st, racy, " if stats else "") + ("name, description, type, visibility, created, "
                                                                     "modified, expires, body, prio, evidence")
        files = dict(conn.execute("SELECT id, file FROM docs"))
        out: dict[str, object] = {
            "docs": sorted(conn.execute(f"SELECT {fields} FROM docs")),
            "skipped": sorted(conn.execute("SELECT file, sha" + (", st, racy" if stats else "") + " FROM skipped")),
            "count": conn.execute("SELECT value FROM meta WHERE key = 'count'").fetchone()}
        for table in ("words", "grams"):
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, instance)")
            out[table] = sorted((files[doc], term, col, offset) for term, doc, col, offset in
                                conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{table}"))
        return out
    finally:
        conn.close()


@pytest.fixture
def settled_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root of 40 memories and one broken file, every file settled (none within the racy window)."""
    from pipeline.store import searchdb

    monkeypatch.setattr(searchdb, "SETTLED_NS", -1)
    root = tmp_path / "root"
    root.mkdir()
    for i in range(40):
        (root / f"project_note-{i:03d}.md").write_bytes(_memory_file(i, "blue deploy script"))
    (root / "project_broken.md").write_bytes(BROKEN)
    return root


def test_a_reader_reads_again_only_the_files_a_pull_changed_and_leaves_the_index_a_scan_would_write(
        settled_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline import fsutil
    from pipeline.store.indexbuild import rebuild, update

    root, cache, fresh = settled_root, tmp_path / "kept.sqlite", tmp_path / "fresh.sqlite"
    rebuild(str(root), str(cache), 65536, 4096)
    # What a pull does: three new files, one rewritten, one deleted.
    for i in (40, 41, 42):
        (root / f"project_note-{i:03d}.md").write_bytes(_memory_file(i, "green release train"))
    _replace(root / "project_note-005.md", _memory_file(5, "green release train"))
    (root / "project_note-006.md").unlink()
    read: list[str] = []
    original = fsutil.read_bounded

    def reading(path: str, *args: object, **kwargs: object) -> bytes:
        read.append(os.path.basename(path))
        return original(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fsutil, "read_bounded", reading)
    inode = cache.stat().st_ino
    assert update(str(root), str(cache), 65536, 4096)
    assert sorted(read) == ["project_note-005.md", "project_note-040.md", "project_note-041.md",
                            "project_note-042.md"]
    assert cache.stat().st_ino == inode  # updated in place
    monkeypatch.setattr(fsutil, "read_bounded", original)
    rebuild(str(root), str(fresh), 65536, 4096)
    assert _content(cache, stats=True) == _content(fresh, stats=True)
    conn = sqlite3.connect(str(cache))
    dir_recorded = conn.execute("SELECT value FROM meta WHERE key = 'dir'").fetchone()[0]
    conn.close()
    st = os.stat(root)
    assert dir_recorded == f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def test_a_reader_writes_a_new_index_when_much_of_the_root_changed(settled_root: Path, tmp_path: Path) -> None:
    from pipeline.store.indexbuild import rebuild, update

    root, cache = settled_root, tmp_path / "kept.sqlite"
    rebuild(str(root), str(cache), 65536, 4096)
    before = cache.read_bytes()
    for i in range(11):  # 11 of 41 files: more than a quarter
        _replace(root / f"project_note-{i:03d}.md", _memory_file(i, "green release train"))
    assert not update(str(root), str(cache), 65536, 4096)
    assert cache.read_bytes() == before  # nothing written: the caller rebuilds


def test_a_commit_after_a_pull_writes_only_the_rows_that_differ_and_equals_an_index_written_anew(
        settled_root: Path, tmp_path: Path) -> None:
    from pipeline.fsutil import sha256_bytes
    from pipeline.store.indexbuild import rebuild
    from pipeline.store.indexcommit import _committed, refresh

    root, cache, fresh = settled_root, tmp_path / "kept.sqlite", tmp_path / "fresh.sqlite"
    rebuild(str(root), str(cache), 65536, 4096)
    rows_before = dict(sqlite3.connect(str(cache)).execute("SELECT file, id FROM docs"))
    # A pull the index never saw (no reader came by), then a commit that adopts it and adds one more.
    for i in (40, 41, 42):
        (root / f"project_note-{i:03d}.md").write_bytes(_memory_file(i, "green release train"))
    (root / "project_note-006.md").unlink()
    pre = {p.name: sha256_bytes(p.read_bytes()) for p in root.iterdir()}
    (root / "project_note-043.md").write_bytes(_memory_file(43, "green release train"))
    files = {p.name: p.read_bytes() for p in root.iterdir()}
    post = {name: sha256_bytes(data) for name, data in files.items()}
    inode = cache.stat().st_ino
    refresh(str(root), str(cache), pre, post, files, 65536, 4096, changed=["project_note-043.md"])
    assert cache.stat().st_ino == inode
    rows_after = dict(sqlite3.connect(str(cache)).execute("SELECT file, id FROM docs"))
    unchanged = {f: i for f, i in rows_before.items() if f != "project_note-006.md"}
    assert {f: rows_after[f] for f in unchanged} == unchanged  # the rows of the files left alone stay
    _committed(str(root), str(fresh), post, files, {}, 4096, None)
    assert _content(cache, stats=False) == _content(fresh, stats=False)
    meta = dict(sqlite3.connect(str(cache)).execute("SELECT key, value FROM meta"))
    assert meta["state"] == dict(sqlite3.connect(str(fresh)).execute("SELECT key, value FROM meta"))["state"]
