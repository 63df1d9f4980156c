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
    from collections.abc import Callable
    from typing import Any

CATEGORIES = ("credential",)
FIELDS = ("description", "body")
NAME = "file"  # the file name, shown in the index line and the header of the block
_PIPELINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rule_files() -> list[str]:
    """The files that decide the spans besides the text and the user's rules: every module of the privacy
    engine and the shipped rules, and (for the verdicts kept on a team mirror's rows) the checks a sync
    makes. Listed, not named: a module the engine gains later invalidates the masks all the same."""
    engine = os.path.join(_PIPELINE, "privacy")
    files = sorted(os.path.join(engine, name) for name in os.listdir(engine) if name.endswith(".py"))
    files += [os.path.join(_PIPELINE, "mirror", name) for name in ("sync.py", "screen.py", "shape.py", "guard.py")]
    return files + [os.path.join(base, name) for name in ("privacy-rules.yaml", "privacy-needs.json")
                    for base in (os.path.join(_PIPELINE, "_data", "schemas"), os.path.join(_PIPELINE, "..", "schemas"))]


def _rules_identity(privacy: Any) -> list[Any]:
    """The rules as this installation has them: its files' identities and the user's rules."""
    from . import jsontext as json

    user = json.dumps([privacy.rules, privacy.allowlist], sort_keys=True)
    return ["inject-masks-3", [filecache.identity(f) for f in _rule_files()], user]


def _rules_digest(privacy: Any) -> str:
    """What the rules hold: a digest of the files' content and the user's rules, the same for every copy."""
    from ..fsutil import sha256_bytes
    from . import jsontext as json

    parts = [json.dumps([privacy.rules, privacy.allowlist], sort_keys=True).encode("utf-8")]
    for file in _rule_files():
        try:
            with open(file, "rb") as fh:
                data = fh.read()
            parts.append(f"\n{os.path.basename(file)}:{len(data)}:".encode() + data)
        except FileNotFoundError:
            parts.append(f"\n{os.path.basename(file)}:absent:".encode())
    return "inject-masks-4:" + sha256_bytes(b"".join(parts))


def _scan(ruleset: Any, memory: Any) -> list[list[Any]]:
    spans = [[field, *span] for field in FIELDS for span in ruleset.spans(getattr(memory, field), CATEGORIES)]
    # A credential in a file name masks the whole name: its pieces are read from each separator on.
    named = ruleset.scan_name(memory.file)
    return spans + ([[NAME, 0, len(memory.file), named[0].rule_id]] if named else [])


class _Text:
    """The two scanned fields of an indexed memory, shaped like a Memory for ``_scan``."""

    __slots__ = (*FIELDS, NAME)

    def __init__(self, description: str, body: str, file: str) -> None:
        self.description = description
        self.body = body
        self.file = file


def _apply(text: str, spans: list[list[Any]], field: str) -> str:
    # Right to left, so earlier offsets stay valid as the text changes length.
    for _, start, end, rule in sorted((s for s in spans if s[0] == field), key=lambda s: -s[1]):
        text = f"{text[:start]}[redacted: {rule}]{text[end:]}"
    return text


class RowMasker:
    """Masks for rows of a search index, kept in the index itself (``docs.masks``).

    Only the rows that are served are scanned, once each: the spans are stored with the row and
    dropped when the rules change. The index's ``meta`` says what the rules held (``masks``: a digest
    of their content) and, for each installation that checked it, the identities of its files then
    (``masks:<installation>``), so a prompt stats the files and reads them only when they changed.
    Every installation sharing the home reads the same index: keyed by its own files' identities
    alone, each would drop the others' masks and load the rules again on every prompt. ``load_rules``
    gives the rules the first time a row needs scanning (the caller knows how this home loads them).
    """

    def __init__(self, home: str, privacy: Any, load_rules: Callable[[], Any],
                 kinds: tuple[str, ...] = ("private", "global")) -> None:
        from . import jsontext as json

        self.home = home
        self.privacy = privacy
        self.kinds = kinds
        self.load_rules = load_rules
        self.key = json.dumps(_rules_identity(privacy))
        self.slot = f"masks:{_PIPELINE}"
        self.ruleset: Any = None
        self.checked: set[int] = set()

    def __call__(self, source: Any, row: Any) -> tuple[str, str, str]:
        from . import jsontext as json

        description, body = row.description or "", row.body or ""
        if source.kind not in self.kinds:
            return description, body, row.file
        index = source.index
        if id(index) not in self.checked:
            self.checked.add(id(index))
            if self.reset(index):
                row.masks = None
        spans = json.loads(row.masks) if row.masks else None
        if spans is None:
            if self.ruleset is None:
                self.ruleset = self.load_rules()
            spans = _scan(self.ruleset, _Text(description, body, row.file))
            row.masks = json.dumps(spans)
            index.settle("UPDATE docs SET masks = ? WHERE id = ? AND sha = ?", (row.masks, row.id, row.sha))
        return (_apply(description, spans, "description"), _apply(body, spans, "body"),
                _apply(row.file, spans, NAME))

    def reset(self, index: Any) -> bool:
        """Drop the index's masks unless they were found with rules holding what this installation's
        hold; whether they were dropped."""
        from . import jsontext as json

        meta = dict(index.conn.execute("SELECT key, value FROM meta WHERE key IN ('masks', ?)", (self.slot,)))
        if meta.get(self.slot) == json.dumps([self.key, meta.get("masks")]):
            return False  # this installation's files are as they were when it checked these masks
        digest = _rules_digest(self.privacy)
        dropped = meta.get("masks") != digest
        with index.conn:
            if dropped:
                index.conn.execute("UPDATE docs SET masks = NULL")
                index.conn.execute("DELETE FROM meta WHERE key LIKE 'masks:%'")
            index.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('masks', ?)", (digest,))
            index.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                               (self.slot, json.dumps([self.key, digest])))
        return dropped
