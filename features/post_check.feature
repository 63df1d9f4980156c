Feature: A write is checked where it changes, and whatever that check cannot vouch for is checked in full
  A state that passed the whole post-state check is kept by a long-lived process with its hash maps,
  its memories, its bounds and the privacy rules its mirror was found clean under. The next write
  from that very state is derived and checked where its operations change it; a pre-state read
  from disk, other bounds or other rules get the full check.

  Scenario: Consecutive server writes leave the store as the full check requires
    Given an MCP server backend on an empty project
    When the backend adds 3 safe and 3 private memories, then forgets one of each and rewrites one
    Then only the first write was checked in full
    And the mirror holds exactly the safe memories, byte for byte as in the private store
    And both indexes on disk are rendered from the memories on disk
    And memfold mirror check passes
    And memfold audit passes

  Scenario: A hand edit of the mirror between two server writes is held, and nothing is lost
    Given an MCP server backend that has added safe "project_beta" saying "beta runs the smoke tests"
    When I edit ".memory/project_beta.md" by hand to say "BETA EDITED BY HAND"
    And the backend tries to add private "project_gamma"
    Then the write went through and its receipt holds "project_beta.md" back as "held.untrusted"
    And ".memory/project_beta.md" still says "BETA EDITED BY HAND"
    And the private copy of "project_beta.md" still says "beta runs the smoke tests"

  Scenario: A new privacy rule scans the mirror files no write has touched since
    Given an MCP server backend that has added safe "project_beta" saying "ticket TK-123456789 stays open"
    When the backend's privacy rules gain a rule for ticket codes
    And the backend tries to add private "project_gamma"
    Then the write is refused with "privacy.credential" naming "project_beta.md"
    And the refusal does not show "TK-123456789"
    And the refused write added no receipt and changed no store file

  Scenario: A CLI write after a CLI write is checked where it changes
    Given a project where "project_beta" (safe) and "project_alpha" (private) were added by memfold processes
    When a memfold process adds safe "project_gamma" saying "gamma tags after the review"
    Then that process checked the post-state only where it changed
    And the mirror holds exactly the safe memories "project_beta.md, project_gamma.md"
    And both indexes on disk are rendered from the memories on disk
    And memfold audit passes

  Scenario: A hand edit between two CLI writes gets the whole check, and the write keeps it
    Given a project where "project_beta" (safe) and "project_alpha" (private) were added by memfold processes
    When I edit the private memory "project_alpha.md" by hand to say "ALPHA EDITED BY HAND"
    And a memfold process adds safe "project_gamma" saying "gamma tags after the review"
    Then that process checked the post-state in full
    And the private memory "project_alpha.md" still says "ALPHA EDITED BY HAND"
    And both indexes on disk are rendered from the memories on disk
    And memfold audit passes

  Scenario: A hand edit of an index between two CLI writes is rendered over, not carried along
    Given a project where "project_beta" (safe) and "project_alpha" (private) were added by memfold processes
    When I append "- [planted](project_planted.md) — not a memory" to the mirror index by hand
    And a memfold process adds private "project_gamma" saying "gamma tags after the review"
    Then that process checked the post-state in full
    And both indexes on disk are rendered from the memories on disk

  Scenario: A proof recorded by another version of memfold is not trusted
    Given a project where "project_beta" (safe) and "project_alpha" (private) were added by memfold processes
    When the recorded proof names another version of the code that checks a write
    And a memfold process adds private "project_gamma" saying "gamma tags after the review"
    Then that process checked the post-state in full
    And memfold audit passes
