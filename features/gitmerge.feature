Feature: Git merges the team memory
  The mirror (.memory/) and the chain heads (.memfold/heads/) travel through git. After
  `memfold hooks install git`, git merges a memory file field by field (the later `modified`
  wins), the mirror index as a union of lines, and a chain head by its sequence number. What
  both sides changed differently still conflicts, with git's usual markers and exit status;
  where the drivers are not registered, git's own text merge does the work.

  Scenario: Two teammates add different memories
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and pushes
    And "bob" adds the safe memory "Test database" and commits
    When "bob" runs "git pull --no-rebase"
    Then git exits 0
    And "bob" has no unmerged file
    And "bob"'s mirror index lists "project_deploy-target.md" and "project_test-database.md"
    And "bob"'s "project_deploy-target.md" is byte-identical to "alice"'s

  Scenario Outline: Two teammates change different fields of one memory
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and pushes
    And "bob" runs "git pull --no-rebase"
    And "alice" changes the description of "project_deploy-target.md" at "<alice at>" and pushes
    And "bob" changes the body of "project_deploy-target.md" at "<bob at>" and commits
    When "bob" runs "<pull>"
    Then git exits 0
    And "bob" has no unmerged file
    And "bob"'s "project_deploy-target.md" has alice's description, bob's body and modified "<later>"

    Examples:
      | pull                  | alice at             | bob at               | later                |
      | git pull --no-rebase  | 2026-12-01T09:00:00Z | 2026-12-02T09:00:00Z | 2026-12-02T09:00:00Z |
      | git pull --no-rebase  | 2026-12-03T09:00:00Z | 2026-12-02T09:00:00Z | 2026-12-03T09:00:00Z |
      | git pull --rebase     | 2026-12-01T09:00:00Z | 2026-12-02T09:00:00Z | 2026-12-02T09:00:00Z |

  Scenario: Both teammates change the same line of a body
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and pushes
    And "bob" runs "git pull --no-rebase"
    And "alice" changes the first body line of "project_deploy-target.md" to "use blue/green" and pushes
    And "bob" changes the first body line of "project_deploy-target.md" to "use canary" and commits
    When "bob" runs "git pull --no-rebase"
    Then git exits 1
    And git lists "project_deploy-target.md" as unmerged for "bob"
    And "bob"'s "project_deploy-target.md" holds git's conflict markers with "use canary" above "use blue/green"

  Scenario Outline: One person merges two branches that moved one chain head
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "alice" commits the chain head at seq 1
    And "alice" commits the chain head at seq <feature> on a new branch "feature"
    And "alice" commits the chain head at seq <main> on "main"
    When "alice" runs "git merge --no-edit feature"
    Then git exits 0
    And "alice" has no unmerged file
    And "alice"'s chain head is the one at seq <higher>

    Examples:
      | feature | main | higher |
      | 3       | 2    | 3      |
      | 2       | 4    | 4      |

  Scenario: One person's memfold writes on two branches, merged
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and commits
    And "alice" starts the branch "feature"
    And "alice" adds the safe memory "Test database" and commits
    And "alice" goes back to "main"
    And "alice" adds the safe memory "Release day" and commits
    When "alice" runs "git merge --no-edit feature"
    Then git exits 0
    And "alice" has no unmerged file
    And "alice"'s chain head names her newest receipt

  Scenario: Without the drivers, git's own text merge takes over
    Given a team of "alice" and "bob" sharing a bare remote, where only "alice" has memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and pushes
    And "bob" runs "git pull --no-rebase"
    And "alice" changes the description of "project_deploy-target.md" at "2026-12-01T09:00:00Z" and pushes
    And "bob" changes the body of "project_deploy-target.md" at "2026-12-02T09:00:00Z" and commits
    When "bob" runs "git pull --no-rebase"
    Then git exits 1
    And git lists "project_deploy-target.md" as unmerged for "bob"
    And "bob"'s "project_deploy-target.md" holds git's conflict markers with "2026-12-02T09:00:00Z" above "2026-12-01T09:00:00Z"

  Scenario: Without the drivers, memories added on both sides still merge
    Given a team of "alice" and "bob" sharing a bare remote, where only "alice" has memfold's merge drivers
    And "alice" adds the safe memory "Deploy target" and pushes
    And "bob" adds the safe memory "Test database" and commits
    When "bob" runs "git pull --no-rebase"
    Then git exits 0
    And "bob" has no unmerged file
    And "bob"'s mirror index lists "project_deploy-target.md" and "project_test-database.md"

  Scenario: The sync hook runs memfold sync after a merge and a checkout, and never fails git
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "bob" installs the git hooks with "--sync-hook" through a memfold on PATH whose sync fails
    And "alice" adds the safe memory "Deploy target" and pushes
    When "bob" runs "git pull --no-rebase"
    Then git exits 0
    And the memfold on PATH ran "sync --quiet" once in "bob"'s clone, after "--home" and bob's home
    When "bob" runs "git checkout -q -b topic"
    Then git exits 0
    And the memfold on PATH ran "sync --quiet" 2 times in "bob"'s clone, after "--home" and bob's home

  Scenario: With the sync hook, a pull brings a teammate's memory into the private store
    Given a team of "alice" and "bob" sharing a bare remote, both with memfold's merge drivers
    And "bob" runs memfold "trust"
    And "bob" runs memfold "hooks install git --sync-hook"
    And "alice" adds the safe memory "Deploy target" and pushes
    When "bob" runs "git pull --no-rebase"
    Then git exits 0
    And "bob"'s private store holds "project_deploy-target.md" as the mirror has it

  Scenario: A hook memfold did not write is left alone
    Given a team of "alice" and "bob" sharing a bare remote, where only "alice" has memfold's merge drivers
    And "bob" has a post-merge hook of his own
    When "bob" runs memfold "hooks install git --sync-hook"
    Then memfold exits 1 naming "hooks.git-hook-exists"
    And "bob"'s post-merge hook is unchanged
    And "bob"'s git config names no memfold merge driver

  Scenario: Uninstall takes out exactly what install added
    Given a team of "alice" and "bob" sharing a bare remote, where only "alice" has memfold's merge drivers
    And I remember "bob"'s git config and hooks
    When "bob" runs memfold "hooks install git --sync-hook"
    And "bob" runs memfold "hooks install git --sync-hook"
    And "bob" runs memfold "hooks uninstall git"
    Then memfold exits 0
    And "bob"'s git config and hooks are as remembered
    And "bob"'s .gitattributes still holds memfold's block
