"""The view of a text that the instruction mechanisms read: what a reader sees, mapped back to the original.

Format characters (zero-width, bidi controls, tags) are dropped, letters drawn in another style
(full-width, mathematical, circled) are folded with NFKC, and words mixing Latin with Cyrillic or
Greek lookalikes are read as Latin; every offset in the view maps back to the original text.
"""

from __future__ import annotations

from bisect import bisect_right

from . import instruction_patterns as P


def styled(ch: str) -> bool:
    """Letters drawn in another style: full-width, mathematical, circled, ligatures, super/subscripts.

    Only these are folded (NFKC): folding other scripts' characters (Thai SARA AM, Hangul jamo)
    would change the words the lexicons know.
    """
    code = ord(ch)
    return (0xFF00 <= code <= 0xFFEF or 0x1D400 <= code <= 0x1D7FF or 0x2460 <= code <= 0x24FF
            or 0x2100 <= code <= 0x214F or 0xFB00 <= code <= 0xFB06 or 0x2070 <= code <= 0x209F
            or 0x1F130 <= code <= 0x1F189 or 0xFE50 <= code <= 0xFE6F)


def fold_homoglyphs(text: str) -> str:
    """Words mixing Latin with Cyrillic or Greek lookalikes, read as Latin (``ignоre`` with a Cyrillic о)."""
    import re  # one character class, no repetition of a group: linear

    if re.search("[\u0370-\u04ff]", text) is None:
        return text
    mixed = re.compile("(?:[A-Za-z]+[\u0370-\u04ff]|[\u0370-\u04ff]+[A-Za-z])[A-Za-z\u0370-\u04ff]*")
    return mixed.sub(lambda m: m.group(0).translate(P.HOMOGLYPHS), text)


class View:
    """``text`` as a reader takes it, with a map back to the original offsets.

    Only non-ASCII characters change: format characters (zero-width, bidi, tags) are dropped, styled
    letters are folded with NFKC. ``_anchors`` holds (view offset, original offset) from each change
    on; between two anchors the view and the original run one for one.
    """

    __slots__ = ("text", "_views", "_origins")

    def __init__(self, text: str) -> None:
        self._views: list[int] = [0]
        self._origins: list[int] = [0]
        if text.isascii():
            self.text = text
            return
        import re
        import unicodedata  # a shared library to load: only for text that needs it

        pieces: list[str] = []
        done = shift = 0  # original characters copied so far; view offset minus original offset
        for match in re.finditer("[^\x00-\x7f]", text):
            index = match.start()
            ch = text[index]
            if unicodedata.category(ch) == "Cf":
                replacement = ""  # a reader does not see it
            elif styled(ch):
                replacement = unicodedata.normalize("NFKC", ch)
            else:
                continue
            pieces.append(text[done:index])
            pieces.append(replacement)
            for k in range(len(replacement)):
                self._views.append(index + shift + k)
                self._origins.append(index)
            shift += len(replacement) - 1
            done = index + 1
            self._views.append(done + shift)
            self._origins.append(done)
        pieces.append(text[done:])
        self.text = fold_homoglyphs("".join(pieces))  # one character for one: the anchors still hold

    def offset(self, index: int) -> int:
        at = bisect_right(self._views, index) - 1
        return self._origins[at] + index - self._views[at]
