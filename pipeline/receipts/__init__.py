"""Receipts: hash-bound records of every transaction, verification, attestations, the chain witness, the report."""
