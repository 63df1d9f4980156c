"""Privacy rules engine: decides whether text may be copied to the git-tracked mirror."""

from __future__ import annotations

from .engine import RuleSet, scan_bytes
from .loader import load_ruleset, validate_document
from .model import Finding, Rule

__all__ = ["Finding", "Rule", "RuleSet", "load_ruleset", "scan_bytes", "validate_document"]
