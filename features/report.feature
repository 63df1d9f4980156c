Feature: An audit report a person can look at
  `memfold report` writes the receipt chain as one self-contained HTML page: a
  timeline of every receipt, the store and mirror sizes, what each run changed.
  The default report holds private text and is readable by its owner only; the
  public one shows only what the mirror may show, so it can go on a pull request.

  Background:
    Given an initialised project
    And the safe memory "project_ci" with description "CI runs the full test suite on every push"
    And the memory "user_vault" with description "Where Priyanka keeps the vault unseal share"

  Scenario: The report marks a hand edit between two receipts
    When I append a line to the private copy of "user_vault.md"
    And I run "add project_docs -d 'Docs live in the docs folder' --visibility safe -b 'See docs/'"
    And I run "report --json"
    Then the exit code is 0
    And the report has one timeline entry per receipt on disk
    And the report marks 1 hand edit naming "harness/user_vault.md changed"

  Scenario: The default report is private: 0600, under the memfold home, and it says so
    When I run "report --json"
    Then the exit code is 0
    And the report lies under the memfold home with mode 0600
    And the report says it holds private memory text
    And the report contains "Where Priyanka keeps the vault unseal share"

  Scenario: The public report holds no private name or text
    When I write the public report to "public-report.html" beside the project
    Then the exit code is 0
    And the report has mode 0644
    And the report does not contain "user_vault"
    And the report does not contain "Priyanka"
    And the report does not contain "user_vault body"
    And the report contains "project_ci.md"
