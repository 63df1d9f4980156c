Feature: The receipt chain binds its sources and has a witness in git
  A receipt's source hashes are the ones its run recorded before anything was
  planned, and each transaction starts where the previous one ended unless a
  file was edited by hand in between. Every transaction also writes the chain
  head (sequence number and receipt digest) beside the mirror, in .memfold/heads/,
  so git holds a witness of the private chain that a rewrite of the store alone
  cannot change.

  Background:
    Given an initialised project
    And the safe memory "project_a" with description "alpha fact"
    And the memory "user_b" with description "beta fact"

  Scenario: Source hashes changed in every copy of the newest receipt are caught
    When I change the newest receipt's source hashes in its pre, post and log copies
    And I run "verify"
    Then the exit code is 7
    And the output mentions "receipt.source-manifest"
    When I run "audit"
    Then the exit code is 7

  Scenario: A hand edit between two transactions is named by both receipts
    When I append a line to the private copy of "user_b.md"
    And I run "add project_c -d 'gamma fact' -b c"
    And I run "audit"
    Then the exit code is 0
    And the output mentions "harness/user_b.md changed (between 00000002-"
    And the output mentions "and 00000003-"
    When I run "audit --strict"
    Then the exit code is 7

  Scenario: Every transaction leaves the chain head beside the mirror
    Then the chain head beside the mirror names the newest receipt
    When I commit the mirror to git
    And I run "forget project_a"
    And I undo the last run
    And I run "recover"
    And I commit the mirror to git
    And I run "audit --strict"
    Then the exit code is 0
    And the chain head beside the mirror names the newest receipt
    And the output mentions "committed heads checked, each a receipt of the chain"
    When I run "mirror check"
    Then the exit code is 0

  Scenario: Tampering with a memory and rewriting the newest receipt is caught by the head
    When I tamper with "user_b.md" and rewrite the newest receipt's final hashes to match
    And I run "audit --strict"
    Then the exit code is 7
    And the output mentions "witness.head-mismatch"

  Scenario: Rewriting the head beside the mirror too is caught by the head committed in git
    When I commit the mirror to git
    And I tamper with "user_b.md" and rewrite the newest receipt's final hashes to match
    And I rewrite the chain head beside the mirror to name the rewritten receipt
    And I run "audit --strict"
    Then the exit code is 7
    And the output mentions "witness.committed-mismatch"

  Scenario: Dropping the newest receipt and reverting its files is caught by the committed head
    When I keep a copy of both roots
    And I run "add project_c -d 'gamma fact' --visibility safe -b c"
    And I commit the mirror to git
    And I drop the newest receipt and put the copy of both roots back
    And I run "audit --strict"
    Then the exit code is 7
    And the output mentions "witness.committed-ahead"

  Scenario: The global store has no mirror, so no witness, and audit says so
    When I run "add user_tabs -d 'prefers tabs' --global"
    And I run "audit --global --strict"
    Then the exit code is 0
    And the output mentions "no chain witness"
