Feature: The built-in plan never passes the plan bound, and consolidating again finishes the job
  When the whole plan would pass `limits.plan_bytes`, the built-in planner prints the largest part
  of it that fits: whole groups of the full plan's changes (a memory with everything merged into
  it), each exactly as the full plan makes it. Its notes, the summary and the receipt say how many
  memories' changes were left; `status` calls a consolidation due until a run leaves nothing.

  Scenario: A store whose plan passes a small plan bound settles on what one unbounded run gives
    Given a store of 30 duplicate pairs and 6 expired memories, consolidated with limits.plan_bytes 16000
    And a second project holding the same store with the default limits
    When I consolidate the bounded project
    Then the exit code is 0
    And the run's plan.json on disk is at most 16000 bytes
    And the receipt's outcome says how many memories' changes were left for the next run
    And the summary prints the same note
    And status calls a consolidation due because changes were left
    When I consolidate the bounded project again until a run leaves nothing
    Then 3 runs changed the store and each plan.json on disk was at most 16000 bytes
    When I consolidate the second project once
    Then its receipt leaves nothing for a next run
    And both projects hold the same files with the same hashes in both roots

  Scenario: A plan whose smallest part cannot fit the bound is refused with the key to raise
    Given a store of 30 duplicate pairs and 6 expired memories, consolidated with limits.plan_bytes 8000
    When I consolidate the bounded project
    Then the exit code is 4
    And the error names "planner.plan-bound" and "limits.plan_bytes"
    And the store holds the same files as before
