"""Credential findings masked in the text of private memories before it is injected.

A private memory may hold a token by design, but the injected block goes to the model provider with
every prompt. Finding the secrets needs the privacy rules (RE2), which cost more than the rest of the
per-prompt path, so the spans found in a memory's text are cached under ``<home>/cache/``, keyed by
the text's sha256: an unchanged store loads no rule at all. The cache holds digests, offsets and rule
ids, never text.
"""

from __future__ import annotations

import os
from hashlib import sha256

from . import filecache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .memory import Memory

CACHE_NAME = "inject-masks.json"
CATEGORIES = ("credential",)
FIELDS = ("description", "body")
_PIPELINE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _rules_identity(privacy: Any) -> list[Any]:
    """What decides the spans besides the text: the shipped rules, the engine, and the user's rules."""
    import json

    files = [os.path.join(_PIPELINE, "privacy", name)
             for name in ("engine.py", "checks.py", "loader.py", "tokens.py", "personal.py")]
    files += [os.path.join(base, "privacy-rules.yaml")
              for base in (os.path.join(_PIPELINE, "_data", "schemas"), os.path.join(_PIPELINE, "..", "schemas"))]
    user = json.dumps([privacy.rules, privacy.allowlist], sort_keys=True)
    return ["inject-masks-1", [filecache.identity(f) for f in files], sha256(user.encode("utf-8")).hexdigest()]


def _digest(memory: Memory) -> str:
    return sha256(f"{memory.description}\x00{memory.body}".encode("utf-8", "replace")).hexdigest()


def _scan(ruleset: Any, memory: Memory) -> list[list[Any]]:
    return [[field, *span] for field in FIELDS for span in ruleset.spans(getattr(memory, field), CATEGORIES)]


def _masked(memory: Memory, spans: list[list[Any]]) -> Memory:
    if not spans:
        return memory
    changes: dict[str, str] = {}
    for field in FIELDS:
        text = getattr(memory, field)
        # Right to left, so earlier offsets stay valid as the text changes length.
        for _, start, end, rule in sorted((s for s in spans if s[0] == field), key=lambda s: -s[1]):
            text = f"{text[:start]}[redacted: {rule}]{text[end:]}"
        changes[field] = text
    return memory.with_changes(**changes)


def mask_credentials(home: str, stores: list[Mapping[str, Memory]], privacy: Any) -> list[dict[str, Memory]]:
    """Each store with every credential-class finding replaced by ``[redacted: RULE-ID]``.

    The rules are loaded only when some memory's text is not in the cache; the cache is then rewritten
    with exactly the current memories, so forgotten ones drop out of it.
    """
    cache = filecache.cache_path(home, CACHE_NAME)
    key = _rules_identity(privacy)
    known = filecache.load(cache, key)
    known = known if isinstance(known, dict) else {}
    digests = [{name: _digest(memory) for name, memory in store.items()} for store in stores]
    current = {d: known.get(d) for names in digests for d in names.values()}
    missing = [d for d, spans in current.items() if not isinstance(spans, list)]
    if missing:
        from ..privacy import load_ruleset

        ruleset = load_ruleset(privacy.rules or None, privacy.allowlist or None, cache_home=home)
        by_digest = {
            d: m for store, names in zip(stores, digests, strict=False) for n, m in store.items() for d in [names[n]]
        }
        for digest in missing:
            current[digest] = _scan(ruleset, by_digest[digest])
        filecache.save(cache, key, current, [])
    return [{name: _masked(memory, current[names[name]] or []) for name, memory in store.items()}
            for store, names in zip(stores, digests, strict=False)]
