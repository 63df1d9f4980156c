"""The RE2 programs of the privacy rules: patterns, allowlists and the keyword set, each compiled on its
first use (the shipped rules) or at once (a user's rules, so their mistakes surface when loaded)."""

from __future__ import annotations

from functools import partial

from ..errors import ConfigError, Issue
from .checks import CHECKS
from .model import Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def compile_pattern(pattern: str, where: str, *, capture: bool = True) -> Any:
    """``pattern`` compiled; without ``capture`` its groups capture nothing (a search that needs only
    where the whole match lies skips the submatch engines)."""
    import re2

    options = re2.Options()
    # A rejected user pattern is reported through ConfigError; RE2's own stderr log is noise.
    options.log_errors = False
    options.never_capture = not capture
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        raise ConfigError(
            f"{where}: pattern is not accepted by RE2 ({exc})",
            issues=[Issue("privacy.pattern", where, str(exc))],
        ) from exc


class LazyPattern:
    """An RE2 pattern compiled on first use.

    A rule runs only where one of its keywords occurs, so most shipped patterns are never needed in
    a process, and compiling all of them costs ~30 ms of every write. The shipped rules are compiled
    whole by the test suite; user rules are compiled when loaded, so their mistakes surface at once.
    """

    __slots__ = ("_compiled", "_source", "_where", "_find")

    def __init__(self, source: str, where: str) -> None:
        self._source = source
        self._where = where
        self._compiled: Any = None
        self._find: Callable[[bytes, int, int], list[tuple[int, int]]] | None = None

    @property
    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = compile_pattern(self._source, self._where)
        return self._compiled

    @property
    def source(self) -> str:
        return self._source

    @property
    def ready(self) -> bool:
        """Compiled already: running it costs no more than any cheaper test that could skip it."""
        return self._compiled is not None

    @property
    def groups(self) -> int:
        return int(self.compiled.groups)

    def finditer(self, data: bytes) -> Any:
        return self.compiled.finditer(data)

    def search(self, data: bytes) -> Any:
        return self.compiled.search(data)

    def found(self, data: bytes) -> bool:
        """Whether the pattern matches anywhere in ``data``: ``search`` without building a match."""
        if self._find is None:
            self._find = span_finder(self)
        return self._find(data, 0, len(data))[0][1] >= 0


def pattern_source(pattern: Any) -> str:
    """The text of a ``LazyPattern`` or of a compiled program."""
    source = getattr(pattern, "source", None)
    if source is None:
        source = pattern.pattern
    return source.decode("utf-8") if isinstance(source, bytes) else str(source)


def found(pattern: Any, data: bytes) -> bool:
    """Whether ``pattern`` (a ``LazyPattern`` or a compiled program) matches anywhere in ``data``."""
    check = getattr(pattern, "found", None)
    return bool(check(data)) if check is not None else pattern.search(data) is not None


# A span of a group that took no part in the match, and of a whole match that was not found.
NO_SPAN = (-1, -1)


def span_finder(pattern: Any) -> Callable[[bytes, int, int], list[tuple[int, int]]]:
    """``find(data, pos, len(data))``: the spans of the whole match and of each group of ``pattern``'s first
    match in ``data`` at or after byte ``pos`` (``NO_SPAN`` first when there is none), as ``finditer``
    finds them.

    The compiled program's own match call, without the wrapper's generator and match object around it:
    a scan searches ~35 rules per memory and most find nothing, so that wrapper's work bought nothing.
    """
    import re2

    compiled = getattr(pattern, "compiled", pattern)
    program = getattr(compiled, "_regexp", None)  # google-re2's own program, behind its Python wrapper
    anchors = getattr(re2, "_Anchor", None)
    if program is not None and anchors is not None:
        return partial(program.Match, anchors.UNANCHORED)

    def find(data: bytes, pos: int, endpos: int) -> list[tuple[int, int]]:  # another binding: its own search
        found = compiled.search(data, pos, endpos)
        return [found.span(g) for g in range(compiled.groups + 1)] if found is not None else [NO_SPAN]

    return find


def compile_alternation(patterns: list[str], where: str, *, lazy: bool = False) -> Any:
    """One RE2 program for a whole allowlist, so a candidate costs one search, not N."""
    if not patterns:
        return None
    alternation = "|".join(f"(?:{p})" for p in patterns)
    if lazy:
        return LazyPattern(alternation, where)
    for index, pattern in enumerate(patterns):
        compile_pattern(pattern, f"{where}[{index}]")
    return compile_pattern(alternation, where)


def compile_rule(raw: dict[str, Any], source: str, *, lazy: bool = False) -> Rule:
    """One rule; ``lazy`` defers compiling its patterns to first use (for the tested shipped rules)."""
    rid = str(raw["id"])
    where = f"{source}: privacy rule {rid!r}"
    pattern = LazyPattern(str(raw["pattern"]), where) if lazy else compile_pattern(str(raw["pattern"]), where)
    group = int(raw.get("secret_group", 0))
    if not lazy and group > pattern.groups:
        raise ConfigError(f"{where}: secret_group {group} but the pattern has {pattern.groups} groups")
    check_name = raw.get("check")
    if check_name is not None and check_name not in CHECKS:
        raise ConfigError(f"{where}: unknown check {check_name!r}; known checks: {', '.join(sorted(CHECKS))}",
                          issues=[Issue("privacy.check", where, f"unknown check {check_name!r}")])
    params: dict[str, float] = {}
    for name in ("min_entropy", "max_gap"):
        if name in raw:
            params[name] = float(raw[name])
    return Rule(
        id=rid,
        category=str(raw["category"]),
        description=str(raw["description"]),
        source=source,
        pattern=pattern,
        keywords=tuple(str(k) for k in raw.get("keywords", ())),
        check=CHECKS[check_name] if check_name else None,
        check_params=params,
        secret_group=group,
        allowlist=compile_alternation(list(raw.get("allowlist", ())), f"{where} allowlist", lazy=lazy),
        preview_prefix=int(raw.get("preview_prefix", 0)),
        fallback=bool(raw.get("fallback", False)),
        screen=str(raw.get("screen", "")),
    )


def keyword_set(keywords: list[str]) -> Any:
    """A case-insensitive RE2 set of literal keywords, indexed like ``keywords``, compiled on its first
    match: a write whose mirror holds nothing new scans nothing, and compiling the set (with RE2's
    import) cost ~7 ms of every write."""
    return _LazyKeywordSet(keywords) if keywords else None


class _LazyKeywordSet:
    __slots__ = ("_keywords", "_compiled")

    def __init__(self, keywords: list[str]) -> None:
        self._keywords = keywords
        self._compiled: Any = None

    @property
    def compiled(self) -> Any:
        if self._compiled is None:
            import re2

            options = re2.Options()
            options.case_sensitive = False
            options.literal = True
            keyword_set = re2.Set.SearchSet(options)
            for keyword in self._keywords:
                keyword_set.Add(keyword)
            keyword_set.Compile()
            self._compiled = keyword_set
        return self._compiled

    def Match(self, data: bytes) -> Any:  # RE2 sets name it so
        return self.compiled.Match(data)
