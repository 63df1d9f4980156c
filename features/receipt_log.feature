Feature: A write finds the head of a long receipt log without reading the log
  Every transaction links its receipt to the newest one in the log. The log only
  grows (one file per transaction, never pruned), so a write does not list it:
  the log's pointer, committed with each receipt, names the newest and the first
  entry. A log left without a pointer is listed once, by the write that then
  writes one. `memfold audit` still walks every receipt.

  Background:
    Given an initialised project
    And the memory "project_a" with description "alpha fact"

  Scenario: A write after 1,000 receipts reads a bounded part of the log and audit still walks the whole chain
    Given 1000 more receipts in the log, left by a version without the log pointer
    When I run "add project_b -d 'beta fact' -b b" counting the listings of the receipt log
    Then the exit code is 0
    And the receipt log was listed 1 time
    When I run "add project_c -d 'gamma fact' -b c" counting the listings of the receipt log
    Then the exit code is 0
    And the receipt log was listed 0 times
    And the newest receipt links to the one before it and the pointer names it
    When I run "audit"
    Then the exit code is 0
    And the output mentions "audit of 1,003 receipts: OK"

  Scenario: A receipt removed by hand behind the pointer is found by the next write and by audit
    Given the memory "project_b" with description "beta fact"
    When I delete the newest receipt of the log by hand
    And I run "add project_c -d 'gamma fact' -b c" counting the listings of the receipt log
    Then the exit code is 0
    And the receipt log was listed 1 time
    And the newest receipt links to the one before it and the pointer names it
    When I run "audit"
    Then the exit code is 0
