Feature: Everyday use that does not fight the user
  People name memories in words, make typos in files, give bad dates, bring
  memories from other tools and schedule runs on a fresh machine. memfold
  takes the words, works around one broken file, explains each refusal and
  reports every difference it finds.

  Background:
    Given an initialised project

  Scenario: A memory named in words gets a type-prefixed file name and keeps the words
    When I run "add 'Deploy target' -d 'deploys go through ops/deploy.sh' -t project"
    Then the exit code is 0
    And the private store holds "project_deploy-target.md"
    And the private copy of "project_deploy-target.md" has the name "Deploy target"

  Scenario Outline: show, update and forget take the title, the slug or the file name
    Given the memory "Deploy target" with description "deploys go through ops/deploy.sh"
    When I run "<command>"
    Then the exit code is 0
    And the output mentions "<says>"

    Examples:
      | command                                             | says                       |
      | show 'Deploy target'                                | name: Deploy target        |
      | show deploy-target                                  | name: Deploy target        |
      | update project_deploy-target -d 'blue/green deploys' | rewrite project_deploy-target.md |
      | forget project_deploy-target.md                     | delete project_deploy-target.md  |

  Scenario: A name that fits two memories is refused with both candidates
    Given the memory "Build cache" with description "the build cache lives in .cache/build"
    And the memory "user_build-cache" with description "I wipe my build cache weekly"
    When I run "--json forget build-cache"
    Then the exit code is 1
    And the JSON error code is "memory.ambiguous"
    And the output mentions "project_build-cache.md"
    And the output mentions "user_build-cache.md"
    And both roots are unchanged

  Scenario Outline: One broken file never stops the rest of the store
    Given the memory "project_good" with description "the build uses make"
    And a broken memory file "project_bad.md" with <problem>
    When I run "<command>"
    Then the exit code is 0
    And the private copy of "project_bad.md" is unchanged

    Examples:
      | problem               | command                                   |
      | invalid YAML          | list                                      |
      | no frontmatter        | search make                               |
      | an unknown type       | add project_more -d 'tests run with make' |
      | no description        | status                                    |
      | bytes that are not UTF-8 | show project_good                      |

  Scenario: doctor names the broken file with its full path, the problem and the fix
    Given a broken memory file "project_bad.md" with invalid YAML
    When I run "doctor"
    Then the exit code is 1
    And the output names the full path of "project_bad.md"
    And the output mentions "memory.yaml"
    And the output mentions "memfold forget project_bad.md"

  Scenario: Consolidation leaves a broken file untouched and says so
    Given the memory "project_good" with description "the build uses make"
    And a broken memory file "project_bad.md" with no description
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the output mentions "untouched"
    And the private copy of "project_bad.md" is unchanged

  Scenario: forget removes a broken file
    Given a broken memory file "project_bad.md" with invalid YAML
    When I run "forget project_bad"
    Then the exit code is 0
    And the private store does not hold "project_bad.md"

  Scenario: inject says which file it skipped
    Given the memory "project_good" with description "the build uses make"
    And a broken memory file "project_bad.md" with an unknown type
    When I run "inject"
    Then the exit code is 0
    And the output mentions "skipped 1 private memory file(s) that do not parse: project_bad.md"

  Scenario Outline: Bad input is a clear error with a stable code and exit code
    Given the memory "project_a" with description "the first memory"
    When I run "--json <command>"
    Then the exit code is <exit>
    And the JSON error code is "<code>"
    And both roots are unchanged

    Examples:
      | command                                                  | exit | code            |
      | add project_x -d d --expires 2026-13-45                  | 1    | memory.expires  |
      | add project_x -d d --expires 2026-02-30                  | 1    | memory.expires  |
      | add project_x -d d --body-file /nonexistent-dir/body.txt | 1    | input.body-file |
      | import claude /nonexistent-dir/memory                    | 1    | import.source   |
      | --global mirror check                                    | 2    | mirror.global   |
      | --global trust                                           | 2    | trust.global    |

  Scenario: Claude Code files are imported as Claude Code reads them
    Given a Claude Code memory dir with a file "部署.md" named "Yes" described as "Note: use pnpm #quick"
    When I import that Claude Code memory dir
    Then the exit code is 0
    And the private copy of "bushu.md" has the name "Yes"
    And the private copy of "bushu.md" has the description "Note: use pnpm #quick"
    And the output mentions "imported 部署.md as bushu.md"

  Scenario: A safe memory deleted from the mirror is the sync's business, and status names it
    Given the safe memory "project_ci" with description "CI runs on every push"
    When I delete the mirror copy of "project_ci.md"
    And I run "mirror check"
    Then the exit code is 0
    When I run "status"
    Then the exit code is 0
    And the output mentions "project_ci.md was deleted in the mirror"

  Scenario: The printed cron line works on a fresh home
    Given the memory "project_a" with description "the first memory"
    When I run the printed cron line
    Then it exits 0 and the cron log holds a line for this project

  Scenario: update with no change writes nothing and no receipt
    Given the memory "project_a" with description "the first memory"
    And I remember the receipts
    When I run "update project_a -d 'the first memory'"
    Then the exit code is 0
    And both roots are unchanged
    And no receipt was added

  Scenario: A second undo of the same run explains itself
    Given the memory "project_a" with description "the first memory"
    When I undo the last run
    And I run "--json undo <last undone run>"
    Then the exit code is 5
    And the JSON error code is "undo.already-undone"
