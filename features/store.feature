Feature: The memory store
  Every write goes through one transaction: the private store keeps every memory,
  the safe mirror in the repository keeps exactly the safe ones, and nothing is
  ever half-written.

  Background:
    Given an initialised project

  Scenario: A private memory stays out of the repository
    When I run "add user_editor -d 'prefers vim keybindings' -t user -b 'Uses vim.'"
    Then the exit code is 0
    And the private store holds "user_editor.md"
    And the mirror does not hold "user_editor.md"
    And the private index lists "user_editor.md" as harness only
    And the mirror index does not mention "user_editor"

  Scenario: A safe memory is mirrored byte for byte
    When I run "add project_ports -d 'dev server on port 8080' --visibility safe -b 'make dev'"
    Then the exit code is 0
    And the mirror copy of "project_ports.md" is byte-identical to the private copy
    And the mirror index lists "project_ports.md"

  Scenario: A near-duplicate is reported instead of stored twice
    Given the memory "project_deploy" with description "Deploys go through ops/deploy.sh"
    When I run "add project_shipping -d 'deploys go through OPS/deploy.sh.'"
    Then the exit code is 1
    And the error names "project_deploy.md"
    And both roots are unchanged

  Scenario: Making a memory private removes it from the mirror
    Given the safe memory "project_ci" with description "CI runs on every push"
    When I run "update project_ci --visibility private"
    Then the exit code is 0
    And the mirror does not hold "project_ci.md"
    And the mirror index does not mention "project_ci"

  Scenario: Forget then undo restores every byte
    Given the safe memory "project_ci" with description "CI runs on every push"
    And I remember the state of both roots
    When I run "forget project_ci"
    And I undo the last run
    Then the exit code is 0
    And both roots are as remembered

  Scenario: A run keeps its backups in one directory, and older runs' folders still undo
    Given the safe memory "project_ci" with description "CI runs on every push"
    And I remember the state of both roots
    When I run "forget project_ci"
    Then the last run's backup directory holds only files, named by root and file
    When the last run's backups are moved into a folder per root, as older versions kept them
    And I undo the last run
    Then the exit code is 0
    And both roots are as remembered

  Scenario: A second writer waits, then gives up naming the holder
    Given the project lock is held by another process
    When I run "add project_x -d 'a fact'" with a lock timeout of 0.2 seconds
    Then the exit code is 3
    And the error names the holder's run
    And both roots are unchanged

  Scenario: A symlinked memory file is refused and nothing is written outside
    Given a memory file in the private store that is a symlink to a file outside
    When I run "add project_y -d 'another fact'"
    Then the exit code is 1
    And the error mentions "symlink"
    And the file outside is unchanged

  Scenario Outline: A Windows device name never becomes a memory file
    Given I remember the state of both roots
    When I run "add <name> -d 'notes about a device' --visibility safe"
    Then the exit code is 1
    And the error mentions "memory.name-reserved"
    And both roots are as remembered

    Examples:
      | name    |
      | CON.md  |
      | aux.md  |
      | Lpt9.md |

  Scenario Outline: A bare word is a title, so a device name given as one is stored under its type
    When I run "add <name> -d 'notes about a device' --visibility safe"
    Then the exit code is 0
    And the private store holds "<file>"
    And the mirror index lists "<file>"
    And the private store does not hold "<name>.md"

    Examples:
      | name | file            |
      | aux  | project_aux.md  |
      | com1 | project_com1.md |
      | Lpt9 | project_lpt9.md |

  Scenario: A one-word name is a title like any other, and its other spelling finds it
    When I run "add Weather -d 'the forecast service is at weather.internal'"
    Then the exit code is 0
    And the private store holds "project_weather.md"
    And the private store does not hold "Weather.md"
    When I run "add weather -d 'the forecast service moved to forecast.internal'"
    Then the exit code is 0
    And the output mentions "rewrite project_weather.md"
    And the private store holds only "project_weather.md"

  Scenario: A file name's type prefix gives the memory its type
    When I run "add feedback_tabs -d 'tabs, not spaces'"
    Then the exit code is 0
    And the private copy of "feedback_tabs.md" has the line "type: feedback"
    When I run "add reference_docs -d 'docs live in docs/' --type project"
    Then the exit code is 0
    And the private copy of "reference_docs.md" has the line "type: project"
    When I run "add 'Tabs policy' -d 'tabs in Go, spaces elsewhere' --type feedback"
    Then the exit code is 0
    And the private copy of "feedback_tabs-policy.md" has the line "type: feedback"
