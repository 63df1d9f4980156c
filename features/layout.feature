Feature: One project per repository
  A project is its repository: every linked worktree of it reads and writes the
  same private store, found without starting git, while a clone is a project of
  its own. A store kept under a worktree's own path by an older version is
  brought over once, and nothing in it is lost.

  Scenario: A linked worktree sees the memories written in the main checkout
    Given a repository with a linked worktree
    When I run "add project_deploy -d 'deploys go through ops/deploy.sh'" in the main checkout
    And I run "list" in the worktree
    Then the exit code is 0
    And the output mentions "project_deploy"
    And the main checkout and the worktree use one private store

  Scenario: A clone keeps a store of its own
    Given a repository with a linked worktree
    And a clone of the repository
    When I run "add project_deploy -d 'deploys go through ops/deploy.sh'" in the main checkout
    And I run "list" in the clone
    Then the exit code is 0
    And the output does not mention "project_deploy"

  Scenario: A store kept under a worktree's own path moves to the repository once
    Given a repository with a worktree that has a store of its own
    When I run "list" in the worktree
    Then the exit code is 0
    And the error mentions "moved to the repository's store"
    And the output mentions "project_old"
    And no store is left under the worktree's own path
    When I run "audit" in the worktree
    Then the exit code is 0
    And the error does not mention "moved"

  Scenario: A safe memory changed in one worktree neither blocks another worktree nor shows there as a hand edit
    Given a repository with a linked worktree
    When I run "add project_deploy -d 'deploys go through ops/deploy.sh' --visibility safe" in the main checkout
    And I run "add project_cache -d 'the cache lives in redis' --visibility safe" in the worktree
    And I run "update project_deploy -d 'deploys go through ops/ship.sh'" in the main checkout
    And I run "--json status" in the worktree
    Then the exit code is 0
    And the status says the worktree's mirror is behind on "project_deploy.md", with nothing from outside
    When I run "mirror check" in the worktree
    Then the exit code is 0
    When I run "add project_queue -d 'the queue is sqs' --visibility safe" in the worktree
    Then the exit code is 0
    And the worktree's mirror copy of "project_deploy.md" is byte-identical to the private copy
    When I run "audit --strict" in the worktree
    Then the exit code is 0
    And the output does not mention "drift"
    When I run "audit --strict" in the main checkout
    Then the exit code is 0
    And the output mentions "came from other worktrees sharing the store"
    And the output does not mention "drift"

  Scenario: A hand edit of a worktree's mirror is held, never lost, and named by audit as incoming
    Given a repository with a linked worktree
    When I run "add project_deploy -d 'deploys go through ops/deploy.sh' --visibility safe" in the main checkout
    And I run "add project_cache -d 'the cache lives in redis' --visibility safe" in the worktree
    And I append a line to the worktree's mirror copy of "project_deploy.md"
    And I run "add project_queue -d 'the queue is sqs'" in the worktree
    Then the exit code is 0
    And the error mentions "not adopted: this project is not trusted"
    And the worktree's mirror copy of "project_deploy.md" still ends with the hand edit
    When I run "audit" in the worktree
    Then the output mentions "came into the mirror from outside"
    And the output does not mention "drift"
    When I run "audit" in the main checkout
    Then the output does not mention "drift"

  Scenario: A session start in a worktree whose store predates sharing shows its memories before anything moved it
    Given a repository with a worktree that has a store of its own
    When I run "inject" in the worktree
    Then the exit code is 0
    And the output mentions "project_old"
    And the worktree's own store is still in place
    When I run "list" in the worktree
    Then the error mentions "moved to the repository's store"
    And no store is left under the worktree's own path
    When I run "inject" in the worktree
    Then the output mentions "project_old"
