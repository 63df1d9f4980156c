"""Runs features/store.feature and features/receipts.feature; the steps live in conftest.py."""

from __future__ import annotations

from pytest_bdd import scenarios

scenarios("store.feature", "receipts.feature")
