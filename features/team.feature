Feature: Team memory through git
  The mirror (.memory/) is shared through git: each person has a memfold home and
  a private store of their own, and git carries the mirror between them. A write
  never fails because of what a teammate wrote; teammates' changes are adopted in a
  trusted project, held back when they fail a check, and left in conflict when both
  sides changed; nothing private ever reaches the mirror, git or another person.

  Background:
    Given a bare remote and the people "alice" and "bob", each with a home of their own
    And alice has cloned the remote and committed the safe memory "Deploy target" saying "deploys use the blue green script"
    And alice keeps the private memory "Alice note" saying "MARKERALICE private"

  Scenario: Clone then write: the second person is never locked out
    Given bob clones the remote
    When bob runs "add 'Bob note' -d 'MARKERBOB private' -b MARKERBOB"
    And bob runs "add 'Bob fact' -d 'bob writes a safe fact' --visibility safe"
    And bob runs "consolidate --no-context"
    Then every one of those commands exited 0
    And bob's mirror still holds alice's "project_deploy-target.md" byte for byte
    And bob's mirror index lists "project_deploy-target.md" and "project_bob-fact.md"

  Scenario: Clone then see: a trusted clone adopts and shows the team's memories
    Given bob clones the remote
    When bob runs "trust"
    Then bob's "list" shows "project_deploy-target.md"
    And bob's "show 'Deploy target'" prints "deploys use the blue green script"
    And bob's inject block lists "project_deploy-target.md" as safe and holds "deploys use the blue green script"
    And bob's receipt of the sync names the commit and author "alice" for "project_deploy-target.md"

  Scenario: An untrusted clone adopts nothing and injects nothing foreign, and its own writes work
    Given bob clones the remote
    When bob runs "add 'Bob fact' -d 'bob writes a safe fact' --visibility safe"
    Then every one of those commands exited 0
    And bob's private store has no "project_deploy-target.md"
    And bob's inject block does not hold "blue green"
    And bob's "sync --json" holds "project_deploy-target.md" as "held.untrusted"

  Scenario: Pull new: a teammate's new memory is seen at once and adopted by the next write
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    When bob pulls
    Then bob's list shows "project_dev-port.md" from the team at ".memory/project_dev-port.md"
    And bob's "search 9090" finds "project_dev-port.md"
    When bob runs "add 'Bob fact' -d 'bob writes a safe fact' --visibility safe"
    Then bob's private store holds "project_dev-port.md" as alice wrote it

  Scenario: Pull update: a teammate's change is adopted, and show knows it before that
    Given bob clones the remote and trusts it
    And alice updates "Deploy target" to say "canary first, then blue green" and pushes
    When bob pulls
    Then bob's "show 'Deploy target'" prints "canary first, then blue green"
    When bob runs "sync"
    Then bob's private store holds "project_deploy-target.md" as alice wrote it

  Scenario: Pull update into a mirror already searched: the new text is found at once
    Given bob clones the remote and trusts it
    Then bob's "search blue" finds "project_deploy-target.md"
    Given alice updates "Deploy target" to say "canary first, then the purple script" and pushes
    When bob pulls
    Then bob's "search purple" finds "project_deploy-target.md"
    And bob's "show 'Deploy target'" prints "canary first, then the purple script"

  Scenario: Pull rename: the old name goes and the new one comes
    Given bob clones the remote and trusts it
    And alice renames "Deploy target" to "Release path" and pushes
    When bob pulls
    And bob runs "sync"
    Then bob's private store has no "project_deploy-target.md"
    And bob's private store holds "project_release-path.md" as alice wrote it

  Scenario: Pull delete: a teammate's forget is carried out, and undo brings it back
    Given bob clones the remote and trusts it
    And alice forgets "Deploy target" and pushes
    When bob pulls
    And bob runs "sync"
    Then bob's private store has no "project_deploy-target.md"
    When bob undoes his last run
    Then bob's private store has "project_deploy-target.md"

  Scenario: Pull unpublish: a memory made private leaves the team
    Given bob clones the remote and trusts it
    And alice makes "Deploy target" private and pushes
    When bob pulls
    And bob runs "sync"
    Then bob's private store has no "project_deploy-target.md"
    And alice's private store has "project_deploy-target.md"

  Scenario: Both add, then merge: no conflict markers, both memories, a valid index
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Alpha fact" saying "alpha fact from alice" and commits
    And bob adds the safe memory "Beta fact" saying "beta fact from bob" and pushes
    When alice pulls
    Then the merge had no conflict
    And alice's mirror holds no conflict marker
    When alice runs "trust"
    Then alice's mirror index lists "project_alpha-fact.md" and "project_beta-fact.md"
    And alice's "mirror check" exits 0

  Scenario: The same memory changed on both sides is a named conflict, settled with sync --take
    Given bob clones the remote and trusts it
    And alice updates "Deploy target" to say "alice says canary" and pushes
    And bob updates "Deploy target" to say "bob says rollback" and commits
    When bob pulls
    Then the merge had a conflict in ".memory/project_deploy-target.md"
    When bob runs "add 'Bob fact' -d 'bob writes a safe fact' --visibility safe"
    Then every one of those commands exited 0
    And bob's "sync --json" holds "project_deploy-target.md" as "held.merge-conflict"
    And bob's mirror "project_deploy-target.md" still holds the conflict markers
    When bob runs "sync --take mine project_deploy-target.md"
    Then bob's mirror "project_deploy-target.md" says "bob says rollback" with no conflict marker
    And bob's "mirror check" exits 0

  Scenario: A rebase pull with work stashed around it adopts the team's memory and loses none of one's own
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    And bob adds the safe memory "Beta fact" saying "beta fact from bob" and commits
    And bob adds the safe memory "Gamma fact" saying "gamma fact not yet committed" without committing
    When bob stashes his work, pulls with rebase and pops the stash
    Then the pull succeeded
    When bob runs "sync"
    Then every one of those commands exited 0
    And bob's private store holds "project_dev-port.md" as alice wrote it
    And bob's mirror index lists "project_beta-fact.md" and "project_gamma-fact.md"
    And bob's mirror index lists "project_dev-port.md" and "project_deploy-target.md"

  Scenario: Consolidation after a pull treats teammates' memories as any other
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    When bob pulls
    And bob runs "consolidate --no-context"
    Then every one of those commands exited 0
    And bob's private store holds "project_dev-port.md" as alice wrote it
    And bob's private store holds "project_deploy-target.md" as alice wrote it

  Scenario: A linked worktree shares the trust and sees the pull
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    When bob pulls
    And bob adds a linked worktree "bob-wt"
    Then bob's worktree "bob-wt" is trusted without a trust of its own
    And bob's list in the worktree "bob-wt" shows "project_dev-port.md"

  Scenario: The first pull after using memfold alone goes through
    Given bob has an empty repository cloned before alice's first push
    And bob keeps the private memory "Bob note" saying "MARKERBOB private"
    When bob pulls
    Then the pull succeeded
    And bob's mirror holds "project_deploy-target.md"

  Scenario: One person merging two of their own branches has no conflict
    Given alice registers memfold's git merge drivers
    And alice adds the safe memory "Alpha fact" saying "alpha fact" on a new branch "one"
    And alice adds the safe memory "Beta fact" saying "beta fact" on a new branch "two" from the main branch
    When alice merges branch "one" into "two"
    Then the merge had no conflict
    And alice's chain head names her newest receipt
    And alice's "audit" exits 0

  Scenario: Checking out an older commit and back adopts and deletes nothing
    Given bob clones the remote and trusts it
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    And alice notes her store
    When alice checks out the commit before her last
    And alice runs "sync"
    And alice checks out the main branch again
    And alice runs "sync"
    Then alice's store is as she noted it

  Scenario: A fresh clone of a clean team mirror passes mirror check
    Given bob clones the remote and trusts it
    And bob adds the safe memory "Beta fact" saying "beta fact from bob" and pushes
    When carol clones the remote
    Then carol's "mirror check" exits 0

  Scenario: After all of it, every person's verify and audit pass and nothing private leaked
    Given bob clones the remote and trusts it
    And bob keeps the private memory "Bob note" saying "MARKERBOB private"
    And alice adds the safe memory "Dev port" saying "the dev server listens on 9090" and pushes
    And bob adds the safe memory "Beta fact" saying "beta fact from bob" and pushes
    When alice pulls
    And alice runs "sync"
    And bob pulls
    And bob runs "sync"
    Then alice's "verify" exits 0
    And bob's "verify" exits 0
    And alice's "audit" exits 0
    And bob's "audit" exits 0
    And no mirror, git history or other person holds "MARKERALICE" or "MARKERBOB"
