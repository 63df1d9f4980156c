"""The planner's fast paths against the straightforward code they replace, on inputs built to differ."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

from pipeline.planner import dedupe
from pipeline.planner.grounding import Tree
from pipeline.planner.text import _MARKER, _unmarked, fact_key
from pipeline.store.memory import Memory


def _unmarked_reference(line: str) -> str:
    match = _MARKER.match(line)
    return line[match.end():] if match else line


def test_the_marker_shortcut_strips_what_the_marker_pattern_strips() -> None:
    rng = random.Random(5)
    # Bullets, quotes, checkboxes, ASCII and other digits, ASCII and other spaces, and plain letters.
    alphabet = "-*+>[]x .)1٣\t\u2003\x1c\x85\xa0a"
    for _ in range(20_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7)))
        assert _unmarked(line) == _unmarked_reference(line), repr(line)


def _outdated_reference(older: Memory, newer: Memory) -> set[str]:
    """Every older statement measured against every newer one, with no shared-word postings."""
    newer_statements = dedupe._statements(newer)
    out = set()
    for raw, words, values in dedupe._statements(older):
        for _, other, new_values in newer_statements:
            if set(values) == set(new_values):
                continue
            if dedupe.same_statement(words, other):
                out.add(fact_key(raw))
                break
    return out


def _statement(rng: random.Random) -> str:
    subject = rng.choice(("api port", "the api", "web01", "billing retries", "db host", "cache ttl", ""))
    verb = rng.choice(("is", "uses", "=", ":", "listens on", ""))
    value = rng.choice(("8080", "9090", "`make up`", "v2", "3.11", "src/app.py", "https://x.test/a", "five"))
    tail = rng.choice(("", " since the proxy change", " in staging", " and 443"))
    return f"{subject} {verb} {value}{tail}".strip()


def test_outdated_lines_through_shared_words_match_the_all_pairs_comparison() -> None:
    rng = random.Random(9)
    for _ in range(1_500):
        memories = [Memory(name="n", description=_statement(rng), type="project", visibility="private",
                           body="\n".join(f"- {_statement(rng)}" for _ in range(rng.randint(0, 5))))
                    for _ in range(2)]
        older, newer = memories
        assert dedupe.outdated_lines(older, newer) == _outdated_reference(older, newer)
    dedupe.clear_caches()


def _status_reference(tree: Tree, rel: str) -> str:
    resolved = os.path.realpath(os.path.join(tree.real, rel))
    inside = resolved.startswith(tree.real.rstrip(os.sep) + os.sep)
    if inside and os.path.isfile(resolved):
        return "found"
    if inside and os.path.isdir(resolved):
        return "dir"
    return "missing"


def test_tree_lookups_match_resolving_every_path(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "src" / "deep").mkdir(parents=True)
    (root / ".memory").mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text("x")
    (root / "src" / "app.py").write_text("x")
    (root / "src" / "deep" / "mod.py").write_text("x")
    (root / ".memory" / "project_a.md").write_text("x")
    os.mkfifo(root / "src" / "pipe.py")
    (root / "src" / "to_app.py").symlink_to("app.py")
    (root / "src" / "to_outside.py").symlink_to(outside / "secret.py")
    (root / "linked").symlink_to(outside)
    (root / "inner").symlink_to(root / "src")
    (root / "loop.py").symlink_to("loop.py")
    (root / "dangling.py").symlink_to("nowhere.py")
    (root / "src" / "file_as_dir").write_text("x")
    rels = ["src/app.py", "src/deep/mod.py", "src/deep", "src", ".memory/project_a.md", ".memory/project_b.md",
            "src/pipe.py", "src/to_app.py", "src/to_outside.py", "linked/secret.py", "linked", "inner/app.py",
            "inner/deep/mod.py", "loop.py", "dangling.py", "src/file_as_dir/x.py", "missing/x.py", "Makefile",
            "src/", "inner/", "linked/", "src/deep/", "x", ".memory"]
    tree = Tree(root)
    for rel in rels + rels:  # the second round is answered from the tree's caches
        assert tree.status(rel) == _status_reference(tree, rel), rel


def test_tree_lookups_through_a_linked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "app.py").write_text("x")
    (tmp_path / "alias").symlink_to(real)
    tree = Tree(tmp_path / "alias")
    assert [tree.status(r) for r in ("src/app.py", "src/none.py", "src")] == ["found", "missing", "dir"]
    assert re.fullmatch(re.escape(str(real.resolve())), tree.real)


def _signature_reference(items: frozenset[str]) -> tuple[int, ...]:
    mins = [dedupe._EMPTY] * dedupe.BINS
    for b, v in map(dedupe._slot, items):
        if v < mins[b]:
            mins[b] = v
    out = list(mins)
    nxt: int | None = None
    for i in range(2 * dedupe.BINS - 1, -1, -1):
        j = i % dedupe.BINS
        if mins[j] <= dedupe._MASK:
            nxt = i
        elif i < dedupe.BINS and nxt is not None:
            out[j] = (mins[nxt % dedupe.BINS] + (nxt - i) * 0x9E3779B97F4A7C15) & dedupe._MASK
    return tuple(out)


def test_signatures_densify_empty_bins_as_the_two_turn_scan_did() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(400)]
    for size in (0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144):
        for _ in range(60):
            items = frozenset(rng.sample(words, size))
            assert dedupe.signature(items) == _signature_reference(items)
    dedupe.clear_caches()


def test_the_length_bound_of_the_full_plan_text_never_passes_its_length(tmp_path: Path) -> None:
    from planner_golden import stores
    from test_planner_support import plan_store

    from pipeline.planner.planjson import PRINT_LINE_BUDGET, plan_json
    from pipeline.planner.run import _surely_longer

    for label in ("synthetic-200-seed11", "valued-300-seed2", "evalset", "fixture-infra"):
        store = stores()[label][0]()
        repo = tmp_path / label
        repo.mkdir()
        plan = plan_store(store.files, repo, candidates=store.candidates)
        length = len(plan_json(plan, PRINT_LINE_BUDGET).decode("utf-8"))
        assert not _surely_longer(plan, length), label
        assert _surely_longer(plan, length // 4), label  # a bound worth having: most of the text


def _body_facts_reference(body: str) -> tuple[tuple[str, str], ...]:
    """Each line's key on its own, as the planner did before."""
    return tuple((raw.rstrip(), key) for raw in body.split("\n") if (key := fact_key(raw)))


def test_the_whole_body_keys_match_each_line_keyed_on_its_own() -> None:
    from pipeline.planner.text import body_facts

    rng = random.Random(11)
    # Markers, punctuation, every ASCII whitespace (\r, \x0b, \x0c, \x1c-\x1f split str lines but
    # not "\n" lines), digits, capitals, and a few non-ASCII letters and spaces for the other path.
    alphabet = "-*+>[]x .)1`:/_\t\r\x0b\x0c\x1c\x1f\n\nAbZ9é\u2003"
    for _ in range(20_000):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        body_facts.cache_clear()
        assert body_facts(body) == _body_facts_reference(body), repr(body)


def _identifiers_reference(line: str) -> frozenset[str]:
    """Every word of the key checked character by character, as the planner did before."""
    from pipeline.planner.text import ENVIRONMENTS, VALUE_MARK, masked

    out: set[str] = set()
    for raw in line.split("\n"):
        key, _ = masked(raw)
        out.update(w for w in key.split() if w != VALUE_MARK and (w in ENVIRONMENTS or any(c.isdigit() for c in w)))
    return frozenset(out)


def test_identifiers_found_through_the_ascii_shortcut_match_the_character_scan() -> None:
    from pipeline.planner import text

    rng = random.Random(13)
    # ASCII letters and digits, other digits (Arabic-Indic, superscript two, circled one) and numerals
    # that are not digits (vulgar half, Roman numeral), accented letters, environments, punctuation.
    pieces = ["web", "01", "app2", "v3", "prod", "staging", "x", "é", "\u0663", "\u00b2", "\u2460", "\u00bd",
              "\u2163", "_", "-", ".", " ", ":", "port", "is", "8080", "`make up`", "\n", "db3a", "ß"]
    for _ in range(20_000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        text.identifiers.cache_clear()
        assert text.identifiers(line) == _identifiers_reference(line), repr(line)


def test_subject_groups_kept_across_passes_match_groups_built_afresh() -> None:
    """The conflict stage's subject keys, kept per memory, give the groups a fresh pass would."""
    from collections import defaultdict

    from pipeline.planner import conflicts
    from pipeline.planner.text import masked, subject_stem, title_words
    from pipeline.planner.work import Work
    from pipeline.store.state import Limits

    def reference(work: Work) -> list[tuple[str, list[str]]]:
        buckets: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for name in sorted(work.live):
            memory = work.live[name]
            key, values = masked(memory.description)
            if values and key:
                buckets[("description", memory.type, key)].append(name)
            if subject_stem(name):
                buckets[("stem", memory.type, subject_stem(name))].append(name)
            if title_words(memory.name):
                buckets[("title", memory.type, title_words(memory.name))].append(name)
        return [(k[0], v[:conflicts.MAX_SUBJECT_GROUP]) for k, v in sorted(buckets.items()) if len(v) > 1]

    rng = random.Random(17)
    live = {}
    for i in range(400):
        stem = rng.choice(("api-port", "api-port-v2", "db-host", "cache", "web01", "web02"))
        live[f"{rng.choice(('project', 'reference'))}_{stem}-{i}.md"] = Memory(
            name=rng.choice(("API port", "DB host", "Cache TTL", f"note {i}")), description=_statement(rng),
            type=rng.choice(("project", "reference")), visibility="private", body="")
    work = Work(original=dict(live), live=live, fixed={}, limits=Limits(), today="2026-01-01")
    conflicts.clear_caches()
    for _ in range(3):  # later passes find the keys kept; the live set changes between them
        assert conflicts._subjects(work) == reference(work)
        for name in rng.sample(sorted(work.live), 40):
            work.live[name] = work.live[name].with_changes(description=_statement(rng))
        for name in rng.sample(sorted(work.live), 20):
            del work.live[name]
    conflicts.clear_caches()


def test_one_shared_word_makes_no_statement_the_same_but_equal_word_sets_do() -> None:
    same = dedupe.same_statement
    assert not same(frozenset({"redis", "port"}), frozenset({"port"}))
    assert not same(frozenset({"deploy", "cache"}), frozenset({"deploy"}))
    assert same(frozenset({"deploy"}), frozenset({"deploy"}))
    assert same(frozenset({"api", "port"}), frozenset({"api", "port", "since", "proxy", "change"}))
    assert same(frozenset({"api", "port", "staging"}), frozenset({"api", "port", "prod"}))
    assert not same(frozenset(), frozenset())
