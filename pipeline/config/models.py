"""The pydantic models of the user config, built (and pydantic imported) on first use only."""

from __future__ import annotations

from typing import Any

from ..errors import Issue
from ..sandbox import DEFAULT_LIMITS
from .defaults import DEFAULTS

# A worker entry's defaults; kept here, not beside DEFAULTS, so reading a cached config (each prompt)
# does not import the sandbox package for them.
WORKER_DEFAULTS: dict[str, Any] = {"timeout": 600.0, "env": [], "network": False, "read_paths": [],
                                   "limits": dict(DEFAULT_LIMITS)}

_MODELS: tuple[dict[str, Any], Any] | None = None


def section_models() -> tuple[dict[str, Any], Any]:
    """The pydantic model of each section, and of one worker entry; built (and pydantic imported) once.

    Only a config file that changed since it was cached, and ``memfold config check``, need them.
    """
    global _MODELS
    if _MODELS is None:
        _MODELS = _define_models()
    return _MODELS


def _define_models() -> tuple[dict[str, Any], Any]:
    from typing import Annotated, Any  # noqa: F401 - pydantic evaluates the annotations below at runtime

    from pydantic import BaseModel, ConfigDict, Field

    limits = DEFAULTS["limits"]
    inject = DEFAULTS["inject"]
    consolidate = DEFAULTS["consolidate"]

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

    class LimitsConfig(_Strict):
        max_file_bytes: int = Field(limits["max_file_bytes"], ge=256, le=16 << 20)
        max_files: int = Field(limits["max_files"], ge=1, le=1_000_000)
        index_lines: int = Field(limits["index_lines"], ge=1)
        index_bytes: int = Field(limits["index_bytes"], ge=256)
        worker_output_bytes: int = Field(limits["worker_output_bytes"], ge=1 << 16, le=1 << 32)
        worker_output_lines: int = Field(limits["worker_output_lines"], ge=16, le=1 << 26)
        worker_output_line_bytes: int = Field(limits["worker_output_line_bytes"], ge=1 << 10, le=1 << 32)
        plan_bytes: int = Field(limits["plan_bytes"], ge=1 << 12, le=1 << 32)
        plan_depth: int = Field(limits["plan_depth"], ge=8, le=1024)

    class LockConfig(_Strict):
        timeout: float = Field(DEFAULTS["lock"]["timeout"], ge=0, le=3600)

    class RunsConfig(_Strict):
        keep: int = Field(DEFAULTS["runs"]["keep"], ge=1, le=100_000)


    _WORKERlimits = WORKER_DEFAULTS["limits"]

    class WorkerLimits(_Strict):
        """What one run of the worker may use; enforced for every uid (see README, Worker sandbox)."""

        processes: int = Field(_WORKERlimits["processes"], ge=16, le=1 << 16)
        memory_mb: int = Field(_WORKERlimits["memory_mb"], ge=64, le=1 << 20)
        scratch_mb: int = Field(_WORKERlimits["scratch_mb"], ge=1, le=1 << 20)

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
        guidance: bool = inject["guidance"]
        max_bytes: int = Field(inject["max_bytes"], ge=512)
        max_files: int = Field(inject["max_files"], ge=0, le=1000)
        # The block goes to the model provider: credentials in private memories are masked unless turned off.
        mask_credentials: bool = inject["mask_credentials"]

    class ConsolidateConfig(_Strict):
        due_hours: float = Field(consolidate["due_hours"], gt=0)
        due_writes: int = Field(consolidate["due_writes"], ge=1)

    class McpConfig(_Strict):
        # An agent may make a memory it names safe only when the user says so here; a copy of another
        # private memory still needs a person's --allow-publish.
        allow_publish: bool = DEFAULTS["mcp"]["allow_publish"]
        # One request line from the client; a longer one is answered with an error and skipped.
        max_request_bytes: int = Field(DEFAULTS["mcp"]["max_request_bytes"], ge=1 << 16, le=1 << 30)

    class Workers(BaseModel):
        model_config = ConfigDict(frozen=True)
        workers: dict[str, WorkerConfig] = Field(default_factory=dict)


    sections: dict[str, type[BaseModel]] = {
        "limits": LimitsConfig, "lock": LockConfig, "runs": RunsConfig, "workers": Workers,
        "privacy": PrivacyConfig, "inject": InjectConfig, "consolidate": ConsolidateConfig, "mcp": McpConfig,
    }
    return sections, WorkerConfig


def validate_sections(data: dict[Any, Any]) -> tuple[dict[str, Any], list[Issue]]:
    """Each known section validated on its own: plain values of the valid ones, problems of the rest."""
    from pydantic import ValidationError

    sections, _ = section_models()
    workers = sections["workers"]
    values: dict[str, Any] = {}
    problems: list[Issue] = []
    for key, value in data.items():
        model = sections.get(str(key))
        if model is None:
            problems.append(Issue("config.unknown", f"$.{key}",
                                  f"unknown section (known: {', '.join(sorted(sections))})"))
            continue
        try:
            valid = model.model_validate({"workers": value} if model is workers else value or {})
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = [str(p) for p in err["loc"] if not (model is workers and p == "workers")]
                problems.append(Issue("config.invalid", ".".join(["$", str(key), *loc]), err["msg"]))
            continue
        dumped = valid.model_dump()
        values[str(key)] = dumped["workers"] if model is workers else dumped
    return values, problems


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the whole file, generated from the section models."""
    sections, worker = section_models()
    defs: dict[str, Any] = {}

    def hoisted(schema: dict[str, Any]) -> dict[str, Any]:
        # "#/$defs/..." resolves against the document root, so nested models' definitions live there.
        defs.update(schema.pop("$defs", {}))
        return schema

    properties = {name: hoisted(model.model_json_schema()) for name, model in sections.items()
                  if model is not sections["workers"]}
    properties["workers"] = {"type": "object", "additionalProperties": hoisted(worker.model_json_schema())}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "memfold user config",
            "type": "object", "additionalProperties": False, "properties": properties, "$defs": defs}
