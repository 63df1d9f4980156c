Feature: A warm MCP server writes from what it knows, and never from a stale picture of the store
  After its own commit the server keeps both roots' state for its next write, as long as the kernel
  reports that nobody else touched a store file. Anything else makes it read both roots again.

  Scenario: Consecutive server writes read the store once and chain their receipts
    Given an MCP server backend on an empty project
    When the backend adds 4 memories
    Then the backend read the store from disk 1 time
    And each receipt's source hashes are the previous receipt's final hashes
    And memfold audit passes

  Scenario: A hand edit keeping size and mtime and a forget by another process are both seen
    Given an MCP server backend that has added "project_alpha" and "project_beta"
    When I rewrite "project_alpha.md" in place to say "ALPHA DEPLOYS USE", keeping its size and mtime
    And another process forgets "project_beta"
    And the backend adds "project_gamma"
    Then the backend read the store from disk 2 times
    And the newest receipt's source hash of "project_alpha.md" is the hash of the edited bytes
    And no root and no receipt of the newest write holds "project_beta.md"
    And the private index shows "ALPHA DEPLOYS USE the blue green script"

  Scenario: After a crash past the commit point the server writes from the recovered store
    Given an MCP server backend that has added "project_alpha" and "project_beta"
    When the backend is killed right after the commit point of adding "project_delta"
    And the backend adds "project_gamma"
    Then the newest receipt's source hash of "project_delta.md" is the hash of the file on disk
    And memfold audit passes
