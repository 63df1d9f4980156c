"""The user config (``<home>/config.yaml``): each section is validated on its own, and never rewritten.

The pydantic models defined by ``models.section_models`` validate the file. Importing pydantic costs more than a
whole ``memfold add``, so the models are built on first use only, and the validated sections (and the
problems found) are cached under
``<home>/cache/config-<install>.json`` by the identity of the file and of the validating modules; any
change to either validates again. Each installation has a file of its own (see ``cache_file``). A
missing file means ``DEFAULTS``, with no pydantic at all.
"""

from __future__ import annotations

import os

from ..errors import ConfigError, Issue
from ..fsutil import read_bounded, refuse_unsafe_owner, sha256_bytes
from ..store import filecache
from ..store import jsontext as json
from .defaults import DEFAULTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from ..store.state import Limits
    from ..worker.extract import ExtractLimits

CACHE_PREFIX = "config-"
LEGACY_CACHE = "config.json"
# The installed package's directory: one per installation.
_INSTALL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Section:
    """One validated section (or a worker entry): its values as read-only attributes."""

    __slots__ = ("_name", "_values")

    def __init__(self, name: str, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_name", name)
        # A private copy: callers may not change the defaults or the cache through it.
        object.__setattr__(self, "_values", json.loads(json.dumps(dict(values))))

    def __getattr__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(f"config section {self._name!r} has no field {key!r}") from None

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("config values are read-only (memfold never rewrites the config)")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Section) and (self._name, self._values) == (other._name, other._values)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Section({self._name!r}, {self._values!r})"

    def as_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._values))  # type: ignore[no-any-return]


class LimitsSection(Section):
    __slots__ = ()
    max_file_bytes: int
    max_files: int
    index_lines: int
    index_bytes: int
    worker_output_bytes: int
    worker_output_lines: int
    worker_output_line_bytes: int
    plan_bytes: int
    plan_depth: int
    mirror_bytes: int


class LockSection(Section):
    __slots__ = ()
    timeout: float


class RunsSection(Section):
    __slots__ = ()
    keep: int


class PrivacySection(Section):
    __slots__ = ()
    rules: list[dict[str, Any]]
    allowlist: list[str]


class InjectSection(Section):
    __slots__ = ()
    guidance: bool
    max_bytes: int
    max_files: int
    mask_credentials: bool


class ConsolidateSection(Section):
    __slots__ = ()
    due_hours: float
    due_writes: int
    lock_wait: float
    worker: str


class McpSection(Section):
    __slots__ = ()
    allow_publish: bool
    max_request_bytes: int


class UsageSection(Section):
    __slots__ = ()
    dormant_days: int
    forget_dormant: bool


class WorkerSection(Section):
    """One ``workers.NAME`` entry."""

    __slots__ = ()
    argv: list[str]
    timeout: float
    env: list[str]
    network: bool
    read_paths: list[str]
    limits: dict[str, int]


_SECTION_TYPES: dict[str, type[Section]] = {
    "limits": LimitsSection, "lock": LockSection, "runs": RunsSection, "privacy": PrivacySection,
    "inject": InjectSection, "consolidate": ConsolidateSection, "mcp": McpSection,
    "usage": UsageSection,
}


class Config:
    """Valid sections are usable; a command touching a broken section gets its ConfigError (exit 2)."""

    def __init__(self, path: Path | str, values: dict[str, Any], problems: list[Issue]) -> None:
        self.path = path
        self._values = values
        self.problems = problems

    def section(self, name: str) -> Any:
        bad = [p for p in self.problems if p.path in ("$", f"$.{name}") or p.path.startswith(f"$.{name}.")]
        if bad:
            details = "; ".join(f"{p.path}: {p.message}" for p in bad[:5])
            raise ConfigError(f"{self.path}: {details}", code="config.invalid",
                              hint="fix the file (memfold never rewrites it); `memfold config check` explains")
        values = self._values.get(name)
        if name == "workers":
            return {key: WorkerSection(f"workers.{key}", spec) for key, spec in (values or {}).items()}
        return _SECTION_TYPES.get(name, Section)(name, values if values is not None else DEFAULTS[name])

    # Typed accessors: each section's fields as the models validated them.
    @property
    def limits(self) -> LimitsSection:
        return self.section("limits")  # type: ignore[no-any-return]

    @property
    def lock(self) -> LockSection:
        return self.section("lock")  # type: ignore[no-any-return]

    @property
    def runs(self) -> RunsSection:
        return self.section("runs")  # type: ignore[no-any-return]

    @property
    def privacy(self) -> PrivacySection:
        return self.section("privacy")  # type: ignore[no-any-return]

    @property
    def inject(self) -> InjectSection:
        return self.section("inject")  # type: ignore[no-any-return]

    @property
    def consolidate(self) -> ConsolidateSection:
        return self.section("consolidate")  # type: ignore[no-any-return]

    @property
    def mcp(self) -> McpSection:
        return self.section("mcp")  # type: ignore[no-any-return]

    @property
    def usage(self) -> UsageSection:
        return self.section("usage")  # type: ignore[no-any-return]

    @property
    def workers(self) -> dict[str, WorkerSection]:
        return self.section("workers")  # type: ignore[no-any-return]

    def store_limits(self) -> Limits:
        from ..store.state import Limits

        limits = self.limits
        return Limits(max_file_bytes=limits.max_file_bytes, max_files=limits.max_files,
                      index_lines=limits.index_lines, index_bytes=limits.index_bytes,
                      mirror_bytes=limits.mirror_bytes)

    def extract_limits(self) -> ExtractLimits:
        """Bounds on a worker's stdout and its plan (DESIGN.md defaults, configurable)."""
        from ..worker.extract import ExtractLimits

        limits = self.limits
        return ExtractLimits(max_stdout_bytes=limits.worker_output_bytes, max_lines=limits.worker_output_lines,
                             max_line_bytes=limits.worker_output_line_bytes, max_plan_bytes=limits.plan_bytes,
                             max_depth=limits.plan_depth)


def _parse(path: Path | str) -> tuple[Any, list[Issue]]:
    try:
        raw = read_bounded(path, 1 << 20)
    except FileNotFoundError:
        return {}, []
    except Exception as exc:
        return None, [Issue("config.unreadable", "$", str(exc))]
    import yaml

    from ..store.yamltext import load_yaml

    try:
        text = raw.decode("utf-8")
        try:
            # libyaml's loader is the same safe loader, several times faster; errors are re-raised by
            # the Python loader so their messages stay the same.
            data = load_yaml(text)
        except yaml.YAMLError:
            data = load_yaml(text, fast=False)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return None, [Issue("config.yaml", "$", f"not valid YAML: {str(exc).splitlines()[0]}")]
    except json.TooDeep as exc:
        return None, [Issue("config.depth", "$", f"the file is {exc}")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return None, [Issue("config.shape", "$", "the top level must be a mapping")]
    return data, []


def _validator_identity() -> list[Any]:
    """What decides the validation result besides the file: this package's modules (the models)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [filecache.identity(os.path.join(here, name)) for name in ("__init__.py", "defaults.py", "models.py")]


def cache_file(home: Path | str, install: str = _INSTALL) -> str:
    """Where the installation at ``install`` keeps the validated copy of the config in ``home``.

    One file per installation: two installations sharing a home (a tool installed twice, a checkout
    beside an installed copy) have different validating modules, and with one file between them
    each would find the other's entry and validate with pydantic and YAML on every run.
    """
    return filecache.cache_path(home, f"{CACHE_PREFIX}{sha256_bytes(install.encode('utf-8'))[:16]}.json")


def load_config(path: Path | str) -> Config:
    """Read the config; a missing file means defaults. Problems are kept per section, not raised here.

    A config that another user owns or may write, or that lies in a directory others may write, is
    refused (``UnsafeOwner``): it could switch off the privacy gate or name a worker command.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Config(path, {}, [])
    refuse_unsafe_owner(path, st, "config file")
    folder = os.path.dirname(os.path.abspath(path))
    refuse_unsafe_owner(folder, os.stat(folder), "config directory")
    source = filecache.identity_of(st)
    key = [source, _validator_identity()]
    cache = cache_file(os.path.dirname(os.path.abspath(path)))
    cached = filecache.load(cache, key)
    if isinstance(cached, dict) and isinstance(cached.get("values"), dict):
        problems = [Issue(*p) for p in cached.get("problems", [])]
        return Config(path, cached["values"], problems)
    values, problems = _validate(path)
    filecache.save(cache, key, {"values": values, "problems": [[p.code, p.path, p.message] for p in problems]},
                   [source])
    _drop_shared_cache(os.path.dirname(cache))
    return Config(path, values, problems)


def _drop_shared_cache(folder: str) -> None:
    """Remove the one cache file all installations shared before ``cache_file`` (nothing reads it now).

    Here, where the config is validated again, not on every load: the per-prompt path keeps its syscalls.
    """
    if os.path.islink(folder):
        return
    try:
        os.unlink(os.path.join(folder, LEGACY_CACHE))
    except OSError:
        pass


def _validate(path: Path | str) -> tuple[dict[str, Any], list[Issue]]:
    data, problems = _parse(path)
    if data is None:
        return {}, problems
    from .models import validate_sections

    values, found = validate_sections(data)
    return values, problems + found
