"""Full-text ranking on SQLite FTS5: stemmed words, CJK bigrams and trigrams, BM25 with field weights.

Two indexes over the same three fields (name, description, body):

- ``words``: ``unicode61`` with diacritics folded and porter stemming, so ``deploy`` finds
  "deployments" and ``Schlussel`` finds "Schlüssel". Runs of CJK characters have no spaces to split
  on, so they are indexed (and queried) as overlapping character bigrams: an exact Chinese or
  Japanese word of two or more characters is a phrase of consecutive bigrams.
- ``grams``: the ``trigram`` tokenizer, which finds any substring of three or more characters. A
  query word the ``words`` index does not know (a typo, a fragment of a longer word) is looked up
  there as the set of its trigrams, ranked by how many and how rare the shared ones are.

Only ``_sqlite3`` is imported (not even ``re``): this runs on the per-prompt path.
"""

from __future__ import annotations

# The C module itself: the ``sqlite3`` package imports datetime for its default adapters, which this
# per-prompt path never uses.
import _sqlite3 as sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from sqlite3 import Connection

# BM25 weight per field: a word in the name says most about what a memory is, then the description
# (the one line relevance is judged on), then the body.
WEIGHTS = (8.0, 4.0, 1.0)
# A trigram match is weaker evidence than a word match: a typo or fragment only resembles the word.
GRAM_FACTOR = 0.35
MAX_TERMS = 24
# Bounds on the work of one query, whatever the store size (see ``_scored``).
CAP = 400
POSTINGS = 1200
WINDOW = 500
MIN_SQLITE = (3, 34, 0)  # the trigram tokenizer

WORDS_TOKENIZER = "porter unicode61 remove_diacritics 2"
SCHEMA = (
    "CREATE VIRTUAL TABLE words USING fts5(name, description, body, tokenize=\"" + WORDS_TOKENIZER + "\")",
    # A trigram is looked up alone, never in a phrase: the index keeps which fields hold it, not where
    # (detail=column; BM25 then counts it once per field). Positions were a quarter of a 20,000-memory
    # index on disk, and every commit wrote them again for each row it changed.
    "CREATE VIRTUAL TABLE grams USING fts5(name, description, body, tokenize=\"trigram\", detail=column)",
)

# Scripts written without spaces between words: Hiragana and Katakana, CJK ideographs (with
# extension A and the compatibility block), Hangul syllables, half-width Katakana. Checked by code
# point: a regular expression over these ranges takes milliseconds to compile on every prompt.
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
               (0xFF66, 0xFF9F))


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return code >= 0x3040 and any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def _runs(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into maximal runs of CJK and of other characters, in order."""
    out: list[tuple[bool, str]] = []
    for ch in text:
        cjk = _is_cjk(ch)
        if out and out[-1][0] == cjk:
            out[-1] = (cjk, out[-1][1] + ch)
        else:
            out.append((cjk, ch))
    return out


def has_cjk(text: str) -> bool:
    return not text.isascii() and any(_is_cjk(ch) for ch in text)


# Every ASCII character that is not a word character of ``re``'s ``\w`` (letters, digits, ``_``).
_ASCII_GAPS = {c: " " for c in range(128) if not (chr(c).isalnum() or c == ord("_"))}


def words(text: str) -> list[str]:
    r"""The runs of word characters in ``text``, as ``re.findall(r"\w+", text)`` finds them.

    ``\w`` is ``str.isalnum`` plus the underscore; without ``re`` the per-prompt path saves the
    import of ``re`` and ``enum``, a few milliseconds of every prompt.
    """
    if text.isascii():
        return text.translate(_ASCII_GAPS).split()
    return "".join(ch if ch.isalnum() or ch == "_" else " " for ch in text).split()
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


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return f" {run} "
    return " " + " ".join(run[i:i + 2] for i in range(len(run) - 1)) + " "


def words_text(text: str) -> str:
    """Text as the ``words`` index sees it: CJK runs split into bigrams, everything else unchanged."""
    if not has_cjk(text):
        return text
    return "".join(_bigrams(run) if cjk else run for cjk, run in _runs(text))


def title_text(file: str, name: str) -> str:
    """The name field: the memory's own words and its file name's words (``project_deploy-target``)."""
    stem = file[:-3] if file.endswith(".md") else file
    return f"{name} {stem.replace('_', ' ').replace('-', ' ')}"


def insert(conn: Connection, rowid: int, title: str, description: str, body: str) -> None:
    conn.execute("INSERT INTO words(rowid, name, description, body) VALUES (?, ?, ?, ?)",
                 (rowid, words_text(title), words_text(description), words_text(body)))
    conn.execute("INSERT INTO grams(rowid, name, description, body) VALUES (?, ?, ?, ?)",
                 (rowid, title, description, body))


def delete_many(conn: Connection, rowids: Iterable[int]) -> None:
    """Delete rows from both indexes, each index's rows in one prepared statement."""
    params = [(rowid,) for rowid in rowids]
    conn.executemany("DELETE FROM words WHERE rowid = ?", params)
    conn.executemany("DELETE FROM grams WHERE rowid = ?", params)


def terms(query: str) -> list[str]:
    """The distinct searchable words of a query without stop words; of a long prompt, the MAX_TERMS
    longest (the most specific), in the prompt's order."""
    seen: dict[str, None] = {}
    for raw in words(query.lower()):
        for term in _split_cjk(raw):
            if term not in _STOP and term not in seen and (len(term) > 1 or has_cjk(term)):
                seen[term] = None
    found = list(seen)
    if len(found) <= MAX_TERMS:
        return found
    keep = set(sorted(found, key=lambda t: (-len(t), found.index(t)))[:MAX_TERMS])
    return [t for t in found if t in keep]


def _split_cjk(raw: str) -> Iterable[str]:
    """``部署script`` is two terms: the CJK run and the rest."""
    if not has_cjk(raw):
        return (raw,)
    return [run for _, run in _runs(raw) if run.strip("_")]


def _phrase(term: str) -> str:
    return '"' + words_text(term).strip().replace('"', '""') + '"'


def _prefix_query(term: str) -> str | None:
    # Longer forms the stemmer does not fold ("config" -> "configuration"), for a word with no exact hit.
    if len(term) >= 4 and not has_cjk(term) and "_" not in term:
        return _phrase(term) + "*"
    return None


def _count(conn: Connection, table: str, expression: str) -> int:
    """How many memories match, counted only up to CAP + 1: the count costs O(CAP) at any store size."""
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT {CAP + 1})"
    return int(conn.execute(sql, (expression,)).fetchone()[0])


def _word_expressions(conn: Connection, wanted: list[str]) -> tuple[list[tuple[int, str]], list[str]]:
    """Each term as the ``words`` index answers it (exact, else as a prefix) with its capped count, and
    the terms it does not know."""
    found, unknown = [], []
    for term in wanted:
        for expression in (_phrase(term), _prefix_query(term)):
            count = _count(conn, "words", expression) if expression else 0
            if count:
                assert expression is not None
                found.append((count, expression))
                break
        else:
            unknown.append(term)
    return found, unknown


def _gram_expressions(conn: Connection, missing: list[str]) -> list[tuple[int, str]]:
    grams = {term[i:i + 3] for term in missing if len(term) >= 3 for i in range(len(term) - 2)}
    counted = [(_count(conn, "grams", '"' + g.replace('"', '""') + '"'), '"' + g.replace('"', '""') + '"')
               for g in sorted(grams)]
    return [c for c in counted if c[0]]


def _scored(conn: Connection, table: str, counted: list[tuple[int, str]], deep: int) -> list[tuple[int, float]]:
    """BM25 over the rarest expressions whose matches fit in POSTINGS together.

    When every expression is common (more than CAP matches), only the WINDOW most recently indexed
    memories are ranked (``_recent``): a query of common words only says little.
    """
    chosen, total = [], 0
    for count, expression in sorted(c for c in counted if c[0] <= CAP):
        if total + count > POSTINGS:
            break
        chosen.append(expression)
        total += count
    if not chosen:
        return _recent(conn, table, [e for _, e in counted], deep)
    weights = ", ".join(str(w) for w in WEIGHTS)
    return conn.execute(f"SELECT rowid, -bm25({table}, {weights}) AS s FROM {table} WHERE {table} MATCH ? "
                        "ORDER BY s DESC LIMIT ?", (" OR ".join(chosen), deep)).fetchall()


def _recent(conn: Connection, table: str, expressions: list[str], deep: int) -> list[tuple[int, float]]:
    """The WINDOW newest memories holding any of ``expressions``, by BM25 with every expression of equal
    weight and counted once: how many each memory holds, over its length against the window's mean.

    ``bm25()`` is not used: it weighs an expression by counting every memory that holds it, which grows
    with the store. Here each expression's list is read from the window's first row id on (FTS5 seeks
    to it), and the lengths are the token counts FTS5 keeps per row, so the work stays bounded.
    """
    newest = conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1").fetchone()
    floor = newest[0] - WINDOW if newest else 0
    lists = " UNION ALL ".join(f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid > ?" for _ in expressions)
    params = [value for expression in expressions for value in (expression, floor)]
    held = conn.execute(f"SELECT hit.id, hit.n, size.sz FROM (SELECT rowid AS id, count(*) AS n FROM ({lists}) "
                        f"GROUP BY rowid) AS hit JOIN {table}_docsize AS size USING (id)", params).fetchall()
    if not held:
        return []
    lengths = [_tokens(sz) for _, _, sz in held]
    mean = sum(lengths) / len(lengths) or 1.0
    k1, b = 1.2, 0.75
    scored = [(rowid, n * (k1 + 1) / (1 + k1 * (1 - b + b * length / mean)))
              for (rowid, n, _), length in zip(held, lengths, strict=True)]
    scored.sort(key=lambda h: (-h[1], -h[0]))
    return scored[:deep]


def _tokens(sizes: bytes) -> int:
    """A row's token count over all fields: FTS5 keeps one SQLite varint per field."""
    total = value = 0
    for byte in sizes:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            total, value = total + value, 0
    return total


def rank(conn: Connection, query: str, limit: int) -> list[tuple[int, float]]:
    """Row ids with a positive score, best first (ties by row id, which follows file-name order)."""
    wanted = terms(query)
    if not wanted:
        return []
    scores: dict[int, float] = {}
    found, missing = _word_expressions(conn, wanted)
    # Each index ranks in SQLite and returns its best few; a memory both rank gets both scores.
    deep = max(limit, 1) * 4
    if found:
        for rowid, score in _scored(conn, "words", found, deep):
            scores[rowid] = scores.get(rowid, 0.0) + score
    grams = _gram_expressions(conn, missing) if missing else []
    if grams:
        for rowid, score in _scored(conn, "grams", grams, deep):
            scores[rowid] = scores.get(rowid, 0.0) + GRAM_FACTOR * score
    hits = sorted(((r, s) for r, s in scores.items() if s > 0), key=lambda h: (-h[1], h[0]))
    return hits[:limit]
