"""What every validation rule reads: the plan, the run's manifest, the pre-state and collaborators."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import InputRejected, Issue, UsageError
from ..frozen import FrozenValue
from ..fsutil import sha256_bytes
from ..privacy import RuleSet
from ..state.model import PreState
from ..store.memory import INDEX_NAME, Memory, is_memory_name, parse_memory
from ..store.state import Limits

IDENTITY = ("runId", "scopeKey", "scopeDigest", "artifactHash")
ARTIFACTS = ("inventory", "staleness", "grounding", "report")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOW_LIMIT = 80
_SCAN_LIMIT = 4096


def json_path(*parts: str | int) -> str:
    """``$.operations[3].content`` from ("operations", 3, "content")."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _KEY_RE.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


def valid_name(name: object) -> bool:
    """``is_memory_name`` plus a whole-string match: ``$`` in the pattern also accepts a final newline."""
    return isinstance(name, str) and "\n" not in name and is_memory_name(name)


class ManifestView(FrozenValue):
    """The few manifest fields validation binds the plan to, type-checked once."""

    __slots__ = ("identity", "selected")
    identity: dict[str, str]
    selected: tuple[str, ...]

    def __init__(self, identity: dict[str, str], selected: tuple[str, ...]) -> None:
        self._set(identity=identity, selected=selected)

    @classmethod
    def from_manifest(cls, manifest: object) -> ManifestView:
        # The manifest is written by the parent, so a malformed one is a caller error, not a plan issue.
        if not isinstance(manifest, dict):
            raise UsageError("the run manifest is not a JSON object", code="manifest.invalid")
        identity: dict[str, str] = {}
        for key in IDENTITY:
            value = manifest.get(key)
            if not isinstance(value, str):
                raise UsageError(f"the run manifest has no string {key}", code="manifest.invalid")
            identity[key] = value
        selected = manifest.get("selected")
        if not isinstance(selected, list) or not all(valid_name(n) for n in selected):
            raise UsageError("the run manifest's selected is not a list of memory file names",
                             code="manifest.invalid")
        return cls(identity, tuple(selected))


class Context:
    """Inputs of one validation. ``broken`` lists top-level plan fields the schema rejected."""

    # No __slots__: the derived views below are cached_property values in the instance dict.
    plan: dict[str, Any]
    manifest: ManifestView
    pre: PreState
    repo_root: Path
    ruleset: RuleSet | None
    allow_publish: bool
    limits: Limits
    broken: frozenset[str]
    _labels: dict[str, str]

    def __init__(self, plan: dict[str, Any], manifest: ManifestView, pre: PreState, repo_root: Path,
                 ruleset: RuleSet | None, allow_publish: bool, limits: Limits, broken: frozenset[str] = frozenset(),
                 labels: dict[str, str] | None = None) -> None:
        self.plan = plan
        self.manifest = manifest
        self.pre = pre
        self.repo_root = repo_root
        self.ruleset = ruleset
        self.allow_publish = allow_publish
        self.limits = limits
        self.broken = broken
        self._labels = {} if labels is None else labels
        self._contents: dict[int, Content] = {}

    def __repr__(self) -> str:
        return f"Context(plan={self.plan!r}, manifest={self.manifest!r})"

    def content(self, index: int, op: dict[str, Any]) -> Content:
        """Operation ``index``'s content as bytes, hash and parsed memory, each made once for every rule
        that needs it (three rules read each operation's content)."""
        found = self._contents.get(index)
        if found is None or found.op is not op:
            found = Content(op)
            self._contents[index] = found
        return found

    def intact(self, key: str) -> bool:
        return key not in self.broken

    def items(self, key: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index, item) of a plan array; callers only use it on fields the schema accepted."""
        value = self.plan.get(key)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield index, item

    @cached_property
    def selected(self) -> frozenset[str]:
        return frozenset(self.manifest.selected)

    def harness_names(self) -> set[str]:
        return set(self.pre.memories)

    def public_names(self) -> set[str]:
        return {n for n in self.pre.public.hashes if n != INDEX_NAME}

    def label(self, name: str) -> str:
        """A memory name for a message, withheld if the privacy rules flag the name itself."""
        cached = self._labels.get(name)
        if cached is None:
            cached = self.show(name, quote=False)
            self._labels[name] = cached
        return cached

    def redacted(self, message: str, fallback: str) -> str:
        """``message`` unless the privacy rules flag something in it (parsers quote bad values)."""
        if self.ruleset is not None and self.ruleset.scan(message, "<message>"):
            return fallback
        return message

    def show(self, value: str, *, quote: bool = True) -> str:
        """An untrusted string made fit for a message: cut short and withheld if it looks secret."""
        if self.ruleset is not None:
            # Scan past the cut, so a secret that starts in the shown part is caught whole.
            head = value[:_SCAN_LIMIT]
            findings = self.ruleset.scan(head, "<message>") or self.ruleset.scan_name(head)
            if findings:
                return f"<withheld: matches privacy rule {findings[0].rule_id}>"
        text = value if len(value) <= _SHOW_LIMIT else value[:_SHOW_LIMIT] + "…"
        return repr(text) if quote or not text.isprintable() else text


class Content:
    """One operation's content: its UTF-8 bytes (None when it holds a lone surrogate), their sha256
    and the memory they parse as (or the error saying why not), each found on first ask."""

    __slots__ = ("op", "data", "_digest", "_memory", "_error")

    def __init__(self, op: dict[str, Any]) -> None:
        self.op = op
        try:
            self.data: bytes | None = bytes(op["content"].encode("utf-8"))
        except UnicodeEncodeError:
            self.data = None
        self._digest: str | None = None
        self._memory: Memory | None = None
        self._error: InputRejected | None = None

    @property
    def digest(self) -> str:
        assert self.data is not None
        if self._digest is None:
            self._digest = sha256_bytes(self.data)
        return self._digest

    def memory(self) -> Memory:
        """The parsed memory; raises the parser's InputRejected (again) when it does not parse."""
        if self._memory is None and self._error is None:
            assert self.data is not None
            try:
                self._memory = parse_memory(self.data, self.op["name"])
            except InputRejected as exc:
                self._error = exc
        if self._error is not None:
            raise self._error
        assert self._memory is not None
        return self._memory


class Subject:
    """``operations[3] (rewrite name.md)``, built only when a message needs it: a label costs a scan."""

    def __init__(self, ctx: Context, artifact: str, index: int, name: str, kind: str = "") -> None:
        self.ctx, self.artifact, self.index, self.name, self.kind = ctx, artifact, index, name, kind

    def __str__(self) -> str:
        kind = f"{self.kind} " if self.kind else ""
        return f"{self.artifact}[{self.index}] ({kind}{self.ctx.label(self.name)})"


Rule = Callable[[Context], Iterator[Issue]]


class RuleSpec(FrozenValue):
    """A registered rule. It runs only if the fields in ``needs`` passed the schema; it counts as
    a passed check only if every field in ``reads`` did (it skips broken parts by itself)."""

    __slots__ = ("name", "check", "needs", "reads", "needs_rules")
    name: str
    check: Rule
    needs: tuple[str, ...]
    reads: tuple[str, ...]
    needs_rules: bool

    def __init__(self, name: str, check: Rule, needs: tuple[str, ...] = (), reads: tuple[str, ...] = (),
                 needs_rules: bool = False) -> None:
        self._set(name=name, check=check, needs=needs, reads=reads, needs_rules=needs_rules)
