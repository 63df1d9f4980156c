Feature: What a hostile home, repository or client cannot make memfold do
  memfold takes its settings only from a home and files its user (or root) owns and nobody
  else may write; reads every JSON and YAML file that comes from a repository or a store
  within bounds, answering with its own error codes; never takes a name that looks like a
  path for a memory; bounds what one MCP request may be and reads receipts only from the
  store; says when two mirror files would become one on a case-insensitive checkout; writes
  each root through a descriptor opened once; and keeps the project's path out of a public
  report.

  Scenario: A home another user owns and everyone may write is refused, and the gate stays on
    Given a memfold home that another user owns and everyone may write
    And a config in that home that allowlists everything
    When I run "add 'CI token' -d 'the CI token' --visibility safe -b 'GITHUB_TOKEN=ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9'"
    Then the exit code is 2
    And the error names "[home.unsafe]"
    And the error names the home, its owner and its mode 0777
    And the error mentions "chmod go-w"
    And nothing is published to the mirror

  Scenario Outline: A config file others may write is refused before anything in it is used
    Given a config that allowlists everything, with mode <mode>
    When I run "add 'CI token' -d 'the CI token' --visibility safe -b 'GITHUB_TOKEN=ghp_Zq7Lm2Xc9Vb4Nn8Kp1Rt6Yw3Hs5Jd0Fg2Aa9'"
    Then the exit code is 2
    And the error names "[settings.unsafe]"
    And the error mentions "mode <mode>"
    And nothing is published to the mirror

    Examples:
      | mode |
      | 0664 |
      | 0666 |

  Scenario: A trust list another user could have written is refused, and nothing is injected
    Given the safe memory "project_team" with description "the team deploys on fridays"
    And the project is trusted
    And the trust list is writable by others
    When I run "inject"
    Then the exit code is 2
    And the error names "[settings.unsafe]"
    And the output does not mention "fridays"

  Scenario: The prompt hook injects nothing from a home others may write
    Given the memory "project_notes" with description "the staging database is called tern"
    And the memfold home is writable by everyone
    When the Claude prompt hook runs for "where is the staging database"
    Then the hook exits 0 and prints nothing

  Scenario: An ordinary user is refused a home that everyone may write
    Given an ordinary user with a home that everyone may write and a config that allowlists everything
    When that user adds a safe memory holding a GitHub token
    Then that user's command exits 2 naming "[home.unsafe]"
    And nothing is published to that user's mirror

  Scenario: An ordinary user's own home with a config root owns is used, and the gate holds
    Given an ordinary user with a home of their own and a config root owns that adds a rule
    When that user adds a safe memory holding a token the added rule matches
    Then that user's command exits 1 naming "acme-internal-token"
    When that user adds a safe memory holding a GitHub token
    Then that user's command exits 1 naming "[privacy"
    And nothing is published to that user's mirror

  Scenario Outline: A chain head nested thousands of levels deep is reported, never a crash
    Given the safe memory "project_ci" with description "CI runs on every push"
    And the chain head in the mirror is 2,000 nested arrays
    When I run "<command>"
    Then the exit code is <code>
    And no internal error is reported
    And the output mentions "<finding>"

    Examples:
      | command      | code | finding              |
      | audit        | 7    | witness.head-invalid |
      | verify       | 7    | witness.head-invalid |
      | mirror check | 7    | mirror.head-invalid  |
      | report       | 0    | report:              |

  Scenario Outline: A host settings file nested too deep is refused by hooks install and left as it is
    Given the project's <file> is 3,000 nested arrays
    When I run "hooks install <host>"
    Then the exit code is 1
    And the error names "[hooks.settings-depth]"
    And no internal error is reported
    And the project's <file> is unchanged

    Examples:
      | host   | file                  |
      | claude | .claude/settings.json |
      | codex  | .codex/hooks.json     |

  Scenario: A config nested too deep is a config error
    Given a config nested 5,000 levels deep
    When I run "add project_a -d 'alpha fact'"
    Then the exit code is 2
    And the error names "[config.invalid]"
    And the error mentions "nested deeper than 64 levels"
    And no internal error is reported

  Scenario Outline: A name that looks like a path is refused and deletes nothing
    Given the memory "seed.md" with description "the seed memory"
    When I run "forget <name>"
    Then the exit code is 1
    And the error names "[memory.name]"
    And both roots are unchanged
    When an MCP client calls memory_forget with the name "<name>"
    Then the tool error code is "memory.name"
    And both roots are unchanged

    Examples:
      | name      |
      | ../seed   |
      | a/seed    |
      | /seed     |
      | ..%2Fseed |
      | ..／seed   |

  Scenario: An MCP request over the bound is answered with an error, and the server keeps serving
    Given the memory "project_a" with description "alpha fact"
    And the config bounds one MCP request at 65536 bytes
    When an MCP client sends a request of 300000 bytes, then memory_list
    Then the first answer is the error "mcp.request-too-large" for that request's id
    And the second answer lists "project_a.md"
    And the server ends cleanly

  Scenario: memory_verify answers a path outside the store as it answers a missing one
    Given the memory "project_a" with description "alpha fact"
    And a copy of the newest receipt outside the store
    When an MCP client verifies that copy, a missing file and /etc/passwd
    Then the three answers are the same error "mcp.verify-target"
    When an MCP client verifies the newest run by its id
    Then the answer is a verified receipt

  Scenario: mirror check flags files that differ only in case
    Given the safe memory "project_safe-one.md" with description "a safe memory"
    And a teammate's "project_Safe-one.md" in the mirror
    When I run "mirror check"
    Then the exit code is 7
    And the output mentions "[mirror.case-collision]"
    And the output mentions "project_Safe-one.md"
    And the output mentions "memfold rename"

  Scenario: A mirror swapped for a link while its files are staged writes nothing into the link's target
    Given an initialised project
    And the mirror will be swapped for a link to another directory as its first file is staged
    When I run "add 'Deploy target' -d 'deploys go through the blue green script' --visibility safe"
    Then the exit code is 7
    And the error names "[verify.post-commit]"
    And the other directory holds only what it held
    And the memory landed in the mirror directory memfold had checked

  Scenario: A public report leaves the scope key out
    Given the safe memory "project_ci" with description "CI runs on every push"
    When I run "report --public"
    Then the exit code is 0
    And the report does not hold the scope key or any prefix of it
