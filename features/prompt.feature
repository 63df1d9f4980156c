Feature: Each prompt reads what the last transaction left, and never a memory that changed since
  A session start and every prompt are served from the search index and the kept session block in
  the private home. Their cost follows what is injected, not the store, and neither is ever served
  after a memory changed: by memfold, by hand, by a teammate, or across a crash.

  Background:
    Given an initialised project

  Scenario: The prompt hook opens as many files at ten times the store size
    Given settled synthetic stores of 60 and 600 memories, each served once
    When a session starts and Claude Code's prompt hook runs in each store, counting opened files
    Then both stores opened the same number of files, at most 6 a run

  Scenario: A hand edit that keeps the size and the mtime reaches the next session start and prompt
    Given settled memories with "OLD-ALPHA-WORD" in "feedback_alpha.md", served once
    When I overwrite "OLD-ALPHA-WORD" with "NEW-ALPHA-WORD" in "feedback_alpha.md", keeping its size and mtime
    And a session starts
    Then the session block shows "NEW-ALPHA-WORD" and not "OLD-ALPHA-WORD"
    When Claude Code's prompt hook runs for "alpha blue script" in a new session
    Then the hook context shows "NEW-ALPHA-WORD" and not "OLD-ALPHA-WORD"

  Scenario: A forgotten memory reaches no prompt, even from an index and a block left behind by a crash
    Given settled memories with "OLD-ALPHA-WORD" in "feedback_alpha.md", served once
    And I keep a copy of the search index and of the kept session block
    When I run "forget feedback_alpha"
    And I put the copies back, as if the process had died before refreshing them
    And a session starts
    Then the session block shows "project_beta.md" and not "OLD-ALPHA-WORD"
    When Claude Code's prompt hook runs for "alpha blue script" in a new session
    Then the hook context shows "</memory>" and not "OLD-ALPHA-WORD"

  Scenario: A teammate's memory in the mirror reaches the prompt while every other mirror memory is shadowed
    Given the trusted project's settled safe memories, served once
    When a teammate's memory "project_theirs.md" saying "THEIRS-KAFKA-BODY" lands in the mirror
    And Claude Code's prompt hook runs for "kafka stream theirs" in a new session
    Then the hook context shows "THEIRS-KAFKA-BODY" and not "OLD-ALPHA-WORD"

  Scenario: A memory file that does not parse neither makes every write re-read the store nor stays hidden once fixed
    Given settled memories with "OLD-ALPHA-WORD" in "feedback_alpha.md", served once
    And a memory file "project_broken.md" that does not parse, named by the next session start
    When a memory "project_gamma" saying "GAMMA-BODY" is added
    Then the search index was updated in place, "project_broken.md" still left out
    When I fix "project_broken.md" in place, without changing its directory, so that it says "FIXED-REDIS-WORD"
    And a session starts
    Then the session block shows "FIXED-REDIS-WORD" and not "do not parse"
    When Claude Code's prompt hook runs for "where redis listens" in a new session
    Then the hook context shows "FIXED-REDIS-WORD" and not "OLD-ALPHA-WORD"

  Scenario: Two installations sharing a home each validate the config once, and keep each other's credential masks
    Given a private memory "project_alpha" about "alpha blue script" holding a token
    And a settled config file in the home
    And a second installation of memfold beside this one
    When each installation runs Claude Code's prompt hook twice, taking turns, each run in a new session
    Then each installation's first run validated the config and its second imported neither YAML nor pydantic
    And only the very first run loaded the privacy rules
    And the home's cache holds a validated config for each installation
    And the hook context still shows the token masked
