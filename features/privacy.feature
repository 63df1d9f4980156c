Feature: Private things never reach the repository
  The safe mirror (.memory/) is committed and shared. Credentials, personal data
  and private memories must never land there, and a cloned repository's
  .memory/ must not be able to inject anything unless the user trusted it.

  Background:
    Given an initialised project

  Scenario: A safe memory with a secret is refused and nothing changes
    Given I remember the state of both roots
    When I add a safe memory "project_ci-token" whose body holds a GitHub token
    Then the exit code is 1
    And the error names the rule "github-classic-token" and body line 1
    And both roots are as remembered
    And the secret value appears in no output and in no file outside the private store

  Scenario: The same secret may stay private
    When I add a private memory "user_ci-token" whose body holds a GitHub token
    Then the exit code is 0
    And the mirror does not hold "user_ci-token.md"
    And the secret value appears in no output and in no file outside the private store

  Scenario: A new safe memory that carries a private one's wording needs --allow-publish
    Given the private memory "user_vault" with a distinctive body
    And I remember the state of both roots
    When I add a safe memory "project_notes" holding the body of "user_vault" with one character added
    Then the exit code is 1
    And the output mentions "privacy.publish-near-copy"
    And the output mentions "user_vault.md"
    And both roots are as remembered
    When I add a safe memory "project_notes" holding the body of "user_vault" with one character added and --allow-publish
    Then the exit code is 0
    And the mirror copy of "project_notes.md" is byte-identical to the private copy

  Scenario: A person may still publish the memory they name
    Given the private memory "user_vault" with a distinctive body
    When I run "update user_vault --visibility safe"
    Then the exit code is 0
    And the mirror copy of "user_vault.md" is byte-identical to the private copy

  Scenario: An agent cannot publish a private memory over MCP
    Given the private memory "user_vault" with a distinctive body
    And I remember the state of both roots
    When an agent sets the visibility of "user_vault" to safe over MCP
    Then the tool call fails with "mcp.publish-refused"
    And both roots are as remembered

  Scenario: The config may let an agent publish a memory it names
    Given the private memory "user_vault" with a distinctive body
    And the config sets mcp.allow_publish to true
    When an agent sets the visibility of "user_vault" to safe over MCP
    Then the tool call succeeds
    And the mirror copy of "user_vault.md" is byte-identical to the private copy

  Scenario: A reclassified memory disappears from the mirror and its index
    Given the safe memory "project_ci" with description "CI runs on every push"
    When I run "update project_ci --visibility private"
    Then the exit code is 0
    And the mirror does not hold "project_ci.md"
    And the mirror index does not mention "project_ci"

  Scenario: A hand-edited mirror file with a key is caught by mirror check
    Given the safe memory "project_ci" with description "CI runs on every push"
    When someone appends an AWS access key to the mirror copy of "project_ci.md"
    And I run "mirror check"
    Then the exit code is 7
    And the output mentions "aws-access-key-id"
    And the output mentions "project_ci.md"

  Scenario: A mirror file named like a Windows device is caught by mirror check
    Given the mirror holds a hand-placed memory "aux" saying "the aux port"
    When I run "mirror check"
    Then the exit code is 7
    And the output mentions "mirror.name-reserved"
    And the output mentions "aux.md"

  Scenario: An untrusted project injects only the private store
    Given the memory "user_editor" with description "prefers vim keybindings"
    And the mirror holds a hand-placed memory "project_staging" saying "the staging database listens on 5433"
    When I run "inject"
    Then the exit code is 0
    And the output mentions "prefers vim keybindings"
    And the output does not mention "listens on 5433"
    When I run "trust"
    And I run "inject"
    Then the output mentions "listens on 5433"

  Scenario Outline: A hostile mirror is refused or neutralised
    Given the project is trusted
    And the mirror holds <hostile>
    When I run "mirror check"
    Then the exit code is <exit>
    And the output mentions "<finding>"
    When I run "inject"
    Then the exit code is 0
    And the injected block has exactly one closing memory tag and no bidi characters
    And nothing outside the project was read into the injected block

    Examples:
      | hostile                                        | exit | finding            |
      | a symlink "project_link.md" to a file outside  | 7    | mirror.symlink     |
      | a FIFO "project_fifo.md"                       | 7    | mirror.not-regular |
      | a 10 MB file "project_big.md"                  | 7    | bounds.file-size   |
      | a memory with bidi characters                  | 7    | mirror.invisible   |
      | a memory with a closing memory tag             | 7    | mirror.instructions |

  Scenario: A token written as the user of an internal host's URL is refused
    Given I remember the state of both roots
    When I add a safe memory "project_clone" whose body clones with a GitHub token at "git.acme.internal"
    Then the exit code is 1
    And the output mentions "github-classic-token"
    And both roots are as remembered
    And the secret value appears in no output and in no file outside the private store

  Scenario: A title that holds a credential is refused even for a private memory
    When I add a private memory titled with an AWS access key id
    Then the exit code is 1
    And the output mentions "aws-access-key-id"
    And the AWS access key id appears in no output

  Scenario Outline: A credential is refused in any of the shapes it is written in
    Given I remember the state of both roots
    When I add a safe memory "project_shape" whose body is the <shape> example
    Then the exit code is 1
    And the output mentions "<rule>"
    And both roots are as remembered
    And the example's secret appears in no output

    Examples:
      | shape                                  | rule               |
      | secret compared with a literal         | secret-comparison  |
      | URL password at a documentation host   | url-password       |
      | token next to a vendor's name          | vendor-keyed-token |
      | API key as a curl user                 | cli-user-password  |
      | Kerberos service ticket hash           | password-hash      |
      | chat webhook URL                       | webhook-url-secret |

  Scenario Outline: A reference or a placeholder that looks like a secret is published
    When I add a safe memory "project_lookalike" whose body is the <look-alike> example
    Then the exit code is 0
    And the mirror holds "project_lookalike.md"

    Examples:
      | look-alike                    |
      | Jenkins credential reference  |
      | .NET user-secrets id          |
      | Terraform variable reference  |
      | ExternalSecret key reference  |
      | JWT package checksum          |
      | hashed asset name             |
      | Slack placeholder token       |
