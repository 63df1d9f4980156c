"""Full-text ranking: word forms, partial words, typos, and exact words in every script."""

from __future__ import annotations

import _sqlite3
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.bench.retrieval import NON_ENGLISH, fts_ranker, load_set, prompt_ranker, score
from pipeline.store import fts
from pipeline.store.memory import Memory
from pipeline.store.searchcache import Index

MEMORIES = {
    "project_deploy-target.md": Memory("Deploy target", "production deployments go through ops/deploy.sh",
                                       body="Run the blue/green script. load_config reads its settings."),
    "project_db-pool.md": Memory("Datenbankverbindung", "die Datenbankverbindung nutzt einen Verbindungspool",
                                 body="Der Schlüssel liegt im Tresor."),
    "project_zh.md": Memory("部署流程", "生产环境部署使用蓝绿发布脚本", body="部署前必须运行全部测试"),
    "project_ru.md": Memory("Развертывание", "развертывание идёт только через конвейер", body="ключи в сейфе"),
    "project_ja.md": Memory("デプロイ手順", "本番環境へのデプロイは金曜日に行わない", body="ステージングで確認"),
    "project_lint.md": Memory("Lint rules", "ruff runs in CI with the strict profile", body="no exceptions"),
}


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.of_memories(MEMORIES)


def first(index: Index, query: str) -> str | None:
    hits = index.ranked(query, 5)
    return hits[0][0].file if hits else None


@pytest.mark.parametrize(("query", "expected"), [
    ("развертывание", "project_ru.md"), ("конвейер", "project_ru.md"), ("сейфе", "project_ru.md"),
    ("Datenbankverbindung", "project_db-pool.md"), ("Verbindungspool", "project_db-pool.md"),
    ("部署", "project_zh.md"), ("蓝绿", "project_zh.md"), ("测试", "project_zh.md"),
    ("デプロイ", "project_ja.md"), ("金曜日", "project_ja.md"),
])
def test_an_exact_word_is_found_in_every_script(index: Index, query: str, expected: str) -> None:
    assert first(index, query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("deploying", "project_deploy-target.md"),  # porter: deploy, deployments, deploying
    ("Schlussel", "project_db-pool.md"),  # diacritics folded
    ("Datenbank", "project_db-pool.md"),  # a prefix of a compound
    ("ploym", "project_deploy-target.md"),  # a fragment inside a word: trigrams
    ("deplyo", "project_deploy-target.md"),  # a typo
    ("ops/deploy.sh", "project_deploy-target.md"),
    ("load_config", "project_deploy-target.md"),
])
def test_word_forms_fragments_typos_and_identifiers_are_found(index: Index, query: str, expected: str) -> None:
    assert first(index, query) == expected


def test_a_query_of_only_stop_words_or_punctuation_matches_nothing(index: Index) -> None:
    assert index.ranked("the and of what", 5) == []
    assert index.ranked("!!! ??? ...", 5) == []


def test_a_field_hit_outranks_the_same_word_in_a_body() -> None:
    index = Index.of_memories({
        "project_a.md": Memory("notes", "general notes", body="mentions ruff once"),
        "project_b.md": Memory("ruff", "ruff settings", body="other text"),
    })
    assert [r.file for r, _ in index.ranked("ruff", 5)] == ["project_b.md", "project_a.md"]


def test_a_query_of_only_common_words_ranks_the_newest_window_by_the_words_each_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past CAP matches a word is common; a query of common words ranks only the WINDOW newest rows,
    without bm25 (whose IDF would count every memory holding each word)."""
    monkeypatch.setattr(fts, "CAP", 5)
    monkeypatch.setattr(fts, "WINDOW", 8)
    memories = {f"project_n{i:02d}.md": Memory(f"note {i}", f"alpha notes{' beta' if i < 6 or i == 10 else ''}",
                                               body="plain text") for i in range(12)}
    index = Index.of_memories(memories)  # row ids follow file names: n04..n11 are the window
    for word in ("alpha", "beta"):
        assert fts._count(index.conn, "words", f'"{word}"') > fts.CAP
    hits = [row.file for row, _ in index.ranked("alpha beta", 20)]
    assert sorted(hits) == [f"project_n{i:02d}.md" for i in range(4, 12)]  # n00..n03 are older than the window
    assert set(hits[:3]) == {"project_n04.md", "project_n05.md", "project_n10.md"}  # both words first
    bm25 = []
    index.conn.set_trace_callback(bm25.append)
    index.ranked("alpha beta", 20)
    assert not [sql for sql in bm25 if "bm25" in sql]


def test_of_memories_holding_the_same_common_words_the_shorter_ranks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts, "CAP", 2)
    long_body = " ".join(["filler words about other things"] * 40)
    memories = {f"project_n{i}.md": Memory(f"note {i}", "alpha beta", body=long_body if i % 2 else "short")
                for i in range(6)}
    ranked = [row.file for row, _ in Index.of_memories(memories).ranked("alpha beta", 6)]
    assert ranked == ["project_n0.md", "project_n2.md", "project_n4.md",  # equal scores: by file name
                      "project_n1.md", "project_n3.md", "project_n5.md"]


def test_a_long_prompt_is_cut_to_its_most_specific_words() -> None:
    words = [f"w{i:02d}" for i in range(fts.MAX_TERMS)] + ["kubernetes"]
    kept = fts.terms(" ".join(words))
    assert len(kept) == fts.MAX_TERMS and "kubernetes" in kept


def test_an_sqlite_without_the_trigram_tokenizer_is_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(fts.Unavailable, match=r"older than 3\.34"):
        fts.check(_sqlite3.connect(":memory:"))


def test_the_labelled_set_meets_its_targets() -> None:
    """The retrieval set in tests/retrieval: what `memfold bench --retrieval` prints, as a floor."""
    memories, queries = load_set()
    assert len(memories) >= 200 and len(queries) >= 100
    assert {q["kind"] for q in queries} >= {"paraphrase", "word-form", "typo", "partial", "code", *NON_ENGLISH}
    for ranker in (fts_ranker(memories), prompt_ranker(memories)):
        result = score(ranker, queries)
        assert result["recallAt5"] >= 0.9 and result["mrr"] >= 0.8, result
        assert result["nonEnglishMissed"] == []


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_words_are_what_the_word_pattern_finds(text: str) -> None:
    # The query's words are cut without ``re`` on the per-prompt path, exactly as ``\w+`` cuts them.
    assert fts.words(text) == re.findall(r"\w+", text)
