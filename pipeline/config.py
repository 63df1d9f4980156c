"""The user config (``<home>/config.yaml``): each section is validated on its own, and never rewritten."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError, Issue
from .fsutil import read_bounded
from .store.state import Limits


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsConfig(_Strict):
    max_file_bytes: int = Field(64 * 1024, ge=256, le=16 << 20)
    max_files: int = Field(4096, ge=1, le=1_000_000)
    index_lines: int = Field(200, ge=1)
    index_bytes: int = Field(25_600, ge=256)
    worker_output_bytes: int = Field(16 << 20, ge=1 << 16, le=1 << 32)
    worker_output_lines: int = Field(65_536, ge=16, le=1 << 26)
    plan_bytes: int = Field(8 << 20, ge=1 << 12, le=1 << 32)


class LockConfig(_Strict):
    timeout: float = Field(5.0, ge=0, le=3600)


class RunsConfig(_Strict):
    keep: int = Field(50, ge=1, le=100_000)


class WorkerConfig(_Strict):
    argv: list[str] = Field(min_length=1)
    timeout: float = Field(600.0, gt=0, le=86_400)
    env: list[str] = Field(default_factory=list)
    network: bool = False


class PrivacyConfig(_Strict):
    rules: list[dict[str, Any]] = Field(default_factory=list)
    allowlist: list[str] = Field(default_factory=list)


class InjectConfig(_Strict):
    guidance: bool = True
    max_bytes: int = Field(16_000, ge=512)
    max_files: int = Field(8, ge=0, le=1000)


class ConsolidateConfig(_Strict):
    due_hours: float = Field(24.0, gt=0)
    due_writes: int = Field(20, ge=1)


class Workers(BaseModel):
    model_config = ConfigDict(frozen=True)
    workers: dict[str, WorkerConfig] = Field(default_factory=dict)


SECTIONS: dict[str, type[BaseModel]] = {
    "limits": LimitsConfig, "lock": LockConfig, "runs": RunsConfig, "workers": Workers,
    "privacy": PrivacyConfig, "inject": InjectConfig, "consolidate": ConsolidateConfig,
}


class Config:
    """Valid sections are usable; a command touching a broken section gets its ConfigError (exit 2)."""

    def __init__(self, path: Path, values: dict[str, BaseModel], problems: list[Issue]) -> None:
        self.path = path
        self._values = values
        self.problems = problems

    def section(self, name: str) -> Any:
        bad = [p for p in self.problems if p.path in ("$", f"$.{name}") or p.path.startswith(f"$.{name}.")]
        if bad:
            details = "; ".join(f"{p.path}: {p.message}" for p in bad[:5])
            raise ConfigError(f"{self.path}: {details}", code="config.invalid",
                              hint="fix the file (memfold never rewrites it); `memfold config check` explains")
        return self._values.get(name) or SECTIONS[name]()

    @property
    def limits(self) -> LimitsConfig:
        return self.section("limits")  # type: ignore[no-any-return]

    @property
    def lock(self) -> LockConfig:
        return self.section("lock")  # type: ignore[no-any-return]

    @property
    def runs(self) -> RunsConfig:
        return self.section("runs")  # type: ignore[no-any-return]

    @property
    def privacy(self) -> PrivacyConfig:
        return self.section("privacy")  # type: ignore[no-any-return]

    @property
    def inject(self) -> InjectConfig:
        return self.section("inject")  # type: ignore[no-any-return]

    @property
    def consolidate(self) -> ConsolidateConfig:
        return self.section("consolidate")  # type: ignore[no-any-return]

    @property
    def workers(self) -> dict[str, WorkerConfig]:
        return self.section("workers").workers  # type: ignore[no-any-return]

    def store_limits(self) -> Limits:
        limits = self.limits
        return Limits(max_file_bytes=limits.max_file_bytes, max_files=limits.max_files,
                      index_lines=limits.index_lines, index_bytes=limits.index_bytes)

    def extract_limits(self) -> Any:
        """Bounds on a worker's stdout and its plan (DESIGN.md defaults, configurable)."""
        from .extract import ExtractLimits

        limits = self.limits
        return ExtractLimits(max_stdout_bytes=limits.worker_output_bytes, max_lines=limits.worker_output_lines,
                             max_plan_bytes=limits.plan_bytes)


def _parse(path: Path) -> tuple[Any, list[Issue]]:
    try:
        raw = read_bounded(path, 1 << 20)
    except FileNotFoundError:
        return {}, []
    except Exception as exc:  # noqa: BLE001 - an unreadable config is reported, not fatal to every command
        return None, [Issue("config.unreadable", "$", str(exc))]
    import yaml

    try:
        text = raw.decode("utf-8")
        try:
            # libyaml's loader is the same safe loader, several times faster; errors are re-raised by
            # the Python loader so their messages stay the same.
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
        except yaml.YAMLError:
            data = yaml.safe_load(text)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        return None, [Issue("config.yaml", "$", f"not valid YAML: {str(exc).splitlines()[0]}")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return None, [Issue("config.shape", "$", "the top level must be a mapping")]
    return data, []


def load_config(path: Path) -> Config:
    """Read the config; a missing file means defaults. Problems are kept per section, not raised here."""
    data, problems = _parse(path)
    values: dict[str, BaseModel] = {}
    for key, value in (data or {}).items():
        model = SECTIONS.get(str(key))
        if model is None:
            problems.append(Issue("config.unknown", f"$.{key}",
                                  f"unknown section (known: {', '.join(sorted(SECTIONS))})"))
            continue
        try:
            values[key] = model.model_validate({"workers": value} if model is Workers else value or {})
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = [str(p) for p in err["loc"] if not (model is Workers and p == "workers")]
                problems.append(Issue("config.invalid", ".".join(["$", str(key), *loc]), err["msg"]))
    return Config(path, values, problems)


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the whole file, generated from the section models."""
    properties = {name: model.model_json_schema() for name, model in SECTIONS.items() if model is not Workers}
    properties["workers"] = {"type": "object", "additionalProperties": WorkerConfig.model_json_schema()}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "memfold user config",
            "type": "object", "additionalProperties": False, "properties": properties}
