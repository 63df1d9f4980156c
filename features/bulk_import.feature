Feature: Bulk imports: one durable commit, checked without reading it back
  An import of thousands of files is one transaction like any other. Its files are
  made durable with one sync of their filesystem before the commit point; a failure
  there leaves the store as it was; a staged copy that another process changes
  before the commit point stops the import. A plain import never loads the typer app.

  Scenario: A large Claude Code import commits every file in one synced transaction
    Given an initialised project
    And a Claude Code memory dir of 80 files
    When I import that dir
    Then the exit code is 0
    And the private store holds the 80 memories and their index
    And the filesystem was synced once, before the commit point
    And no memfold temp file is left
    And "audit" exits 0 without hand edits

  Scenario: A failing sync of the batch leaves the store as it was
    Given an initialised project
    And I remember the state of both roots
    And a Claude Code memory dir of 80 files
    And syncing a filesystem fails with an I/O error
    When I import that dir
    Then the exit code is 6
    And both roots are as remembered
    And no memfold temp file is left

  Scenario: A staged copy rewritten before the commit point stops the import
    Given an initialised project
    And I remember the state of both roots
    And a Claude Code memory dir of 12 files
    And another process rewrites a staged copy before the commit point
    When I import that dir
    Then the exit code is 6
    And the output mentions "apply.staged-mismatch"
    And both roots are as remembered
    And no memfold temp file is left

  Scenario: A plain import runs without the typer app
    Given a Claude Code memory dir of 5 files
    When I import that dir in a fresh interpreter
    Then the exit code is 0
    And the private store holds the 5 memories and their index
    And the interpreter never imported typer
