"""Tokens of the many smaller services: by the service's name next to them, or by a fixed prefix."""

from __future__ import annotations

import re

import privacy_vendor_names as gen
import pytest
import yaml

from pipeline.privacy import load_ruleset
from pipeline.resources import data_dir


def _rules() -> dict[str, dict[str, object]]:
    document = yaml.safe_load((data_dir("schemas") / "privacy-rules.yaml").read_text(encoding="utf-8"))
    return {rule["id"]: rule for rule in document["rules"]}


def _found(text: str) -> set[str]:
    return {finding.rule_id for finding in load_ruleset().scan(text)}


NAMED_FINDINGS = [
    # values drawn here in each service's documented shape; the name alone says whose it is
    "loggly: 7c1e4b2a-93d0-4f5e-8a61-2b7c9d0e3f48",
    "the ngrok authtoken is 2Uq9z3bXyK7hL1pQ5mW8rT4vN6cJ0sA_3kFgHjKlMnBvCxZaS",
    "invoiceocean 'Qm7vT2xK9pLr4sW8dN3c'",
    "BUGSNAG_KEY=4c1f0d8e9a7b6c5d4e3f2a1b0c9d8e7f",
    "todoist token f0e1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d",
]

NAMED_LOOK_ALIKES = [
    # the service named with no credential: ids, versions, paths, links and words
    "ngrok exposes it at https://4f2a-81-2-3-4.ngrok-free.app for the demo",
    "Metabase question 42 lives at /question/42-weekly-active-users",
    "the bugsnag release stage is production-eu-west-1",
    "Use hasura metadata apply --endpoint http://localhost:8080",
    "todoist project 2203306141 holds the backlog",
    "pipedrive deal pipeline: leads-qualified-to-won-and-invoiced",
    "bugsnag commit 3f9a2c1b7d4e6f8a0b2c4d6e8f0a1b3c5d7e9f1a",
    "our loggly tag is backend_service_production",
]

PREFIX_FINDINGS = [
    # prefix and length as the services issue them; random parts drawn here
    "PGANALYZE_READ_KEY=pgar_Kq3mT8vZ2xLr9pW4sN7cB1dF6hJ",
    "export SPECTRAL_DSN_TOKEN=spu-5k2m9q4x7v1z8c3b6n0p2r5t8w1y4a7d",
    "rootly_4b8e1d7a2c9f3e6b0d5a8c1f4e7b2d9a6c3f0e8b5d2a7c4f1e9b6d3a0c8f5e2b",
    "zoho refresh: 1000.9c4e1a7b3d5f608e9a1c2b3d4e5f6a7b.0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "klaviyo private key pk_4c1f0d8e9a7b6c5d4e3f2a1b0c9d8e7f5a",
]

PREFIX_LOOK_ALIKES = [
    # the prefixes inside names, versions and shorter runs
    "version 1000.9c4e1a7b3d5f608e9a1c2b3d4e5f6a7b of the schema",
    "the pgar_ prefix marks pganalyze read keys",
    "spu-docs is the Spectral user guide",
    "rootly_incident_severity_mapping_for_pagerduty_and_slack_alerts",
    "pk_id is the primary key column of the orders table",
]


@pytest.mark.parametrize("text", NAMED_FINDINGS)
def test_a_random_token_next_to_a_service_name_is_found(text: str) -> None:
    assert "vendor-named-token" in _found(text)


@pytest.mark.parametrize("text", PREFIX_FINDINGS)
def test_a_token_with_a_known_service_prefix_is_found(text: str) -> None:
    assert "service-prefixed-token" in _found(text)


@pytest.mark.parametrize("text", NAMED_LOOK_ALIKES + PREFIX_LOOK_ALIKES)
def test_a_service_name_or_prefix_without_a_token_is_not_flagged(text: str) -> None:
    assert _found(text) == set()


def test_the_generated_rule_reads_exactly_its_listed_names_and_none_of_the_hand_written_rule() -> None:
    rules = _rules()
    named, keyed = rules["vendor-named-token"], rules["vendor-keyed-token"]
    names = named["keywords"]
    assert isinstance(names, list) and names == sorted(names) and len(names) > 400
    assert all(re.fullmatch(r"[a-z][a-z0-9]{3,}", name) for name in names)
    alternation = re.search(r"\(\?:([a-z0-9|]+)\)", str(named["pattern"]))
    assert alternation is not None and alternation.group(1).split("|") == names
    assert set(names).isdisjoint(keyed["keywords"])  # type: ignore[arg-type]
    assert not set(names) & (gen._LEFT_OUT | gen._PROSE)


def test_the_name_filter_drops_words_role_words_prose_and_names_already_read() -> None:
    names = {"box", "fronts", "apikey", "accesstoken", "userid", "debounce", "stripe", "cex.io", "pd_",
             "8x8", "loggly", "invoiceocean", "github"}
    kept = gen.keep(names, words={"box", "front"}, existing={"stripe"})
    assert kept == ["invoiceocean", "loggly"]


def test_the_generator_replaces_only_its_own_block_and_is_idempotent() -> None:
    text = ("rules:\n  - id: vendor-keyed-token\n    x: 1\n  - id: secret-comparison\n    y: 2\n")
    once = gen.rewrite(text, gen.rule_block(["alpha", "bravo"]))
    assert once.startswith("rules:\n  - id: vendor-keyed-token\n    x: 1\n" + gen.BEGIN)
    assert once.endswith(gen.END + "  - id: secret-comparison\n    y: 2\n")
    again = gen.rewrite(once, gen.rule_block(["alpha", "charlie"]))
    assert again.count(gen.BEGIN) == 1 and "charlie" in again and "bravo" not in again
    assert gen.rewrite(again, gen.rule_block(["alpha", "charlie"])) == again
    document = yaml.safe_load(again)
    assert [rule["id"] for rule in document["rules"]] == ["vendor-keyed-token", "vendor-named-token",
                                                          "secret-comparison"]


def test_the_shipped_block_is_what_the_generator_writes_for_its_names() -> None:
    text = (data_dir("schemas") / "privacy-rules.yaml").read_text(encoding="utf-8")
    names = _rules()["vendor-named-token"]["keywords"]
    assert isinstance(names, list)
    assert gen.rewrite(text, gen.rule_block(names)) == text
