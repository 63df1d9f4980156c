"""Plan validation: the JSON Schema stage, the semantic rules and the privacy rules, one report."""
