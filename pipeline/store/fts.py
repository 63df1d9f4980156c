"""Full-text ranking on SQLite FTS5: stemmed words, CJK bigrams and trigrams, BM25 with field weights.

Two indexes over the same three fields (name, description, body):

- ``words``: ``unicode61`` with diacritics folded and porter stemming, so ``deploy`` finds
  "deployments" and ``Schlussel`` finds "Schlüssel". Runs of CJK characters have no spaces to split
  on, so they are indexed (and queried) as overlapping character bigrams: an exact Chinese or
  Japanese word of two or more characters is a phrase of consecutive bigrams.
- ``grams``: the ``trigram`` tokenizer, which finds any substring of three or more characters. A
  query word the ``words`` index does not know (a typo, a fragment of a longer word) is looked up
  there as the set of its trigrams, ranked by how many and how rare the shared ones are.

Only ``sqlite3`` and ``re`` are imported: this runs on the per-prompt path.
"""

from __future__ import annotations

# The C module itself: the ``sqlite3`` package imports datetime for its default adapters, which this
# per-prompt path never uses.
import _sqlite3 as sqlite3
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from sqlite3 import Connection

# BM25 weight per field: a word in the name says most about what a memory is, then the description
# (the one line relevance is judged on), then the body.
WEIGHTS = (8.0, 4.0, 1.0)
# A trigram match is weaker evidence than a word match: a typo or fragment only resembles the word.
GRAM_FACTOR = 0.35
MAX_TERMS = 48
MIN_SQLITE = (3, 34, 0)  # the trigram tokenizer

WORDS_TOKENIZER = "porter unicode61 remove_diacritics 2"
SCHEMA = (
    "CREATE VIRTUAL TABLE words USING fts5(name, description, body, tokenize=\"" + WORDS_TOKENIZER + "\")",
    "CREATE VIRTUAL TABLE grams USING fts5(name, description, body, tokenize=\"trigram\")",
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_TERM = re.compile(r"\w+")
# Function words and the generic words of a request ("look", "change", "last time"): in a store of
# project notes they are rare, so BM25 would rank them highly, yet they say nothing about the topic.
_STOP = frozenset("""
a about after again all also am an and any anything are as ask at be been before being both but by
can cannot could did do does doing done each either else even ever every for from get gets getting
give go going got had has have having he her here hers him his how however i if in into is it its
just know last let like look looking make many may me might more most much must my need needs no
not now of off ok okay on once one only or other our out over please quick really right said same
say see seem she should show so some something still such sure take tell than thank thanks that
the their them then there these they thing things think this those though through time to today
too try trying up us very want wants was way we well were what whatever when where whether which
while who whom why will with without would yes yet you your yours
change changes decide decided again remember help idea question problem
""".split())

class Unavailable(Exception):
    """This Python's SQLite lacks FTS5 or the trigram tokenizer."""


def check(conn: Connection) -> None:
    """Fail clearly when the running SQLite cannot hold the index (checked when one is created)."""
    version = tuple(int(p) for p in sqlite3.sqlite_version.split("."))
    if version < MIN_SQLITE:
        raise Unavailable(f"SQLite {sqlite3.sqlite_version} is older than 3.34, which brought the trigram "
                          "tokenizer full-text search needs")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(x, tokenize=\"trigram\")")
        conn.execute("DROP TABLE temp.probe")
    except sqlite3.OperationalError as exc:
        raise Unavailable(f"SQLite {sqlite3.sqlite_version} was built without FTS5 or its trigram "
                          f"tokenizer ({exc})") from None


def _bigrams(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def words_text(text: str) -> str:
    """Text as the ``words`` index sees it: CJK runs split into bigrams, everything else unchanged."""
    return _CJK_RUN.sub(_bigrams, text) if _CJK_RUN.search(text) else text


def title_text(file: str, name: str) -> str:
    """The name field: the memory's own words and its file name's words (``project_deploy-target``)."""
    stem = file[:-3] if file.endswith(".md") else file
    return f"{name} {stem.replace('_', ' ').replace('-', ' ')}"


def insert(conn: Connection, rowid: int, title: str, description: str, body: str) -> None:
    conn.execute("INSERT INTO words(rowid, name, description, body) VALUES (?, ?, ?, ?)",
                 (rowid, words_text(title), words_text(description), words_text(body)))
    conn.execute("INSERT INTO grams(rowid, name, description, body) VALUES (?, ?, ?, ?)",
                 (rowid, title, description, body))


def delete(conn: Connection, rowid: int) -> None:
    conn.execute("DELETE FROM words WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM grams WHERE rowid = ?", (rowid,))


def terms(query: str) -> list[str]:
    """The distinct searchable words of a query, in order, without stop words, at most MAX_TERMS."""
    seen: dict[str, None] = {}
    for raw in _TERM.findall(query.lower()):
        for term in _split_cjk(raw):
            if term not in _STOP and term not in seen and (len(term) > 1 or _CJK_RUN.match(term)):
                seen[term] = None
    return list(seen)[:MAX_TERMS]


def _split_cjk(raw: str) -> Iterable[str]:
    """``部署script`` is two terms: the CJK run and the rest."""
    if not _CJK_RUN.search(raw):
        return (raw,)
    return [p for p in re.split(f"([{_CJK}]+)", raw) if p and p != "_"]


def _phrase(term: str) -> str:
    return '"' + words_text(term).strip().replace('"', '""') + '"'


def _prefix_query(term: str) -> str | None:
    # Longer forms the stemmer does not fold ("config" -> "configuration"), for a word with no exact hit.
    if len(term) >= 4 and not _CJK_RUN.search(term) and "_" not in term:
        return _phrase(term) + "*"
    return None


def _gram_query(term: str) -> str | None:
    if len(term) < 3:
        return None
    grams = {term[i:i + 3] for i in range(len(term) - 2)}
    return " OR ".join('"' + g.replace('"', '""') + '"' for g in sorted(grams))


def _matches(conn: Connection, expression: str | None) -> bool:
    if expression is None:
        return False
    return conn.execute("SELECT 1 FROM words WHERE words MATCH ? LIMIT 1", (expression,)).fetchone() is not None


def _word_queries(conn: Connection, wanted: list[str]) -> tuple[list[str], list[str]]:
    """Each term as the ``words`` index can answer it (exact, else as a prefix), and the terms it cannot."""
    found, unknown = [], []
    for term in wanted:
        for expression in (_phrase(term), _prefix_query(term)):
            if _matches(conn, expression):
                assert expression is not None
                found.append(expression)
                break
        else:
            unknown.append(term)
    return found, unknown


def rank(conn: Connection, query: str, limit: int) -> list[tuple[int, float]]:
    """Row ids with a positive score, best first (ties by row id, which follows file-name order)."""
    wanted = terms(query)
    if not wanted:
        return []
    scores: dict[int, float] = {}
    weights = ", ".join(str(w) for w in WEIGHTS)
    found, missing = _word_queries(conn, wanted)
    if found:
        for rowid, score in conn.execute(
                f"SELECT rowid, -bm25(words, {weights}) FROM words WHERE words MATCH ?", (" OR ".join(found),)):
            scores[rowid] = scores.get(rowid, 0.0) + score
    unknown = [q for q in (_gram_query(t) for t in missing) if q]
    if unknown:
        for rowid, score in conn.execute(
                f"SELECT rowid, -bm25(grams, {weights}) FROM grams WHERE grams MATCH ?",
                ("(" + ") OR (".join(unknown) + ")",)):
            scores[rowid] = scores.get(rowid, 0.0) + GRAM_FACTOR * score
    hits = sorted(((r, s) for r, s in scores.items() if s > 0), key=lambda h: (-h[1], h[0]))
    return hits[:limit]
