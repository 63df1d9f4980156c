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
