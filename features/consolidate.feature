Feature: Consolidation as one receipted transaction
  `memfold consolidate` holds the project lock, snapshots its inputs, runs a worker
  it does not trust, and commits the validated plan atomically with a receipt an
  auditor can check. A failure at any stage leaves both roots byte-identical.

  Scenario: The built-in planner merges duplicates, drops expired memories and mirrors exactly the safe ones
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the duplicate pair is merged into one file that keeps every fact line
    And the paraphrase is merged into the safe memory
    And the expired memory is gone from both roots
    And the mirror holds exactly the safe memories, byte-identical to the private copies
    When I run "verify"
    Then the exit code is 0
    When I run "audit"
    Then the exit code is 0
    Given I remember the state of both roots
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary is a verified no-op with 0 operations
    And both roots are as remembered

  Scenario: The summary names the lines a superseded memory loses, as the run read them
    Given the memory "project_api-port" stating "The API port is 9090" and "Deploys go through the proxy"
    And an older hand-written "project_api-port-old" stating "The API port is 8080" and "Requests time out after 30 s"
    When I run "consolidate --no-context --dry-run --json"
    Then the exit code is 0
    And the summary's dropped lines of "project_api-port-old.md" are "The API port is 8080|The API port is 8080."
    When I rewrite "8080" as "7070" in "project_api-port-old.md" by hand
    And I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary's dropped lines of "project_api-port-old.md" are "The API port is 7070|The API port is 7070."
    And "project_api-port-old.md" is gone and "project_api-port.md" holds "Requests time out after 30 s."

  Scenario: The run's own files are durable before the commit point
    Given every fsync and rename is recorded
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the run's snapshot, manifest, task, plan and validation were fsynced before the journal's commit point

  Scenario: A consolidation process ends once its summary and its state cache are written
    Given the memory "project_deploys" added in a process of its own, and no state cache
    When I run "--json consolidate --no-context" as a process of its own
    Then that process exited 0 with its whole JSON summary, which names its receipt
    And the state cache was written as the process ended

  Scenario: A dry run writes nothing but shows what would change
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When I run "consolidate --no-context --dry-run"
    Then the exit code is 0
    And the output mentions "dry run: nothing written"
    And the output mentions "project_freeze.md"
    And both roots are unchanged
    And no receipt was added

  Scenario: The JSON summary has a stable set of keys
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary has exactly the keys "capacity created deleted dropped dryRun expired memories merged movedAcrossVisibility noOp ok planDigest previous reasons receipt reclassified rewritten runDir runId selected timings untouched verified visibilityChanges"
    And the summary's planDigest is the sha256 of the run's plan.json

  Scenario: A first run on empty roots creates only the roots and their indexes
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary is a verified no-op with 0 operations
    And the private store holds only an empty index, the mirror nothing, and the chain head is beside it
    And 1 receipt was written
    When I run "verify"
    Then the exit code is 0

  Scenario: An empty selected scope is a verified no-op
    Given the memory "project_api" with description "The API listens on port 8080"
    And the safe memory "project_ci" with description "CI runs on every push"
    And a transcript that mentions none of the memories
    When I run "consolidate --context <transcript> --scope related --json"
    Then the exit code is 0
    And the summary is a verified no-op with 0 operations
    And the run's manifest selects nothing
    And both roots are unchanged
    And 1 receipt was added

  Scenario: Without context the manifest is bound to the exact snapshot bytes
    Given the memory "project_api" with description "The API listens on port 8080"
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the sha256 of the run's snapshot.json is the manifest's artifactHash and snapshotDigest
    And the receipt's artifactHash is the sha256 of the run's snapshot.json
    And the run's snapshot says the context is disabled

  Scenario: Editing the transcript after the run changes neither the snapshot nor the receipt
    Given the memory "project_api" with description "The API listens on port 8080"
    And a transcript that mentions "project_api"
    When I run "consolidate --context <transcript>"
    Then the exit code is 0
    When I rewrite the transcript
    Then the run's snapshot.json and its receipt are byte-identical to before
    When I run "verify"
    Then the exit code is 0

  Scenario: A second consolidation waits consolidate.lock_wait (5 s), then exits 3 naming the run that holds the lock
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    And a worker "slow" that sleeps 12 seconds before printing the planner's plan
    When a consolidation with worker "slow" is started as a process and holds the lock
    And I run "consolidate --no-context"
    Then the exit code is 3
    And the error names the first consolidation's run
    And the first consolidation exits 0

  Scenario: The store changing while the worker runs is refused as stale
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When the private memory is edited while the worker runs "consolidate --no-context"
    Then the exit code is 5
    And the error mentions "user_token.md"
    And only the hand edit changed the roots
    And no receipt was added

  Scenario: A failure after earlier writes of the commit restores every byte
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When the 4th rename of the commit fails during "consolidate --no-context"
    Then the exit code is 6
    And some memory was already renamed into place before the failure
    And both roots are unchanged
    And no receipt was added
    When I run "audit"
    Then the exit code is 0

  Scenario: Replacing plan.json with another valid plan is caught by verify
    Given a store with a duplicate pair, a paraphrase, an expired, a private and a safe memory
    When I run "consolidate --no-context"
    And I run "consolidate --no-context --dry-run"
    And I copy the dry run's plan.json over the committed run's plan.json
    And I run "verify <committed run>"
    Then the exit code is 7
    And the output mentions "planDigest"

  Scenario Outline: A doctored receipt is rejected by verify
    Given the memory "project_api" with description "The API listens on port 8080"
    When I run "consolidate --no-context"
    And I run "consolidate --no-context"
    And I <doctor> the newest run's post receipt
    And I verify the newest run's post receipt file
    Then the exit code is 7
    And the output mentions "<names>"

    Examples:
      | doctor                                  | names       |
      | remove the phase from                   | phase       |
      | set the phase to "pre" in               | phase       |
      | put the previous run's receipt in place of | run dir  |

  Scenario: A worker that only claims success is refused
    Given the memory "project_api" with description "The API listens on port 8080"
    And a worker "liar" that prints "All checks PASSED" and no plan
    When I run "consolidate --no-context --worker liar --json"
    Then the exit code is 4
    And the error code is "worker.no-plan"
    And both roots are unchanged
    And no receipt was added

  Scenario: A worker past its timeout is killed with every descendant
    Given the memory "project_api" with description "The API listens on port 8080"
    And a worker "stuck" that starts a detached grandchild and hangs, with a timeout of 2 seconds
    When a consolidation with worker "stuck" runs as a process
    Then while it ran the worker and its grandchild were alive
    And it exited 4 naming "worker.timeout"
    And no process with the worker's token is left
    And both roots are unchanged
    And no receipt was added

  Scenario Outline: Worker output exactly at a bound is accepted, one past it is refused
    Given the memory "project_api" with description "The API listens on port 8080"
    And a worker "noisy" that prints <lines> lines of <pad> bytes ending with the plan as an event line
    When I run "consolidate --no-context --worker noisy --json"
    Then the exit code is <code>
    And the outcome is <outcome>

    Examples:
      | lines | pad     | code | outcome                |
      | 65536 | 16      | 0    | committed              |
      | 65537 | 16      | 4    | worker.too-many-lines  |
      | 3     | 1048576 | 0    | committed              |
      | 3     | 1048577 | 4    | worker.line-too-long   |
