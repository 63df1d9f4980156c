Feature: Memories know when the code they cite changed, and what was used
  A memory may cite the repository text it rests on (`--cite PATH:LINES`). Before a memory is shown
  to the model or a person, its citations are checked against the files as they are: text that moved
  still holds, text that changed or a file that is gone marks the memory. When each memory was last
  used is recorded in the private home only.

  Background:
    Given an initialised project
    And the project's Makefile, committed, whose line 5 starts the server on port 8080
    And the memory "project_dev-port" saying the port is 8080, citing "Makefile:5"

  Scenario: A cited line that changes marks the memory in inject, the prompt hook and status
    When line 5 of the Makefile changes to port 9090
    Then the session block shows "[code changed since this was written: Makefile:5]"
    And the prompt hook for "dev server port" shows "[code changed since this was written: Makefile:5]"
    And status lists "project_dev-port.md" as drifted, with the lines "-	python -m http.server 8080" and "+	python -m http.server 9090"

  Scenario: Lines inserted above the cited line leave the memory unmarked
    When two lines are inserted at the top of the Makefile
    Then the session block shows "project_dev-port.md" and no mark
    And status lists no drifted memory

  Scenario: A deleted file is reported gone
    When the Makefile is deleted
    Then the session block shows "[cited file is gone: Makefile]"
    And status lists "project_dev-port.md" as drifted

  Scenario: A file moved with git mv is followed and reported
    When the Makefile is moved to "build.mk" with git mv
    Then the session block shows "[cited file moved: Makefile is now build.mk]"
    When I run "update project_dev-port"
    Then the memory cites "build.mk:5"
    And the session block shows "project_dev-port.md" and no mark

  Scenario: update re-anchors the citation and clears the mark
    Given line 5 of the Makefile changes to port 9090
    When I run "update project_dev-port --description 'the dev server listens on 9090'"
    Then the session block shows "project_dev-port.md" and no mark
    And status lists no drifted memory
    And the memory's citation of "Makefile:5" holds the hash of "	python -m http.server 9090"

  Scenario: review lists the drifted memory with what changed, for agents too
    Given line 5 of the Makefile changes to port 9090
    When I run "review --json"
    Then the review lists "project_dev-port.md" with the status "changed"

  Scenario: The built-in planner flags a memory whose cited code changed and keeps it
    Given line 5 of the Makefile changes to port 9090
    When I run "consolidate --no-context --json"
    Then the plan gives "project_dev-port.md" the verdict "CONTRADICTED" with "Makefile:5" in its reason
    And "project_dev-port.md" is still in the private store

  Scenario: A plan that cites a path outside the repository is refused
    Given the repository holds a symlink "escape" to a directory outside it
    And a worker whose plan rewrites "project_dev-port.md" citing "escape/secret.txt"
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is refused with "plan.evidence.escape" and nothing is written

  Scenario: Usage is recorded by inject and search in the private home, none of it in the mirror
    Given the safe memory "project_ci" with description "CI runs the test suite on every push"
    When the prompt hook for "dev server port" runs
    And I run "search suite"
    Then the usage log in the private home records "project_dev-port.md" injected and "project_ci.md" searched
    And nothing in the mirror, the chain heads or git's view of the project mentions the usage

  Scenario: A teammate's cited memory is adopted with its citation and checked against my work tree
    Given the project is trusted
    And a teammate's safe memory "project_team-port.md" in the mirror citing "Makefile:5"
    When I run "sync"
    Then the private store's "project_team-port.md" cites "Makefile:5"
    When line 5 of the Makefile changes to port 9090
    Then the session block shows "project_team-port.md [safe, project] [code changed since this was written: Makefile:5]"
