Feature: User-wide memory
  Some memories belong to the person, not the project. They live in one private,
  global store under the memfold home and are injected into every project, after
  the project's own memories.

  Scenario: A global memory is injected in two different projects
    Given a global memory "user_prs" with description "prefers small pull requests"
    When I inject context in project "alpha"
    Then the injected block lists "user_prs.md" from the global store
    When I inject context in project "beta"
    Then the injected block lists "user_prs.md" from the global store

  Scenario: A project memory shadows the global one with the same name
    Given a global memory "user_editor" with description "uses emacs"
    And in project "alpha" the memory "user_editor" with description "uses vim in this repo"
    When I inject context in project "alpha"
    Then the injected block mentions "uses vim in this repo"
    And the injected block does not mention "uses emacs"

  Scenario: The global store has its own receipt chain and never a mirror
    Given a global memory "user_prs" with description "prefers small pull requests"
    When I run "audit --global"
    Then the exit code is 0
    When I run "add user_pub --global -d 'a public fact' --visibility safe"
    Then the exit code is 1
    And the error mentions "global store is private only"
    And no project mirror holds "user_prs.md"
