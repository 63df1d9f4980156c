"""Memory names as people give them: a title becomes a file name, and a title, slug or file name finds one."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from ..errors import InputRejected
from .memory import INDEX_NAME, MAX_NAME_LEN, NAME_RE, TYPES, check_name, sanitize_line

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_MAX = 60


def is_file_form(raw: str) -> bool:
    """Whether ``raw`` already is a file name (``.md`` optional): it is then used as given."""
    name = raw if raw.endswith(".md") else f"{raw}.md"
    return len(name) <= MAX_NAME_LEN and bool(NAME_RE.fullmatch(name)) and name.lower() != INDEX_NAME.lower()


def names_a_file(raw: str, existing: Iterable[str] = ()) -> bool:
    """Whether ``raw`` given as a new memory's name is its file name rather than a title in words:
    it ends in ``.md``, starts with a type's prefix (``project_deploy-target``), or is the file name of
    a memory that exists. A bare word (``Weather``) is a title, as ``Deploy target`` is."""
    if not is_file_form(raw):
        return False
    if raw.endswith(".md") or ("_" in raw and raw.split("_", 1)[0] in TYPES):
        return True
    name = f"{raw}.md".lower()
    return any(known.lower() == name for known in existing)


def slugify(title: str) -> str:
    """Lower-case ASCII words joined by '-', at most 60 characters, cut at a word.

    Accented letters lose their accents and other scripts are transliterated (``部署`` → ``bushu``), so a
    title in any language gives a readable file name; what no table covers (private use) is dropped.
    """
    if not title.isascii():
        # Imported only here: anyascii loads importlib.resources, ~25 ms of an `add` whose title is ASCII.
        from anyascii import anyascii

        title = anyascii(title)
    words = _NOT_SLUG.sub(" ", title.lower()).split()
    slug = ""
    for word in words:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > _SLUG_MAX:
            break
        slug = candidate
    return slug or (words[0][:_SLUG_MAX] if words else "")


def fold_title(text: str) -> str:
    """Case and whitespace folded: how two spellings of one title compare."""
    return " ".join(text.casefold().split())


def new_file_name(title: str, mtype: str, taken: Mapping[str, object]) -> str:
    """``<type>_<slug>.md``, numbered ``-2``, ``-3``… past a name ``taken`` holds (case-insensitively)."""
    slug = slugify(title)
    if not slug:
        import hashlib

        slug = "note-" + hashlib.sha256(title.encode("utf-8")).hexdigest()[:8]
    lower = {name.lower() for name in taken}
    base = f"{mtype}_{slug}"
    name, n = f"{base}.md", 2
    while name.lower() in lower:
        name = f"{base}-{n}.md"
        n += 1
    check_name(name)
    return name


# Characters that read as a path separator once normalised or transliterated (NFKC, anyascii).
_SEPARATORS = frozenset("/\\\u2044\u2215\u2216\u29f5\u29f8\u29f9\ufe68\uff0f\uff3c")
_ENCODED = re.compile(r"%(?:2f|5c|2e|00)", re.IGNORECASE)


def refuse_pathlike(raw: str) -> None:
    """Refuse a name that looks like a path: a separator (also encoded, or one NFKC turns into ``/``), a
    leading dot, a NUL. Words never look like a path, and the slug of ``../seed`` is ``seed``: taken as a
    name, it would find another memory than the one meant."""
    text = raw if raw.isascii() else _nfkc(raw)
    if (text.lstrip().startswith(".") or "\0" in text or _ENCODED.search(text)
            or not _SEPARATORS.isdisjoint(text) or not _SEPARATORS.isdisjoint(raw)):
        raise InputRejected(f"{sanitize_line(raw)[:80]!r} looks like a path, not a memory name", code="memory.name",
                            hint='name a memory in words ("Deploy target") or by its file name (project_deploy.md)')


def _nfkc(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFKC", text)


def title_of(raw: str) -> str:
    title = sanitize_line(raw)
    if not title:
        raise InputRejected("a memory needs a name", code="memory.name",
                            hint='give it in words, e.g. memfold add "Deploy target" -d ...')
    refuse_pathlike(title)
    return title


def _stem(file: str) -> str:
    return file.removesuffix(".md").lower()


def matches(titles: Mapping[str, str | None], raw: str) -> list[str]:
    """The files ``raw`` names: its file name (``.md`` optional, any case); else every file whose
    title, slug, or slug without the type prefix is ``raw``. A name that looks like a path names none."""
    refuse_pathlike(raw)
    wanted = raw if raw.lower().endswith(".md") else f"{raw}.md"
    exact = [file for file in titles if file.lower() == wanted.lower()]
    if exact:
        return exact
    folded = fold_title(raw)
    slug = slugify(raw) if raw.strip() else ""
    found = []
    for file, title in titles.items():
        stem = _stem(file)
        bare = stem.split("_", 1)[1] if "_" in stem else stem
        if (title is not None and fold_title(title) == folded) or (slug and slug in (stem, bare)):
            found.append(file)
    return sorted(found)


def resolve(titles: Mapping[str, str | None], raw: str) -> str:
    """The one file ``raw`` names; none or several is a clear error (exit 1)."""
    found = matches(titles, raw)
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputRejected(f"no memory named {raw!r}", code="memory.not-found",
                            hint="`memfold list` shows the names; a title, its slug or the file name works")
    raise InputRejected(
        f"{raw!r} names {len(found)} memories: {', '.join(found)}", code="memory.ambiguous",
        hint="give the file name of the one you mean", data={"candidates": found},
    )

