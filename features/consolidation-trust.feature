Feature: Consolidation you can trust on real stores
  A consolidation keeps distinct subjects apart, resolves a value change on one
  subject as a supersession, never loses a fact without naming where it went,
  never hides safe content from the mirror, and holds every worker to that.

  Scenario: Two hosts and two apps that read alike are neither merged nor superseded
    Given memories about the hosts web01 and web02 and the apps app1 and app2
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And every memory file is byte for byte as before
    And the private index lists 4 memories
    And the mirror holds 2 memory files

  Scenario: A newer value on the same subject supersedes the older memory and names it as the successor
    Given the safe memory "API port" saying 8080 and a newer one saying 9090 since the proxy change
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And "project_api-port.md" is gone from both roots
    And the plan deletes "project_api-port.md" as SUPERSEDED into "project_api-port-2.md"
    And "project_api-port-2.md" still says "Health checks hit /healthz" and no longer says "8080"
    And the private index has exactly one line titled "API port"
    And the mirror holds 1 memory files
    And the summary lists "The API listens on 8080 (see config/api.yaml)." as no longer carried by any memory

  Scenario: A newer fact that shares one word with an older one does not supersede it
    "redis port 6380" and a newer "port 5433" share the word "port" and nothing else: two facts,
    so the older is carried into the newer memory, not dropped as an outdated value.
    Given two safe memories titled "Ports", an older saying "redis port 6380" and a newer saying "port 5433"
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And no memory is deleted as SUPERSEDED
    And the summary lists no line as no longer carried
    And one memory in both roots says "redis port 6380" and "port 5433"

  Scenario: A dry run lists the lines no memory would carry any more and writes nothing
    Given the safe memory "API port" saying 8080 and a newer one saying 9090 since the proxy change
    When I run "consolidate --no-context --dry-run"
    Then the exit code is 0
    And the output mentions "no memory carries any more, from project_api-port.md"
    And the output mentions "The API listens on 8080 (see config/api.yaml)."
    And both roots are unchanged

  Scenario: Two memories never keep the same title
    Given two memories titled "Deploy notes", one for web01 and one for web02
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And no two memories share a title
    And both deploy notes still hold their facts

  Scenario: Duplicates in two visibilities stay apart unless the private one only repeats the safe one
    Given a safe memory, a private near copy that says more, and a private exact copy of another safe memory
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the private near copy and its safe original are both kept unchanged
    And the private exact copy is merged into its safe original, which stays safe and unchanged
    And the mirror holds 2 memory files
    And the summary counts 0 visibility changes

  Scenario: An absorbed description stays in the merged memory and search still finds it
    Given two duplicate memories whose descriptions differ
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And one memory holds both descriptions
    When I run "search xylophone"
    Then the exit code is 0
    And the output mentions "project_shop-cache-new.md"

  Scenario: Over capacity with nothing safe to merge, the run says so and status stops calling it due
    Given 30 distinct memories sharing one topic word and an index bound of 20 lines
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And no memory was merged
    And the summary says the index stays over capacity by 10 lines and names the oldest memory
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary is a verified no-op
    When I run "status --json"
    Then the exit code is 0
    And status says consolidation is not due and names the oldest memory

  Scenario Outline: A worker's plan that loses, hides or leaves ungrounded is refused with a stable code
    Given a store with a duplicate pair, a safe memory and a project memory that names no file
    And a worker whose plan <fault>
    When I run "consolidate --no-context --worker fake --unsafe-no-sandbox --json"
    Then the exit code is 1
    And the error code is "<code>"
    And both roots are unchanged

    Examples:
      | fault                                                    | code                       |
      | deletes the duplicate without naming a successor         | plan.delete.unaccounted    |
      | deletes the duplicate into a memory that will not exist  | plan.delete.into           |
      | makes the safe memory private without merging anything   | plan.visibility.privatised |
      | grounds the project memory with no observation           | plan.grounding.unobserved  |

  @stress
  Scenario: A 3,000-memory store consolidates with the default config, and a second run is a no-op status agrees with
    Given a generated store of 3000 memories and the default config
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the mirror still holds most of its memory files
    And every deleted memory names a successor that exists or has a time verdict
    When I run "consolidate --no-context --json"
    Then the exit code is 0
    And the summary is a verified no-op
    When I run "status --json"
    Then the exit code is 0
    And status says consolidation is not due and names the oldest memory
