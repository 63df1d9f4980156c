"""The memory tool's path rules: ``/memories`` and one level of memory files below it, nothing else.

The model names files by paths it chose. Every path goes through ``memory_target`` once, before
anything is read: only ``/memories`` itself (the folder) and ``/memories/<file name>`` with a name
memfold accepts (``store.memory.check_name``) pass. There are no directories below ``/memories``:
memfold keeps one flat folder of memories, so a nested path is refused with the flat name to use.
Nothing is decoded or normalised: a percent-escape, a backslash or a slash look-alike is refused
as written, so no two spellings reach the same file.
"""

from __future__ import annotations

import re

from ..errors import InputRejected
from ..safetext import one_line
from ..store.memory import INDEX_NAME, MAX_NAME_LEN, NAME_RE, windows_reserved

ROOT = "/memories"
MAX_PATH_CHARS = 512
# Characters a reader (or another system) takes for a path separator.
_SEPARATOR_LIKE = frozenset("\\\u2215\u2044\u29f8\uff0f\u2571\u29f5\ufe68\uff3c")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9_-]+")

FORM = "/memories/<name>.md (letters, digits, '_' and '-', starting with a letter or digit)"


class PathRefused(InputRejected):
    """A path the memory tool does not map to a memory; ``code`` says which rule refused it."""

    default_code = "memtool.path"


def shown(path: str) -> str:
    """A path as it may appear in a message: one visible line, cut short."""
    text = one_line(path)
    return text if len(text) <= 80 else text[:77] + "..."


def suggest(raw: str) -> str:
    """A flat file name close to what the model asked for (``notes/todo.txt`` -> ``notes_todo.md``)."""
    stem = raw.rsplit(".", 1)[0] if raw.lower().endswith((".md", ".txt", ".xml", ".json", ".yaml", ".yml")) \
        else raw
    slug = _UNSAFE_RUN.sub("_", stem.replace("/", "_")).strip("_-")[:60].strip("_-")
    name = f"{slug or 'notes'}.md"
    if name.lower() == INDEX_NAME.lower() or windows_reserved(name):
        name = f"{slug}_notes.md"
    return name


def memory_target(path: object) -> str | None:
    """The memory file ``path`` names, or None for the ``/memories`` folder itself.

    Raises ``PathRefused`` (exit 1, nothing read) with a code per rule and a message the model can act on.
    """
    if not isinstance(path, str):
        raise PathRefused("the path must be a string such as /memories/notes.md", code="memtool.path")
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"the path is {len(path)} characters long; memory paths are short: {FORM}",
                          code="memtool.path")
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in path):
        raise PathRefused(f"the path {shown(path)!r} holds a control character; use {FORM}",
                          code="memtool.path")
    if _ESCAPE.search(path) or any(ch in _SEPARATOR_LIKE for ch in path):
        raise PathRefused(f"the path {shown(path)!r} holds an encoded or look-alike separator; paths are "
                          f"taken as written, never decoded: use {FORM}", code="memtool.encoded")
    parts = path.split("/")
    if any(part in (".", "..") for part in parts):
        raise PathRefused(f"the path {shown(path)!r} has a '.' or '..' part; memory paths never leave "
                          f"/memories and name one file directly: {FORM}", code="memtool.traversal")
    if path in (ROOT, ROOT + "/"):
        return None
    if not path.startswith(ROOT + "/"):
        raise PathRefused(f"the path {shown(path)!r} is outside /memories; the memory tool only reads and "
                          f"writes /memories and the files directly in it: {FORM}", code="memtool.outside")
    rest = path[len(ROOT) + 1:]
    if "/" in rest:
        raise PathRefused(f"the path {shown(path)!r} is below a directory; memfold keeps memories in one flat "
                          f"folder, with no directories below /memories: use /memories/{suggest(rest)}",
                          code="memtool.directory")
    if rest.lower() == INDEX_NAME.lower():
        raise PathRefused(f"{ROOT}/{rest} is memfold's index of the memories, not a memory; `view /memories` "
                          "lists them, and every other name is free", code="memtool.reserved")
    if len(rest) > MAX_NAME_LEN or not NAME_RE.fullmatch(rest):
        raise PathRefused(f"{shown(rest)!r} is not a name memfold gives a memory file; use {FORM}, for "
                          f"example /memories/{suggest(rest)}", code="memory.name")
    if windows_reserved(rest):
        raise PathRefused(f"{rest} is a device name on Windows, where the project's memories could not be "
                          f"checked out; pick another name, for example /memories/{suggest(rest)}",
                          code="memory.name-reserved")
    return rest


def file_path(name: str) -> str:
    """The path the model uses for the memory file ``name``."""
    return f"{ROOT}/{name}"
