Feature: Reliability: crashes, contention, hostile stores and attestations
  memfold keeps both roots whole whatever happens to the process, tells one run
  from another under contention, refuses what it cannot read safely, and lets
  anyone check a run's output against a signed statement.

  Scenario: A consolidation killed at any instant leaves the whole old or the whole new state
    Given an initialised project
    And a store with duplicate memories
    When a consolidation is killed at a random filesystem step
    And I run "recover"
    Then both roots hold either the state before or the state after the consolidation
    And no memfold temp file is left
    And "audit" exits 0 without hand edits

  Scenario: A power loss that keeps some of a commit's renames but not the journal's is rolled back whole
    Given an initialised project
    And the safe memory "project_a.md" with description "alpha fact"
    When an update of "project_a.md" loses power after 2 of its renames, the journal's rename lost
    Then the exit code is 130
    And the mirror's "project_a.md" is not what it was
    When I run "recover --json"
    Then the exit code is 0
    And the output mentions "rolled-back"
    And both roots are unchanged
    And no memfold temp file is left
    And "audit" exits 0 without hand edits

  Scenario: A second consolidation while one runs exits 3 and names the running one
    Given an initialised project
    And the safe memory "project_a.md" with description "alpha fact"
    And the project lock is held by another process
    When I run "consolidate --no-context"
    Then the exit code is 3
    And the error mentions "20261130T120000Z-0badc0de"
    And both roots are unchanged

  Scenario: A FIFO with a memory's name is refused at once, not read
    Given an initialised project
    And the safe memory "project_a.md" with description "alpha fact"
    And a FIFO named "project_pipe.md" in the private store
    When I run "list"
    Then the exit code is 1
    And the error mentions "path.not-regular"
    And both roots are unchanged

  Scenario: A signed attestation verifies, and fails once a file it names is edited
    Given an initialised project
    And the safe memory "project_a.md" with description "alpha fact"
    When I make an attestation key and attest the last run with it
    And I verify the attestation
    Then the exit code is 0
    When I append a line to the private copy of "project_a.md"
    And I verify the attestation
    Then the exit code is 7
    And the output mentions "attest.subject-mismatch"
