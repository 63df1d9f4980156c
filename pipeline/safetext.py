"""Memory text made safe to show: on a terminal, in JSON a terminal may display, and inside the injected block.

A memory is untrusted input (a clone's mirror, a worker's plan, a pasted note). Shown raw it could
move the cursor, retitle the window or hide text (ESC, BEL, C1 controls), reorder what a reader sees
(bidi overrides and isolates), or, inside the block a host puts before the model, forge the block's
own structure. Each kind of output goes through one function here.
"""

from __future__ import annotations

# Read on every prompt (``memfold inject``): unicodedata is imported only for text that needs it.
_STRIP = frozenset({"Cc", "Cf", "Co", "Cs"})
_BREAKS = frozenset({"Zl", "Zp"})  # LINE/PARAGRAPH SEPARATOR end a line for a reader: treated as "\n"
_KEEP = frozenset("\n\t")
# Brackets a reader takes for < or > that NFKC does not fold onto them (full-width and small forms do).
_ANGLE_LIKE = frozenset(
    "\u2039\u203a\u00ab\u00bb\u27e8\u27e9\u3008\u3009\u300a\u300b\u2329\u232a\u276c\u276d\u276e\u276f"
    "\u2770\u2771\u29fc\u29fd\u1438\u1433\u02c2\u02c3\u2989\u298a\u2991\u2992\u27ea\u27eb\u22d6\u22d7"
    "\u226a\u226b\u2264\u2265\u2a7d\u2a7e"
)
_ESCAPED: dict[str, str] = {}


def _clean(text: str) -> str:
    import unicodedata  # a shared library to load: only for text that needs it

    out = []
    for ch in text:
        if ch in _KEEP:
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in _BREAKS:
            out.append("\n")
        elif category not in _STRIP:
            out.append(ch)
    return "".join(out)


def visible(text: str) -> str:
    """Text for a terminal: control, format (bidi, zero-width), private-use and surrogate code points dropped.

    Newlines and tabs stay; line and paragraph separators become newlines.
    """
    if text.isascii() and text.replace("\n", "").replace("\t", "").isprintable():
        return text  # printable ASCII has no character of the stripped categories
    return _clean(text)


def one_line(text: str) -> str:
    """A field shown on one line (a name, a description): every break becomes a space."""
    return " ".join(visible(text).split())


def _reference(ch: str) -> str:
    """``ch`` itself, or a numeric character reference when a reader could take it for markup."""
    escaped = _ESCAPED.get(ch)
    if escaped is None:
        import unicodedata

        folded = unicodedata.normalize("NFKC", ch)
        risky = ch in _ANGLE_LIKE or any(c in "<>&#|" for c in folded)
        escaped = f"&#x{ord(ch):x};" if risky else ch
        _ESCAPED[ch] = escaped
    return escaped


def for_block(text: str) -> str:
    """Text for inside the injected block: ``visible``, then every character that is or folds to markup escaped.

    ``&``, ``<`` and ``>`` become entities; any other character whose NFKC form holds ``<``, ``>``,
    ``&``, ``#`` or ``|`` (full-width and small forms) or that looks like an angle bracket (guillemets,
    mathematical and CJK angle brackets) becomes a numeric reference, so no memory can spell the
    block's closing tag in any script.
    """
    kept = visible(text)
    escaped = kept.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if escaped.isascii():
        return escaped
    return "".join(ch if ch.isascii() else _reference(ch) for ch in escaped)


def json_text(dumped: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with invisible code points as ``\\u`` escapes.

    The value is unchanged (JSON readers decode the escapes back); only a terminal showing it is spared
    raw bidi overrides and C1 controls, which ``ensure_ascii=False`` would otherwise pass through.
    """
    if dumped.isascii():
        return dumped
    import json
    import re
    import unicodedata

    hidden = _STRIP | _BREAKS

    def escape(match: re.Match[str]) -> str:
        ch = match.group()
        return json.dumps(ch)[1:-1] if unicodedata.category(ch) in hidden else ch

    # Only the non-ASCII characters are looked at: a large import report is mostly ASCII.
    return re.sub(r"[^\x00-\x7f]", escape, dumped)


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 memory``, ``2 memories``, ``1,024 files``: a count with its noun in the right number."""
    if n == 1:
        return f"1 {singular}"
    word = plural or (singular[:-1] + "ies" if singular.endswith("y") and singular[-2:-1] not in "aeiou"
                      else singular + "s")
    return f"{n:,} {word}"
