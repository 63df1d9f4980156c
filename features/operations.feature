Feature: Unattended consolidation, scheduling, imports and export

  Scenario: A cron run over three projects: one locked, one not due, one due
    Given the config says consolidation is due after 2 writes
    And a project "locked" with 2 writes
    And a project "fresh" with 1 write, consolidated since
    And a project "due" with 2 writes
    And the project "locked" is locked by another process
    When cron runs "consolidate --all-projects --if-due --skip-if-locked"
    Then the cron run exits 0 and prints one JSON line per project and nothing else
    And the line for "locked" is skipped with reason "locked"
    And the line for "fresh" is skipped as not due
    And the line for "due" is consolidated and verified
    And the cron log names the project "locked"
    And status of "due" says consolidation is not due

  Scenario: A scheduled run past the due hours leaves a store the last consolidation settled alone
    Given the config says consolidation is due after 24 hours
    And a project "settled" with 1 write, consolidated since
    When cron runs "consolidate --all-projects --if-due" 2 days later
    Then the line for "settled" is skipped because nothing changed since the last consolidation
    And the project "settled" has no new receipt
    When the project "settled" gets 1 more write
    And cron runs "consolidate --all-projects --if-due" 2 days later
    Then the line for "settled" is consolidated and verified

  Scenario: A systemd user timer and service
    When I run "schedule --systemd --install" with a user home
    Then the user unit dir holds "memfold-consolidate.service" and "memfold-consolidate.timer"
    And the timer is hourly and persistent and the service runs "consolidate --all-projects --if-due --skip-if-locked"

  Scenario: A crontab line
    When I run "schedule --cron"
    Then the exit code is 0
    And the output mentions "consolidate --all-projects --if-due --skip-if-locked"

  Scenario Outline: Importing <format> is one receipted transaction, and importing twice adds nothing
    Given an initialised project
    When I import "<format>" from "<source>"
    Then the import exits 0 with a receipt and <count> new memories
    And the import skipped "<skipped>" because "<reason>"
    And every imported memory is "<visibility>" unless listed as safe "<safe>"
    When I import "<format>" from "<source>"
    Then nothing was imported and no receipt was written

    Examples:
      | format    | source                          | count | skipped          | reason                      | visibility | safe           |
      | pi-notes  | pi-notes.md                     | 2     | pi-notes.md:6    | empty note                  | private    | -              |
      | pi-memory | pi-memory                       | 3     | broken.md        | nor valid YAML              | private    | -              |
      | pi-memory | pi-memory                       | 3     | odd-type.md      | is not one of               | private    | -              |
      | claude    | claude                          | 3     | empty.md         | no text to take one from    | private    | -              |
      | harness   | harness/private harness/public  | 2     | project_mixed.md | marked (harness only)       | private    | project_api.md |

  Scenario: A safe memory that holds a secret is not imported
    Given an initialised project
    And a harness pair whose public memory holds a GitHub token
    When I import the harness pair
    Then the import skipped "reference_ci.md" because "privacy"
    And the mirror does not hold "reference_ci.md"

  Scenario: Export then import round-trips to the same memories
    Given an initialised project
    And the memory "project_build.md" with description "builds with pnpm workspaces"
    And the safe memory "reference_docs.md" with description "docs live in docs/"
    When I export the store as a Claude memory dir
    And I import the export into a fresh project
    Then the fresh project's private store is byte-identical to the original's
