"""Validate a worker's plan against its run before anything is written: schema, semantics, privacy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputRejected, Issue, IssueList, PrivacyRejected
from ..frozen import Slotted
from ..planner.planjson import expanded
from ..privacy import RuleSet
from ..state.model import Operation, PreState
from ..store.state import Limits
from . import grounding, operations, outcome, rules
from .context import ARTIFACTS, IDENTITY, Context, ManifestView, RuleSpec
from .schema import check_schema, required_fields

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..context.artifacts import Writer

# A plan broken everywhere would otherwise list every memory in every artifact.
MAX_ISSUES = 1000

RULES: dict[str, RuleSpec] = {
    spec.name: spec
    for spec in (
        RuleSpec("identity", rules.identity, reads=(*IDENTITY, "snapshotDigest")),
        RuleSpec("selected", rules.selected, needs=("selected",)),
        RuleSpec("coverage", rules.coverage, reads=(*ARTIFACTS, "clusters")),
        RuleSpec("classification", rules.classification, needs=("inventory", "operations")),
        RuleSpec("verdict", rules.verdict, reads=("staleness",)),
        RuleSpec("grounding", grounding.grounding, needs=("grounding",)),
        RuleSpec("project-grounding", grounding.project_observed, needs=("grounding",)),
        RuleSpec("grounding-reason", grounding.reasons, needs=("grounding",)),
        RuleSpec("operations", operations.operations, needs=("operations",)),
        RuleSpec("evidence", grounding.evidence, needs=("operations",)),
        RuleSpec("bounds", operations.bounds, needs=("operations",)),
        RuleSpec("deletes", outcome.deletes, needs=("operations",), reads=("staleness",)),
        RuleSpec("visibility", outcome.visibility, needs=("operations",)),
        RuleSpec("publish", operations.publish, needs=("operations",)),
        RuleSpec("privacy", operations.privacy, needs=("operations",), needs_rules=True),
    )
}


class ValidationResult(Slotted):
    """``checks`` names the checks that ran and passed; ``operations`` is filled for a valid plan."""

    __slots__ = ("ok", "checks", "errors", "plan", "operations")
    ok: bool
    checks: list[str]
    errors: list[Issue]
    plan: dict[str, Any] | None
    operations: list[Operation]

    def __init__(self, ok: bool, checks: list[str] | None = None, errors: list[Issue] | None = None,
                 plan: dict[str, Any] | None = None, operations: list[Operation] | None = None) -> None:
        self.ok = ok
        self.checks = list() if checks is None else checks
        self.errors = list() if errors is None else errors
        self.plan = plan
        self.operations = list() if operations is None else operations


    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": list(self.checks), "errors": [e.as_dict() for e in self.errors]}


def validate_plan(
    plan: object,
    manifest: dict[str, Any],
    *,
    pre: PreState,
    repo_root: Path,
    ruleset: RuleSet | None,
    allow_publish: bool,
    limits: Limits,
) -> ValidationResult:
    """Run every rule and collect every issue; never raises for anything the plan contains.

    ``ruleset=None`` skips the privacy scan (and leaves "privacy" out of ``checks``).
    Raises UsageError only for a manifest without its identity fields or selection.
    """
    view = ManifestView.from_manifest(manifest)
    if isinstance(plan, dict):
        plan = expanded(plan, view.selected)  # the compact shape: every rule sees every item
    schema = check_schema(plan, required_fields(), _flagger(ruleset))
    result = ValidationResult(ok=False, checks=["schema"] if schema.passed else [], errors=list(schema.issues))
    if not isinstance(plan, dict):
        return result
    ctx = Context(plan, view, pre, Path(repo_root), ruleset, allow_publish, limits, schema.broken)
    for spec in RULES.values():
        if not all(ctx.intact(key) for key in spec.needs) or (spec.needs_rules and ruleset is None):
            continue
        before = len(result.errors)
        for issue in spec.check(ctx):
            if len(result.errors) >= MAX_ISSUES:
                result.errors.append(Issue("plan.too-many-issues", "$",
                                           f"more than {MAX_ISSUES} issues; the rest are not listed"))
                return result
            result.errors.append(issue)
        if len(result.errors) == before and all(ctx.intact(key) for key in spec.reads):
            result.checks.append(spec.name)
    if not result.errors:
        result.ok = True
        result.plan = plan
        result.operations = _operations(ctx)
    return result


def validate_run(run_dir: Path, plan: object, manifest: dict[str, Any], write: Writer | None = None,
                 **options: Any) -> ValidationResult:
    """``validate_plan``, with its report written as the run's ``validation.json`` (by ``write``:
    ``fsutil.write_artifact`` unless given)."""
    from ..store.jsontext import dump_json

    if write is None:
        from ..fsutil import write_artifact

        write = write_artifact
    result = validate_plan(plan, manifest, **options)
    write(run_dir, "validation.json", dump_json(result.as_dict()))
    return result


def _flagger(ruleset: RuleSet | None) -> Callable[[str], bool]:
    if ruleset is None:
        return lambda text: len(text) > 24  # without rules, quote only short field names
    return lambda text: bool(ruleset.scan(text, "<field name>"))


def _operations(ctx: Context) -> list[Operation]:
    """The valid plan's operations, with the content bytes the rules already encoded."""
    out = []
    for index, op in enumerate(ctx.plan["operations"]):
        content = None if op["kind"] == "delete" else ctx.content(index, op).data
        out.append(Operation(op["name"], op["kind"], op["classification"], content))
    return out


def raise_for(result: ValidationResult) -> None:
    """Raise PrivacyRejected if any privacy issue was found, else InputRejected; nothing if valid."""
    if result.ok:
        return
    privacy = [i for i in result.errors if i.code.startswith("privacy.")]
    if privacy:
        # The first issue names the error's code, so the privacy ones lead.
        others = [i for i in result.errors if not i.code.startswith("privacy.")]
        IssueList(privacy + others).raise_if_any(
            PrivacyRejected, "plan rejected by the privacy rules",
            hint="remove the flagged values from memories marked safe, or mark them private; "
            "publishing a private memory needs --allow-publish",
        )
    IssueList(list(result.errors)).raise_if_any(InputRejected, "plan rejected")
    # A failed result always carries issues; an empty one would be a bug, and must not pass.
    raise InputRejected("plan rejected", code="plan.invalid")
