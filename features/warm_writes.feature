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

  Scenario: A server's consecutive writes leave documents byte-identical to encoding each one whole
    Given an MCP server backend on an empty project
    When the backend adds 4 memories
    Then every receipt, snapshot and manifest of those writes is exactly its whole JSON encoding
    And each receipt's previous digest is the RFC 8785 digest of the receipt before it

  Scenario: A write to a memory right after the server's check is seen by the next write
    Given an MCP server backend that has added "project_alpha" and "project_beta"
    When the backend adds "project_gamma" and another process rewrites it right after the check
    And the backend adds "project_delta"
    Then the backend read the store from disk 2 times
    And the newest receipt's source hash of "project_gamma.md" is the hash of the file on disk
    And memfold audit passes

  Scenario: A server answers before the run dirs a write retires are removed
    Given an MCP server backend that keeps 1 run and has added "project_alpha"
    When the backend adds "project_beta" while removing files is held up
    Then the write has answered, its run is the only run and the project lock is free
    And once the removal goes on only the newest run dir is left
    And memfold audit passes
