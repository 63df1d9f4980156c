"""The user config (``<home>/config.yaml``): limits, lock, runs, workers, privacy, injection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError
from .fsutil import read_bounded
from .store.state import Limits


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsConfig(_Strict):
    max_file_bytes: int = Field(64 * 1024, ge=256, le=16 << 20)
    max_files: int = Field(4096, ge=1, le=1_000_000)
    index_lines: int = Field(200, ge=1)
    index_bytes: int = Field(25_600, ge=256)


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


class Config(_Strict):
    limits: LimitsConfig = LimitsConfig()
    lock: LockConfig = LockConfig()
    runs: RunsConfig = RunsConfig()
    workers: dict[str, WorkerConfig] = Field(default_factory=dict)
    privacy: PrivacyConfig = PrivacyConfig()
    inject: InjectConfig = InjectConfig()

    def store_limits(self) -> Limits:
        return Limits(**self.limits.model_dump())


def load_config(path: Path) -> Config:
    """Read and validate the config. A missing file means defaults; a broken one is never rewritten."""
    try:
        raw = read_bounded(path, 1 << 20)
    except FileNotFoundError:
        return Config()
    import yaml

    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}",
                          hint="fix the file (memfold never rewrites it)") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        raise ConfigError(f"{path}: {problems}", hint="fix the file (memfold never rewrites it)") from None
