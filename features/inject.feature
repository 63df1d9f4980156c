Feature: What memfold prints into a host's prompt and onto a terminal
  The injected block goes to the model provider with every prompt and memory text
  is untrusted input: the block shows only this project's stores, no credential,
  and no structure a memory did not earn; a terminal receives no control character.

  Background:
    Given an initialised project

  Scenario: A symlinked mirror in a trusted project is skipped, never shown as the mirror
    Given another project holds the private memory "project_theirs.md" with body "THEIR-PRIVATE-BODY deploy"
    And this project is trusted and its .memory is a symlink to the other project's private store
    When I run "inject --query deploy"
    Then the exit code is 0
    And the output does not contain "THEIR-PRIVATE-BODY"
    And the output mentions "the mirror store was skipped [path.symlink]"
    When Claude Code's prompt hook runs for "deploy"
    Then the hook context does not contain "THEIR-PRIVATE-BODY"
    And the hook context mentions "the mirror store was skipped [path.symlink]"
    When I run "search deploy"
    Then the exit code is 1
    And the error names "path.symlink"

  Scenario: A token kept in a private memory reaches the prompt masked, unless masking is off
    Given the private memory "project_deploy-token" holds a GitHub token in its body
    When I run "inject --query deploy"
    Then the exit code is 0
    And the output does not contain the token
    And the output mentions "[redacted: github-classic-token]"
    When Claude Code's prompt hook runs for "deploy"
    Then the hook context does not contain the token
    Given the config sets "inject: {mask_credentials: false}"
    When I run "inject --query deploy"
    Then the output contains the token

  Scenario: Memory text cannot forge entries, headers or the closing tag of the block
    Given private memories whose bodies hold look-alike closing tags and fake headers
    When I run "inject --query memory --max-files 50"
    Then the block closes exactly once, on its last line
    And the block lists exactly the store's memories, each with one header of its own

  Scenario: Human output never carries a terminal control character from a memory
    Given a memory edited by hand with ESC, BEL, NUL, a C1 control and U+202E in every field
    When I run "show project_hostile"
    Then the exit code is 0
    And the output holds no control, bidi or invisible character
    When I run "list"
    Then the output holds no control, bidi or invisible character
    When I run "search deploy"
    Then the output holds no control, bidi or invisible character
    When I run "show project_hostile --json"
    Then the output holds no control, bidi or invisible character
    And the JSON body is the memory's exact text
