"""The base of a sync: the mirror as this user's last transaction in this work tree left it.

It is the ``finalHashes.public`` of the receipt that this user's chain head, as the work tree holds it
now, names (git carries the head with the mirror files, so an older checkout brings an older base),
and for each name held back or in conflict at that time the version both sides last agreed on. What
differs from the base in the mirror now came from outside: a teammate's change that git brought, or a
hand edit. Without a head there is no base that git carried: the newest receipt written from this work
tree stands in, a file missing from the mirror is then no deletion, and a version this store's own
receipts ever recorded is no news.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..frozen import Frozen

# Where the base came from: the head in the work tree; else the newest receipt written from this work
# tree, or the newest of the log; none: nothing was ever written here.
SOURCES = ("head", "worktree", "log", "none")


class Base(Frozen):
    """The base mirror state (name to sha256) and the versions agreed on for names kept apart then."""

    __slots__ = ("public", "agreed", "seq", "receipt", "source", "seen")
    public: Mapping[str, str]
    agreed: Mapping[str, str | None]
    seq: int | None
    receipt: str | None
    source: str
    # Whether this store's receipts ever recorded (name, sha256) in the mirror: asked only without a head.
    seen: Callable[[str, str], bool] | None

    def __init__(self, public: Mapping[str, str], agreed: Mapping[str, str | None] | None = None, *,
                 seq: int | None = None, receipt: str | None = None, source: str = "none",
                 seen: Callable[[str, str], bool] | None = None) -> None:
        assert source in SOURCES
        self._set(public=public, agreed={} if agreed is None else agreed, seq=seq, receipt=receipt, source=source,
                  seen=seen)

    def version(self, name: str) -> str | None:
        """The version of ``name`` both sides last agreed on (None: no file)."""
        return self.agreed[name] if name in self.agreed else self.public.get(name)

    @property
    def knows_deletions(self) -> bool:
        """Whether a file missing from the mirror was deleted there: only a base git carried can tell."""
        return self.source == "head"

    def known_version(self, name: str, digest: str) -> bool:
        """Whether this store wrote ``digest`` as ``name`` before (an older checkout, not a change)."""
        return self.source != "head" and self.seen is not None and self.seen(name, digest)

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "seq": self.seq, "receipt": self.receipt}


NO_BASE = Base({}, source="none")
