"""What a mirror file's bytes say besides its memory: git's conflict markers, the visibility it declares."""

from __future__ import annotations


def has_conflict_markers(data: bytes) -> bool:
    """Whether git left a merge's conflict markers in the file: a line opening one and a line closing one
    (a line of equals signs alone is also a Markdown heading's underline)."""
    lines = data.splitlines()
    return any(line.startswith(b"<<<<<<< ") for line in lines) and any(line.startswith(b">>>>>>> ") for line in lines)


def _head(data: bytes) -> bytes | None:
    """The frontmatter's bytes, without the opening and closing lines; None without frontmatter."""
    if not data.startswith(b"---"):
        return None
    end = data.find(b"\n---", 3)
    return None if end == -1 else data[:end]


def declared_visibility(data: bytes) -> bytes | None:
    """The ``visibility`` value the frontmatter states, as written; None when it states none."""
    head = _head(data)
    for line in (head.splitlines()[1:] if head is not None else []):
        key, sep, value = line.partition(b":")
        if sep and key.strip() == b"visibility":
            return value.strip()
    return None


def safe_by_place(data: bytes) -> bytes:
    """A mirror file as the store adopts it: one that states no ``visibility`` gets ``visibility: safe``
    (it sits in the git-tracked mirror: the reference tool's files have no such field); any other file
    is adopted byte for byte (the very object)."""
    head = _head(data)
    if head is None or declared_visibility(data) is not None:
        return data
    crlf = head.endswith(b"\r")
    line = b"visibility: safe\r" if crlf else b"visibility: safe"
    body = head[:-1] if crlf else head
    return body + (b"\r\n" if crlf else b"\n") + line + data[len(head):]
