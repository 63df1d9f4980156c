Feature: The built-in planner's plan is the same bytes for the same snapshot, however it is computed
  The planner keeps what it computed once per memory, compares only what can match, and skips work
  whose outcome is already known; none of this may change one byte of the plan it prints.

  Scenario: The planner prints the recorded plan of a synthetic store under any hash seed
    Given the planner's run directory for the recorded store "synthetic-200-seed7"
    When the built-in planner plans it in two processes with hash seeds 1 and 2
    Then both printed the same bytes
    And their sha256 is the one recorded for "synthetic-200-seed7"

  Scenario: A plan far past half its bound is printed compact without building the full text
    Given the planner's run directory for the recorded store "valued-300-seed1" with a plan bound of 400000 bytes
    When the built-in planner plans it in two processes with hash seeds 1 and 2
    Then both printed the same bytes
    And the printed plan is the compact shape of the plan the planner builds, byte for byte

  Scenario: Notes without paths, links or dates never compile the patterns that look for them
    Given the planner's run directory for the recorded store "synthetic-200-seed7"
    When the planner plans it in a fresh interpreter that reports which patterns it compiled
    Then none of the path, URL, link, backtick and reminder patterns was compiled
    And the printed plan's sha256 is the one recorded for "synthetic-200-seed7"

  Scenario: The plan of a store with many shared subjects passes the default worker output bounds
    Given the planner's run directory for the recorded store "synthetic-2000-seed7"
    When the built-in planner plans it in two processes with hash seeds 1 and 2
    Then both printed the same bytes
    And their sha256 is the one recorded for "synthetic-2000-seed7"
    And the printed plan is extracted as one plan under the default worker output bounds

  @stress
  Scenario: The plan of a 20,000-memory store of values and reminders fits the default plan bound
    Given the planner's run directory for the recorded store "valued-20000-seed4"
    When the built-in planner plans it in two processes with hash seeds 1 and 2
    Then both printed the same bytes
    And their sha256 is the one recorded for "valued-20000-seed4"
    And the printed plan is extracted as one plan under the default worker output bounds
    And its notes say how many memories' changes were left for the next run

  @stress
  Scenario: The plan of a 20,000-memory store passes the default worker output bounds
    Given the planner's run directory for the recorded store "synthetic-20000-seed7"
    When the built-in planner plans it in two processes with hash seeds 1 and 2
    Then both printed the same bytes
    And their sha256 is the one recorded for "synthetic-20000-seed7"
    And the printed plan is extracted as one plan under the default worker output bounds
