"""Credential findings masked in the text of private memories before it is injected.

A private memory may hold a token by design, but the injected block goes to the model provider with
every prompt. Finding the secrets needs the privacy rules (RE2), which cost more than the rest of the
per-prompt path, so the spans found in a served memory are kept with its row in the store's search
index (same private home as the memory itself), as offsets and rule ids: an unchanged store loads no
rule at all.
"""

from __future__ import annotations

import os

from . import filecache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CATEGORIES = ("credential",)
FIELDS = ("description", "body")
_PIPELINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rules_identity(privacy: Any, home: str) -> list[Any]:
    """What decides the spans besides the text: the shipped rules, the engine, and the user's rules."""
    from . import jsontext as json

    files = [os.path.join(_PIPELINE, "privacy", name)
             for name in ("engine.py", "checks.py", "loader.py", "tokens.py", "personal.py", "prefilter.py")]
    files += [os.path.join(base, name) for name in ("privacy-rules.yaml", "privacy-needs.json")
              for base in (os.path.join(_PIPELINE, "_data", "schemas"), os.path.join(_PIPELINE, "..", "schemas"))]
    user = json.dumps([privacy.rules, privacy.allowlist], sort_keys=True)
    return ["inject-masks-3", _content_digest(home, files), user]


def _content_digest(home: str, files: list[str]) -> str:
    """A digest of what ``files`` hold, cached per installation under their identities.

    The masks are kept in the store's index, which every installation of memfold sharing the home
    reads: keyed by the files' identities (each copy has its own), two installations would drop each
    other's masks on every prompt and load the rules again. By content, copies of the same rules and
    engine agree.
    """
    from ..fsutil import sha256_bytes

    identities = [filecache.identity(f) for f in files]
    cache = filecache.cache_path(home, f"masks-{sha256_bytes(_PIPELINE.encode('utf-8'))[:16]}.json")
    found = filecache.load(cache, identities)
    if isinstance(found, str):
        return found
    parts = []
    for file in files:
        try:
            with open(file, "rb") as fh:
                data = fh.read()
            parts.append(f"{os.path.basename(file)}:{len(data)}:".encode() + data)
        except FileNotFoundError:
            parts.append(f"{os.path.basename(file)}:absent:".encode())
    digest = sha256_bytes(b"".join(parts))
    filecache.save(cache, identities, digest, identities)
    return digest


def _scan(ruleset: Any, memory: Any) -> list[list[Any]]:
    return [[field, *span] for field in FIELDS for span in ruleset.spans(getattr(memory, field), CATEGORIES)]


class _Text:
    """The two scanned fields of an indexed memory, shaped like a Memory for ``_scan``."""

    __slots__ = FIELDS

    def __init__(self, description: str, body: str) -> None:
        self.description = description
        self.body = body


def _apply(text: str, spans: list[list[Any]], field: str) -> str:
    # Right to left, so earlier offsets stay valid as the text changes length.
    for _, start, end, rule in sorted((s for s in spans if s[0] == field), key=lambda s: -s[1]):
        text = f"{text[:start]}[redacted: {rule}]{text[end:]}"
    return text


class RowMasker:
    """Masks for rows of a search index, kept in the index itself (``docs.masks``).

    Only the rows that are served are scanned, once each: the spans are stored with the row and
    dropped when the rules change (their identity is kept in the index's ``meta``).
    """

    def __init__(self, home: str, privacy: Any, kinds: tuple[str, ...] = ("private", "global")) -> None:
        from . import jsontext as json

        self.home = home
        self.privacy = privacy
        self.kinds = kinds
        self.key = json.dumps(_rules_identity(privacy, home))
        self.ruleset: Any = None
        self.checked: set[int] = set()

    def __call__(self, source: Any, row: Any) -> tuple[str, str]:
        from . import jsontext as json

        description, body = row.description or "", row.body or ""
        if source.kind not in self.kinds:
            return description, body
        index = source.index
        if id(index) not in self.checked:
            self.checked.add(id(index))
            found = index.conn.execute("SELECT value FROM meta WHERE key = 'masks'").fetchone()
            if found is None or found[0] != self.key:
                with index.conn:
                    index.conn.execute("UPDATE docs SET masks = NULL")
                    index.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('masks', ?)", (self.key,))
                row.masks = None
        spans = json.loads(row.masks) if row.masks else None
        if spans is None:
            if self.ruleset is None:
                from ..privacy import load_ruleset

                self.ruleset = load_ruleset(self.privacy.rules or None, self.privacy.allowlist or None,
                                            cache_home=self.home)
            spans = _scan(self.ruleset, _Text(description, body))
            row.masks = json.dumps(spans)
            index.settle("UPDATE docs SET masks = ? WHERE id = ? AND sha = ?", (row.masks, row.id, row.sha))
        return _apply(description, spans, "description"), _apply(body, spans, "body")
