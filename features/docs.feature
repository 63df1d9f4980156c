Feature: Documentation a newcomer can read
  The documentation is one set of pages: the site built from docs/, and the same pages in a
  terminal through `memfold help`. Its reference pages are generated from the code, so they list
  exactly the commands, options, error codes, config keys and privacy rules this version has.

  Scenario: memfold help lists the pages of the site
    When I run "help"
    Then the exit code is 0
    And the output mentions "getting-started"
    And the output mentions "hosts/claude-code"
    And the output mentions "reference/commands"

  Scenario: A topic says which page it is and what it covers
    When I run "help hosts/claude-code"
    Then the exit code is 0
    And the output mentions "docs/hosts/claude-code.md"
    And the output mentions "SessionStart hook"

  Scenario: An unknown topic is a usage error that lists the topics
    When I run "help nowhere"
    Then the exit code is 2
    And the error mentions "usage.topic"
    And the error mentions "getting-started"

  Scenario: The generated command reference has every command that memfold --help lists
    When I generate the command reference
    Then it has a section for every command and subcommand of memfold --help

  Scenario: The generated error reference has the code of an error the CLI just reported
    When I run "show nowhere"
    Then the exit code is 1
    And the generated error reference lists "memory.not-found" with exit code 1
