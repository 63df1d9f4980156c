Feature: Receipts an auditor can check
  Every transaction leaves a hash-bound receipt chained to the previous one, so
  any change to a plan, a receipt or a memory after the fact is detected.

  Background:
    Given an initialised project
    And the safe memory "project_a" with description "alpha fact"
    And the memory "user_b" with description "beta fact"

  Scenario: A fresh chain verifies and audits clean
    When I run "verify"
    Then the exit code is 0
    When I run "audit"
    Then the exit code is 0

  Scenario: Changing the stored plan is caught by verify
    When I change one byte of the last run's "plan.json"
    And I run "verify <last run>"
    Then the exit code is 7
    And the output mentions "planDigest"

  Scenario: Changing a final hash in the newest receipt is caught by verify
    When I change a final hash in the newest receipt
    And I run "verify"
    Then the exit code is 7
    And the output mentions "finalHashes"

  Scenario: Changing an older receipt breaks the chain
    When I change a final hash in the first receipt
    And I run "audit"
    Then the exit code is 7
    And the output mentions "previous link"

  Scenario: Breaking the previous link is caught by audit
    When I set the newest receipt's previous link to another digest
    And I run "audit"
    Then the exit code is 7
    And the output mentions "previous link"

  Scenario: A memory edited by hand is reported as drift
    When I append a line to the private copy of "user_b.md"
    And I run "verify"
    Then the exit code is 7
    And the output mentions "user_b.md"
    When I run "audit --json"
    Then the exit code is 0
    And the audit reports 1 hand edit naming "user_b.md"
    When I run "audit --strict"
    Then the exit code is 7

  Scenario: The log entry and the run's post receipt are one file, and pruning the run keeps the entry
    When I run "consolidate --no-context"
    Then the newest log entry and its run's post receipt are one file with two names
    When I remember the newest log entry
    And the config keeps 1 run dir
    And I run "add project_c --description 'gamma fact'"
    Then the remembered entry's run dir is gone
    And the remembered entry is byte-identical to before and is its only name
    And "verify" of the remembered entry exits 0
    When I run "audit"
    Then the exit code is 0
