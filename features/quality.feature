Feature: Quality on material memfold never saw
  Consolidation never merges facts whose roles differ and the mirror keeps exactly what the plan
  kept; a consolidation waits out a short write; `list` names the files it cannot show; one worker
  setting and one allow-list serve every entry point, and hosts run consolidation in the background;
  the validator holds grounding claims to what exists; and the scenarios the reference tool tests
  are tested here too.

  # --- subject identity that keeps roles ------------------------------------------------------

  Scenario: The same words with things in swapped roles are never merged, a real duplicate is
    Given memories that swap pairs, direction, and key and value, and one saved twice
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the plan deletes only the memory saved twice, into its newer copy
    And every memory with swapped roles is byte for byte as before

  Scenario: The mirror after a consolidation holds exactly the safe memories the plan kept
    Given a labelled store of 600 memories with role swaps and duplicates
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the plan merges exactly the labelled duplicates
    And the mirror holds exactly the safe memories of the private store, byte for byte
    And the mirror lost exactly the safe labelled duplicates

  Scenario: The evaluation set holds role swaps and keeps merge precision at 1.000
    When I run the consolidation evaluation
    Then its case kinds include "role-swap-pairs", "role-swap-direction" and "role-swap-key-value"
    And its merge precision is 1.0 and its merge recall is reported

  # --- consolidation waits for short writes ---------------------------------------------------

  Scenario: A consolidation started while a short write holds the lock waits for it, then commits
    Given an initialised project with two exact duplicates
    And the project lock is held by another process for 1.5 seconds
    When a consolidation starts as its own process
    Then it exits 0 after the holder let go
    And a new receipt is in the log

  Scenario: A consolidation gives up after consolidate.lock_wait and names the holder
    Given an initialised project with two exact duplicates
    And the config sets consolidate.lock_wait to 0.5
    And the project lock is held by another process for 60 seconds
    When a consolidation starts as its own process
    Then it exits 3 with "lock.held" naming the holder's run and pid
    And it waited at least 0.5 seconds
    And both roots are unchanged

  Scenario: --skip-if-locked keeps its meaning: a locked project is a skip, with no wait
    Given an initialised project with two exact duplicates
    And the config sets consolidate.lock_wait to 600
    And the project lock is held by another process for 60 seconds
    When I run "consolidate --skip-if-locked --json" as its own process
    Then it exits 0 with a skip for "locked" while the holder still holds the lock
    And both roots are unchanged

  Scenario: Writers and a consolidation started among them all commit
    Given an initialised project with two exact duplicates
    When 2 writer processes add 12 memories each and a consolidation starts among them
    Then every writer and the consolidation exited 0
    And the private store holds all 24 new memories
    And "audit" exits 0 without hand edits

  # --- list names broken files --------------------------------------------------------------

  Scenario: list names each file it cannot use on stderr, lists the rest and keeps its exit code
    Given an initialised project with the memory "Deploy day"
    And a memory file that does not parse and a file "Memory.md" in the private store
    When I run "list"
    Then the exit code is 0
    And stdout lists "project_deploy-day.md" and neither unusable file
    And stderr has one line for each unusable file naming its path and "memfold doctor"
    When I run "list --json"
    Then the exit code is 0
    And the JSON lists 1 memory and a "broken" array with both files, their paths and "memfold doctor"

  # --- seed parity: one worker setting, one allow-list ----------------------------------------

  Scenario: An unknown --worker is refused before anything is started
    Given an initialised project with two exact duplicates
    When I run "consolidate --no-context --worker nosuch"
    Then the exit code is 2
    And the error mentions "usage.worker"
    And the error mentions "known workers: builtin"
    And no run directory was made and no lock owner was recorded
    And both roots are unchanged

  Scenario: An unknown consolidate.worker in the config is refused the same way
    Given an initialised project with two exact duplicates
    And the config sets consolidate.worker to "gone"
    When I run "consolidate --no-context"
    Then the exit code is 2
    And the error mentions "config.worker"
    And no run directory was made and no lock owner was recorded

  Scenario Outline: consolidate.worker is the worker of every entry point
    Given an initialised project with two exact duplicates
    And the config names the worker "scripted" as consolidate.worker
    When consolidation runs from <entry>
    Then the newest receipt names the worker "scripted"

    Examples:
      | entry                     |
      | the CLI                   |
      | Claude Code's /consolidate |
      | cron                      |
      | the MCP server            |

  Scenario: Claude Code's /consolidate runs in the background and says where to look
    Given an initialised project with two exact duplicates
    When I run "hooks consolidate claude --background no-context"
    Then the exit code is 0
    And the output names the log file and "memfold status"
    And the background run ends with a new receipt and its summary in the log file
    And the log file holds the run's progress lines

  # --- grounding and roots ------------------------------------------------------------------

  Scenario Outline: A worker's grounding that claims more than it saw is refused, with or without git
    Given an initialised project <git> with a project memory naming "ops/deploy.sh" and the directory "ops"
    And a worker whose plan <fault>
    When I run "consolidate --no-context --worker fake"
    Then the exit code is 1
    And the error mentions "<code>"
    And both roots are unchanged

    Examples:
      | git         | fault                                                  | code                      |
      | with git    | marks the directory "ops" found                        | plan.grounding.not-file   |
      | without git | marks the directory "ops" found                        | plan.grounding.not-file   |
      | with git    | marks the memory grounded with no observation          | plan.grounding.unobserved |
      | without git | marks the memory grounded with no observation          | plan.grounding.unobserved |
      | without git | marks the memory not-applicable without a reason       | missing required field reason |

  Scenario: The private store and the mirror must be two distinct directories
    Given a project whose memfold home lies inside its .memory directory
    When I run "init" with that home
    Then the exit code is 1
    And the error mentions "path.roots-overlap"
    And nothing was created in the project

  Scenario: The mirror holds at most limits.mirror_bytes of safe memories in all
    Given an initialised project
    And the config sets limits.mirror_bytes to 4096
    And the safe memory "project_a.md" with description "alpha fact"
    When I add a safe memory of 5000 bytes
    Then the exit code is 1
    And the error mentions "bounds.mirror-bytes"
    And both roots are unchanged
    When I add a private memory of 5000 bytes
    Then the exit code is 0

  # --- scenarios the reference tool tests ---------------------------------------------------

  Scenario: Two first runs racing for the lock on a missing home: one commits, the other is told it is locked
    Given a project with a missing memfold home
    When two first runs start at once while the winner's worker takes 3 seconds
    Then one exits 0 and the other exits 3 with "lock.held"
    And neither reports a setup error

  Scenario: The installed session and prompt hooks never start a consolidation
    Given an initialised project with two exact duplicates
    And Claude Code's hooks installed with --prompt, and Codex's
    When every installed hook command runs with its host's event on stdin
    Then every hook exits 0
    And no run directory was made and the receipt log is as before

  Scenario: --scope related consolidates only what the session touched
    Given an initialised project with two exact duplicates and two unrelated memories
    And a session transcript that mentions only the duplicates
    When I run "consolidate --context <transcript> --scope related --json"
    Then the exit code is 0
    And the run selected only the duplicates
    And the duplicates were merged and the unrelated memories are byte for byte as before

  Scenario Outline: A kill between the worker's answer and the commit point leaves no receipt and no success
    Given an initialised project with two exact duplicates
    When a consolidation is killed <when>
    Then it reported no success
    And no new receipt is in the log
    And after "recover" both roots are unchanged

    Examples:
      | when                                  |
      | right after the worker answered       |
      | during validation                     |
      | in the check of the staged post-state |

  Scenario Outline: A receipt whose identity was edited is caught by verify
    Given an initialised project with two exact duplicates
    And a consolidation has committed
    When I set "<field>" of the newest receipt to another digest
    And I run "verify"
    Then the exit code is 7
    And the output mentions "FAIL  [receipt.identity] receipt.<field>"

    Examples:
      | field        |
      | scopeDigest  |
      | artifactHash |

  Scenario: A memory marked private placed in .memory/ is caught and never adopted
    Given an initialised project
    And a file marked private placed in the mirror as "project_leak.md"
    When I run "mirror check"
    Then the exit code is 7
    And the output mentions "project_leak.md is marked private"
    When I run "trust"
    Then the exit code is 0
    And the private store does not hold "project_leak.md"
    When I run "status"
    Then the output mentions "project_leak.md is marked private but sits in the shared mirror"

  Scenario: A mixed-case Memory.md in the store is neither a memory nor the index
    Given an initialised project with the memory "Deploy day"
    And a file "Memory.md" in the private store
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And "Memory.md" is byte for byte as placed and the index is "MEMORY.md"
    And the mirror holds no "Memory.md"
    When I run "doctor"
    Then the output mentions "Memory.md"

  Scenario: A memory file swapped for a link while the index loader reads it is never read through the link
    Given an initialised project with the memory "Deploy day"
    And a file outside the store holding a secret word
    When the search index is rebuilt while "project_deploy-day.md" is swapped for a link to that file
    Then the index holds no row with the secret word
    And the file outside is unchanged

  # --- hosts run consolidation in the background --------------------------------------------

  Scenario: Pi runs /consolidate in the background and shows its progress and its end on the status line
    Given Pi with memfold's extension installed and a store with two exact duplicates
    When Pi in RPC mode is asked for "/consolidate no-context"
    Then Pi accepted the command before the consolidation ended
    And the status line showed "memfold: consolidating (planning)" and then "memfold: consolidated"
    And a notification reported the receipt
    And a new receipt is in the log

  Scenario: Claude Code's /consolidate returns at once, says where to look, and the run it started commits
    Given Claude Code with memfold installed and a store with two exact duplicates
    When Claude Code runs "/consolidate no-context"
    Then the model was shown the log file and "memfold status"
    And the background run ends with a new receipt and its summary in the log file
