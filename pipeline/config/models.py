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
        max_file_bytes: int = Field(limits["max_file_bytes"], ge=256, le=16 << 20,
                                     description="largest memory file, in bytes")
        max_files: int = Field(limits["max_files"], ge=1, le=1_000_000, description="most memory files in one store")
        index_lines: int = Field(limits["index_lines"], ge=1,
                                  description="lines of MEMORY.md past which a write warns that a consolidation is due")
        index_bytes: int = Field(limits["index_bytes"], ge=256,
                                  description="bytes of MEMORY.md past which a write warns that a consolidation is due")
        worker_output_bytes: int = Field(limits["worker_output_bytes"], ge=1 << 16, le=1 << 32,
                                          description="bytes a worker may print on stdout; one more stops it")
        worker_output_lines: int = Field(limits["worker_output_lines"], ge=16, le=1 << 26,
                                          description="lines a worker may print on stdout")
        worker_output_line_bytes: int = Field(limits["worker_output_line_bytes"], ge=1 << 10, le=1 << 32,
                                               description="bytes in one line of a worker's stdout")
        plan_bytes: int = Field(limits["plan_bytes"], ge=1 << 12, le=1 << 32,
                                 description="size of a plan (plan.json); the built-in planner leaves what does "
                                 "not fit for the next run")
        plan_depth: int = Field(limits["plan_depth"], ge=8, le=1024, description="JSON nesting a plan may use")
        # All memory files of the mirror together (the reference tool allows 96,000 bytes).
        mirror_bytes: int = Field(limits["mirror_bytes"], ge=4096, le=1 << 36,
                                  description="bytes of all memory files in the mirror together")

    class LockConfig(_Strict):
        timeout: float = Field(DEFAULTS["lock"]["timeout"], ge=0, le=3600,
                               description="seconds a direct edit waits for the project lock before exit 3")

    class RunsConfig(_Strict):
        keep: int = Field(DEFAULTS["runs"]["keep"], ge=1, le=100_000,
                          description="run directories kept, the newest; the receipt log is never pruned")


    _WORKERlimits = WORKER_DEFAULTS["limits"]

    class WorkerLimits(_Strict):
        """What one run of the worker may use; enforced for every uid (docs/security.md)."""

        processes: int = Field(_WORKERlimits["processes"], ge=16, le=1 << 16,
                               description="processes and threads alive at once in the worker's tree")
        memory_mb: int = Field(_WORKERlimits["memory_mb"], ge=64, le=1 << 20,
                               description="MiB of memory for the whole tree, and for each process")
        scratch_mb: int = Field(_WORKERlimits["scratch_mb"], ge=1, le=1 << 20,
                                description="MiB the worker may allocate under its scratch dir (and 100,000 entries)")

    class WorkerConfig(_Strict):
        argv: list[str] = Field(min_length=1, description="the command; placeholders: {task} {run_dir} {manifest} "
                                "{snapshot} {harness} {public} {repo}")
        timeout: float = Field(WORKER_DEFAULTS["timeout"], gt=0, le=86_400,
                               description="seconds before the worker and all it started are killed (exit 4)")
        env: list[str] = Field(default_factory=list,
                              description="environment variables passed to the worker by name (its API key)")
        network: bool = Field(WORKER_DEFAULTS["network"],
                              description="let the worker reach the network (an agent CLI calls its model)")
        # Extra directories the sandboxed worker may read (where its CLI is installed, e.g. ~/.npm-global).
        read_paths: list[Annotated[str, Field(pattern=r"^(/|~/)")]] = Field(
            default_factory=list, description="more directories the sandboxed worker may read (absolute or ~/)")
        limits: WorkerLimits = Field(default_factory=lambda: WorkerLimits.model_validate({}),
                                     description="what one run of the worker may use")

    class PrivacyConfig(_Strict):
        rules: list[dict[str, Any]] = Field(default_factory=list,
                                            description="more rules, in the shape of schemas/privacy-rules.yaml")
        allowlist: list[str] = Field(default_factory=list,
                                    description="more RE2 patterns; a finding inside a match of one is ignored")

    class InjectConfig(_Strict):
        guidance: bool = Field(inject["guidance"],
                               description="end the session block with a line on how to save a memory")
        max_bytes: int = Field(inject["max_bytes"], ge=512, description="byte budget of the injected block")
        max_files: int = Field(inject["max_files"], ge=0, le=1000, description="memory bodies in the block at most")
        # The block goes to the model provider: credentials in private memories are masked unless turned off.
        mask_credentials: bool = Field(inject["mask_credentials"],
                                       description="show credentials in private memories as [redacted: RULE]")

    class ConsolidateConfig(_Strict):
        due_hours: float = Field(consolidate["due_hours"], gt=0,
                                 description="hours after the last consolidation when the next is due")
        due_writes: int = Field(consolidate["due_writes"], ge=1,
                                description="receipted writes after the last consolidation when the next is due")
        # Seconds a consolidation waits for the lock (a direct edit holds it for milliseconds).
        lock_wait: float = Field(consolidate["lock_wait"], ge=0, le=3600,
                                 description="seconds a consolidation waits for the project lock before exit 3")
        # The worker used when none is named: builtin, or a name under `workers` (checked before a run).
        worker: str = Field(consolidate["worker"], pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                            description="the worker used when none is named: builtin, or a name under workers")

    class McpConfig(_Strict):
        # An agent may make a memory it names safe only when the user says so here; a copy of another
        # private memory still needs a person's --allow-publish.
        allow_publish: bool = Field(DEFAULTS["mcp"]["allow_publish"],
                                    description="let an agent over MCP make a memory it names safe")
        # One request line from the client; a longer one is answered with an error and skipped.
        max_request_bytes: int = Field(DEFAULTS["mcp"]["max_request_bytes"], ge=1 << 16, le=1 << 30,
                                       description="the longest request line the MCP server reads; a longer "
                                                   "one gets an error and the server reads on")

    class UsageConfig(_Strict):
        dormant_days: int = Field(DEFAULTS["usage"]["dormant_days"], ge=1, le=100_000)
        # Off by default: a memory nobody used is reported (DORMANT in the report), never silently deleted.
        forget_dormant: bool = DEFAULTS["usage"]["forget_dormant"]

    class Workers(BaseModel):
        model_config = ConfigDict(frozen=True)
        workers: dict[str, WorkerConfig] = Field(default_factory=dict)


    sections: dict[str, type[BaseModel]] = {
        "limits": LimitsConfig, "lock": LockConfig, "runs": RunsConfig, "workers": Workers,
        "privacy": PrivacyConfig, "inject": InjectConfig, "consolidate": ConsolidateConfig, "mcp": McpConfig,
        "usage": UsageConfig,
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
