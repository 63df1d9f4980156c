"""The pydantic models that validate each section of the user config, and the JSON Schema they generate.

Imported only to validate a config file that changed (``config`` caches the result) and by
``memfold config check``; the defaults live in ``config.DEFAULTS`` so that reading them needs no pydantic.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .config import DEFAULTS, WORKER_DEFAULTS
from .errors import Issue

_LIMITS = DEFAULTS["limits"]
_INJECT = DEFAULTS["inject"]
_CONSOLIDATE = DEFAULTS["consolidate"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsConfig(_Strict):
    max_file_bytes: int = Field(_LIMITS["max_file_bytes"], ge=256, le=16 << 20)
    max_files: int = Field(_LIMITS["max_files"], ge=1, le=1_000_000)
    index_lines: int = Field(_LIMITS["index_lines"], ge=1)
    index_bytes: int = Field(_LIMITS["index_bytes"], ge=256)
    worker_output_bytes: int = Field(_LIMITS["worker_output_bytes"], ge=1 << 16, le=1 << 32)
    worker_output_lines: int = Field(_LIMITS["worker_output_lines"], ge=16, le=1 << 26)
    worker_output_line_bytes: int = Field(_LIMITS["worker_output_line_bytes"], ge=1 << 10, le=1 << 32)
    plan_bytes: int = Field(_LIMITS["plan_bytes"], ge=1 << 12, le=1 << 32)
    plan_depth: int = Field(_LIMITS["plan_depth"], ge=8, le=1024)


class LockConfig(_Strict):
    timeout: float = Field(DEFAULTS["lock"]["timeout"], ge=0, le=3600)


class RunsConfig(_Strict):
    keep: int = Field(DEFAULTS["runs"]["keep"], ge=1, le=100_000)


_WORKER_LIMITS = WORKER_DEFAULTS["limits"]


class WorkerLimits(_Strict):
    """What one run of the worker may use; enforced for every uid (see README, Worker sandbox)."""

    processes: int = Field(_WORKER_LIMITS["processes"], ge=16, le=1 << 16)
    memory_mb: int = Field(_WORKER_LIMITS["memory_mb"], ge=64, le=1 << 20)
    scratch_mb: int = Field(_WORKER_LIMITS["scratch_mb"], ge=1, le=1 << 20)


class WorkerConfig(_Strict):
    argv: list[str] = Field(min_length=1)
    timeout: float = Field(WORKER_DEFAULTS["timeout"], gt=0, le=86_400)
    env: list[str] = Field(default_factory=list)
    network: bool = WORKER_DEFAULTS["network"]
    # Extra directories the sandboxed worker may read (where its CLI is installed, e.g. ~/.npm-global).
    read_paths: list[Annotated[str, Field(pattern=r"^(/|~/)")]] = Field(default_factory=list)
    limits: WorkerLimits = Field(default_factory=lambda: WorkerLimits.model_validate({}))


class PrivacyConfig(_Strict):
    rules: list[dict[str, Any]] = Field(default_factory=list)
    allowlist: list[str] = Field(default_factory=list)


class InjectConfig(_Strict):
    guidance: bool = _INJECT["guidance"]
    max_bytes: int = Field(_INJECT["max_bytes"], ge=512)
    max_files: int = Field(_INJECT["max_files"], ge=0, le=1000)
    # The block goes to the model provider: credentials in private memories are masked unless turned off.
    mask_credentials: bool = _INJECT["mask_credentials"]


class ConsolidateConfig(_Strict):
    due_hours: float = Field(_CONSOLIDATE["due_hours"], gt=0)
    due_writes: int = Field(_CONSOLIDATE["due_writes"], ge=1)


class McpConfig(_Strict):
    # An agent may make a memory it names safe only when the user says so here; a copy of another
    # private memory still needs a person's --allow-publish.
    allow_publish: bool = DEFAULTS["mcp"]["allow_publish"]


class Workers(BaseModel):
    model_config = ConfigDict(frozen=True)
    workers: dict[str, WorkerConfig] = Field(default_factory=dict)


SECTIONS: dict[str, type[BaseModel]] = {
    "limits": LimitsConfig, "lock": LockConfig, "runs": RunsConfig, "workers": Workers,
    "privacy": PrivacyConfig, "inject": InjectConfig, "consolidate": ConsolidateConfig, "mcp": McpConfig,
}


def validate_sections(data: dict[Any, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """Each known section validated on its own: plain values of the valid ones, problems of the rest."""
    values: dict[str, Any] = {}
    problems: list[Issue] = []
    for key, value in data.items():
        model = SECTIONS.get(str(key))
        if model is None:
            problems.append(Issue("config.unknown", f"$.{key}",
                                  f"unknown section (known: {', '.join(sorted(SECTIONS))})"))
            continue
        try:
            valid = model.model_validate({"workers": value} if model is Workers else value or {})
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = [str(p) for p in err["loc"] if not (model is Workers and p == "workers")]
                problems.append(Issue("config.invalid", ".".join(["$", str(key), *loc]), err["msg"]))
            continue
        dumped = valid.model_dump()
        values[str(key)] = dumped["workers"] if model is Workers else dumped
    return values, problems


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the whole file, generated from the section models."""
    defs: dict[str, Any] = {}

    def hoisted(schema: dict[str, Any]) -> dict[str, Any]:
        # "#/$defs/..." resolves against the document root, so nested models' definitions live there.
        defs.update(schema.pop("$defs", {}))
        return schema

    properties = {name: hoisted(model.model_json_schema()) for name, model in SECTIONS.items() if model is not Workers}
    properties["workers"] = {"type": "object", "additionalProperties": hoisted(WorkerConfig.model_json_schema())}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "memfold user config",
            "type": "object", "additionalProperties": False, "properties": properties, "$defs": defs}
