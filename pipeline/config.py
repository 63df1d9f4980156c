"""The user config (``<home>/config.yaml``): each section is validated on its own, and never rewritten.

The pydantic models in ``config_models`` validate the file. Importing pydantic costs more than a
whole ``memfold add``, so the validated sections (and the problems found) are cached under
``<home>/cache/config.json`` by the identity of the file and of the validating modules; any change to
either validates again. A missing file means ``DEFAULTS``, with no pydantic at all.
"""

from __future__ import annotations

import json
import os

from .errors import ConfigError, Issue
from .fsutil import read_bounded
from .sandbox import DEFAULT_LIMITS
from .store import filecache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from .store.state import Limits

# Every section's defaults; the models in config_models take theirs from here.
DEFAULTS: dict[str, dict[str, Any]] = {
    "limits": {"max_file_bytes": 64 * 1024, "max_files": 4096, "index_lines": 200, "index_bytes": 25_600,
               "worker_output_bytes": 16 << 20, "worker_output_lines": 65_536, "worker_output_line_bytes": 1 << 20,
               "plan_bytes": 8 << 20, "plan_depth": 128},
    "lock": {"timeout": 5.0},
    "runs": {"keep": 50},
    "workers": {},
    "privacy": {"rules": [], "allowlist": []},
    "inject": {"guidance": True, "max_bytes": 16_000, "max_files": 8, "mask_credentials": True},
    "consolidate": {"due_hours": 24.0, "due_writes": 20},
    "mcp": {"allow_publish": False},
}
WORKER_DEFAULTS: dict[str, Any] = {"timeout": 600.0, "env": [], "network": False, "read_paths": [],
                                   "limits": dict(DEFAULT_LIMITS)}
CACHE_NAME = "config.json"


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
            return {key: Section(f"workers.{key}", spec) for key, spec in (values or {}).items()}
        return Section(name, values if values is not None else DEFAULTS[name])

    @property
    def limits(self) -> Any:
        return self.section("limits")

    @property
    def lock(self) -> Any:
        return self.section("lock")

    @property
    def runs(self) -> Any:
        return self.section("runs")

    @property
    def privacy(self) -> Any:
        return self.section("privacy")

    @property
    def inject(self) -> Any:
        return self.section("inject")

    @property
    def consolidate(self) -> Any:
        return self.section("consolidate")

    @property
    def mcp(self) -> Any:
        return self.section("mcp")

    @property
    def workers(self) -> dict[str, Any]:
        return self.section("workers")  # type: ignore[no-any-return]

    def store_limits(self) -> Limits:
        from .store.state import Limits

        limits = self.limits
        return Limits(max_file_bytes=limits.max_file_bytes, max_files=limits.max_files,
                      index_lines=limits.index_lines, index_bytes=limits.index_bytes)

    def extract_limits(self) -> Any:
        """Bounds on a worker's stdout and its plan (DESIGN.md defaults, configurable)."""
        from .worker.extract import ExtractLimits

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

    try:
        text = raw.decode("utf-8")
        try:
            # libyaml's loader is the same safe loader, several times faster; errors are re-raised by
            # the Python loader so their messages stay the same.
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            data = yaml.safe_load(text)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return None, [Issue("config.yaml", "$", f"not valid YAML: {str(exc).splitlines()[0]}")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return None, [Issue("config.shape", "$", "the top level must be a mapping")]
    return data, []


def _validator_identity() -> list[Any]:
    """What decides the validation result besides the file: this module and the models."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [filecache.identity(os.path.join(here, name)) for name in ("config.py", "config_models.py")]


def load_config(path: Path | str) -> Config:
    """Read the config; a missing file means defaults. Problems are kept per section, not raised here."""
    source = filecache.identity(path)
    if source is None:
        return Config(path, {}, [])
    key = [source, _validator_identity()]
    cache = filecache.cache_path(os.path.dirname(os.path.abspath(path)), CACHE_NAME)
    cached = filecache.load(cache, key)
    if isinstance(cached, dict) and isinstance(cached.get("values"), dict):
        problems = [Issue(*p) for p in cached.get("problems", [])]
        return Config(path, cached["values"], problems)
    values, problems = _validate(path)
    filecache.save(cache, key, {"values": values, "problems": [[p.code, p.path, p.message] for p in problems]},
                   [source])
    return Config(path, values, problems)


def _validate(path: Path | str) -> tuple[dict[str, Any], list[Issue]]:
    data, problems = _parse(path)
    if data is None:
        return {}, problems
    from .config_models import validate_sections

    values, found = validate_sections(data)
    return values, problems + found


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the whole file, generated from the section models."""
    from .config_models import config_schema as generate

    return generate()
