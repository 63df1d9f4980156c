Feature: The agent CLI presets run the real CLIs under the sandbox
  The shipped presets for Claude Code, Pi and Codex start the CLIs installed from
  npm inside memfold's sandbox, with only an API key and the endpoint variables
  named in their config; the final agent message is the plan. The model is a
  fake server on 127.0.0.1 that answers with the plan for the run it is asked about.

  Background:
    Given a store of safe, private, expired and hand-copied memories

  Scenario Outline: A real agent CLI consolidates through its shipped preset
    Given the real "<cli>" CLI from npm, configured from its preset to call the fake model
    When I run "consolidate --no-context --worker <cli>"
    Then the exit code is 0
    And the receipt says the plan came from the "<source>" stream
    And the fake model was asked about this very run
    And both roots hold what the plan said
    And the receipt lists the sandbox in force with nothing missing

    Examples:
      | cli    | source        |
      | claude | claude-result |
      | pi     | pi-json       |
      | codex  | codex-json    |

  Scenario Outline: A real agent CLI whose model answers prose changes nothing
    Given the real "<cli>" CLI from npm, configured from its preset to call the fake model
    And the fake model answers in prose only
    And I remember the state of both roots
    When I run "consolidate --no-context --worker <cli>"
    Then the exit code is 4
    And the error names "worker.no-plan"
    And both roots are as remembered
    And no receipt was added

    Examples:
      | cli    |
      | claude |
      | codex  |

  Scenario Outline: A real agent CLI whose model drops a memory without a successor is refused
    Given the real "<cli>" CLI from npm, configured from its preset to call the fake model
    And the fake model answers a plan that deletes a memory without naming a successor
    And I remember the state of both roots
    When I run "consolidate --no-context --worker <cli>"
    Then the exit code is 1
    And the error names "plan.delete.unaccounted"
    And both roots are as remembered
    And no receipt was added

    Examples:
      | cli    |
      | claude |
      | pi     |
      | codex  |
