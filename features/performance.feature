Feature: Writes near the floor: a write reads what changed, and never trusts a stale state cache
  The private home keeps each store file's identity and hash. A write after it opens only the files
  that changed since, whatever the size of the store, and any change to a file makes it read again.

  Scenario: A second write opens as many store files at ten times the store size
    Given settled synthetic stores of 40 and 400 memories
    When I add two memories to each store, each add in its own process
    Then the second add opened the same number of store files in both stores, at most 12

  Scenario: A hand edit that keeps the size and the mtime is read again
    Given three settled memories written by separate processes
    When I rewrite "project_alpha.md" in place to say "ALPHA DEPLOYS USE", keeping its size and mtime
    And I add "project_delta" in a new process
    Then the newest receipt's source hash of "project_alpha.md" is the hash of the edited bytes
    And the private index shows "ALPHA DEPLOYS USE the blue green script"

  Scenario: A write encodes the store's hash maps once, and its documents are still exact
    Given three settled memories written by separate processes
    When I add "project_delta" in a new process
    And I add "project_epsilon" in a new process
    Then each document of the newest run is the stable JSON form of its own content
    And the receipt log holds the same bytes as the newest run's post receipt
    And the newest receipt's previous is the RFC 8785 digest of the receipt before it
    And the newest receipt's final hashes are the hashes of the files on disk
    And memfold verify and memfold audit exit 0

  Scenario: A memory rewritten by hand is checked for near-duplicates by what it says now
    Given three settled memories written by separate processes
    When I rewrite "project_alpha.md" by hand to describe "alpha now waits for the nightly window"
    Then adding "project_zeta" described as "Alpha deploys use the BLUE green script." in a new process succeeds
    And adding "project_eta" described as "alpha now waits for the NIGHTLY window" in a new process is refused as a near-duplicate of "project_alpha.md"
    And memfold verify and memfold audit exit 0

  Scenario: A second list opens no memory file, and shows a hand edit that keeps the size and the mtime
    Given settled synthetic stores of 40 and 400 memories
    When I list each store twice, each list in its own process
    Then the second list opened no store file in either store, and both listings are the same
    Given three settled memories written by separate processes
    When I list the memories in a new process
    And I rewrite "project_alpha.md" in place to say "ALPHA DEPLOYS USE", keeping its size and mtime
    And I list the memories in a new process
    Then the listing shows "ALPHA DEPLOYS USE the blue green script"

  Scenario: Showing one memory reads that memory and never lists the mirror
    Given settled synthetic stores of 40 and 400 memories
    When I list each store twice, each list in its own process
    And I show the first memory of each store in its own process
    Then each show opened at most one store file, listed the private store once and the mirror at most once
    And each show printed the bytes of that memory's file
