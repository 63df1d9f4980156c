Feature: Everyday curation by hand
  People curate memory themselves: they edit in their editor, rename, clear, and
  need to find the folders. Every such change is a receipted transaction.

  Background:
    Given an initialised project
    And the safe memory "project_ci" with description "CI runs on every push"

  Scenario: Editing with a valid change commits it
    When I edit "project_ci" with an editor that sets the description to "CI runs on every push and tag"
    Then the exit code is 0
    And the private copy of "project_ci.md" says "CI runs on every push and tag"
    And the mirror copy of "project_ci.md" is byte-identical to the private copy
    And the newest receipt is for command "edit"

  Scenario: An invalid edit is shown and nothing is written on abort
    Given I remember the state of both roots
    When I edit "project_ci" with an editor that removes the frontmatter and then abort
    Then the exit code is 1
    And the output mentions "memory.frontmatter"
    And both roots are as remembered

  Scenario: An invalid edit can be re-opened and fixed
    When I edit "project_ci" with an editor that first breaks the file, then fixes it, answering re-open
    Then the exit code is 0
    And the private copy of "project_ci.md" says "fixed on the second try"

  Scenario: A secret typed into a safe memory is refused
    Given I remember the state of both roots
    When I edit "project_ci" with an editor that adds a Slack token and then abort
    Then the exit code is 1
    And the output mentions "slack"
    And both roots are as remembered

  Scenario: Edit refuses without a terminal
    When I run "edit project_ci"
    Then the exit code is 2
    And the error mentions "needs a terminal"

  Scenario: Rename keeps the body and the chain
    When I run "rename project_ci project_continuous-integration"
    Then the exit code is 0
    And the private store holds "project_continuous-integration.md"
    And the mirror does not hold "project_ci.md"
    And the body of "project_continuous-integration.md" is "project_ci body"
    When I run "audit"
    Then the exit code is 0

  Scenario: Clear then undo restores every byte
    Given the memory "user_tabs" with description "prefers tabs"
    And I remember the state of both roots
    When I run "clear --yes"
    Then the exit code is 0
    And the private store holds no memory
    When I undo the last run
    Then the exit code is 0
    And both roots are as remembered

  Scenario: Clear without a terminal and without --yes refuses
    When I run "clear"
    Then the exit code is 2
    And the private store holds "project_ci.md"

  Scenario: path --json names every folder
    When I run "path --json"
    Then the exit code is 0
    And the JSON has the keys home, projectRoot, projectHome, privateStore, mirror, globalStore, runs, receipts, config

  Scenario: A broken config is reported, kept byte-identical, and only what needs it refuses
    Given the config file holds a worker with an empty command
    When I run "config check"
    Then the exit code is 2
    And the output mentions "workers.broken.argv"
    When I run "add project_new -d 'a new fact'"
    Then the exit code is 0
    When I run "consolidate --worker broken"
    Then the exit code is 2
    And the config file is byte-identical to what was written
