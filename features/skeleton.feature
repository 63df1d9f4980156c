Feature: Every transaction goes through one skeleton
  Consolidation, direct edits, imports, undo, init and recover take the same
  steps before their own: the layout, a run id, the project lock, recovery of
  an interrupted run. A direct edit is bound by the same manifest as a
  consolidation, and a failing disk changes nothing.

  Background:
    Given an initialised project

  Scenario: A direct edit writes a manifest the manifest schema accepts
    When I run "add project_ports -d 'dev server on port 8080' --visibility safe"
    Then the exit code is 0
    And the newest run's manifest is valid against schemas/manifest.schema.json
    And the newest run's manifest has context mode "direct"

  Scenario: A consolidation writes a manifest the same schema accepts
    Given the memory "project_api" with description "the API listens on port 8080"
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the newest run's manifest is valid against schemas/manifest.schema.json
    And the newest run's manifest has context mode "disabled"

  Scenario: A full disk during an edit is an I/O failure that changes nothing
    Given the memory "project_api" with description "the API listens on port 8080"
    And I remember the state of both roots
    And every write fails with "No space left on device"
    When I run "--json add project_db -d 'the database is Postgres 16'"
    Then the exit code is 6
    And the JSON error code is "apply.io"
    And both roots are as remembered

  Scenario: /consolidate from a host honours the configured worker output bounds
    Given twelve memories about release steps
    And the config bounds a plan to 4096 bytes
    When I run "--json hooks consolidate claude no-context"
    # The host entry point reports a failure in its output with exit 0: Claude Code drops the output of a failing command.
    # Not even one group of changes fits 4096 bytes: the built-in planner refuses rather than print past the bound.
    Then the exit code is 0
    And the JSON error code is "planner.plan-bound"
    When I run "--json consolidate --no-context"
    Then the exit code is 4
    And the JSON error code is "planner.plan-bound"
