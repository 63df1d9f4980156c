"""Step definitions for features/receipt_log.feature: a long log, counted listings, a hand-removed receipt."""

from __future__ import annotations

import json
import shlex
from typing import Any

from conftest import Env
from long_log import Listings, grow_log
from pytest_bdd import given, parsers, scenarios, then, when

from pipeline.receipts.log import log_entries
from pipeline.receipts.newest import NEWEST
from pipeline.receipts.receipt import receipt_digest

scenarios("receipt_log.feature")


@given(parsers.parse("{count:d} more receipts in the log, left by a version without the log pointer"))
def long_log(env: Env, count: int) -> None:
    grow_log(env.project_home, count)
    assert not (env.project_home / NEWEST).exists()


@when(parsers.parse('I run "{command}" counting the listings of the receipt log'))
def run_counting(env: Env, ctx: dict[str, Any], command: str) -> None:
    with Listings(env.project_home / "receipts") as listed:
        ctx["result"] = env.run(*shlex.split(command))
    ctx["listings"] = listed.count


@when("I delete the newest receipt of the log by hand")
def delete_newest(env: Env) -> None:
    log_entries(env.project_home / "receipts")[-1].path.unlink()


@then(parsers.re(r"the receipt log was listed (?P<count>\d+) times?"))
def listed(ctx: dict[str, Any], count: str) -> None:
    assert ctx["listings"] == int(count)


@then("the newest receipt links to the one before it and the pointer names it")
def links(env: Env) -> None:
    *_, before, newest = log_entries(env.project_home / "receipts")
    assert newest.seq == before.seq + 1
    assert json.loads(newest.path.read_bytes())["previous"] == receipt_digest(json.loads(before.path.read_bytes()))
    pointer = json.loads((env.project_home / NEWEST).read_bytes())
    assert (pointer["seq"], pointer["runId"]) == (newest.seq, newest.run_id)
