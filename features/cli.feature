Feature: One command line
  The fast path and the typer app are built from one table, so a command means
  the same whichever way it is parsed; every usage error answers in one style,
  in JSON under --json, with the exit code of its kind (docs/troubleshooting.md).

  Scenario: The version is one flag away
    When I run "--version"
    Then the exit code is 0
    And the output is exactly the package version

  Scenario: -h is --help and the commands come in groups
    When I run "-h"
    Then the exit code is 0
    And the output lists the groups everyday, consolidation, audit, hosts, maintenance in that order
    And the output does not show "<bool>"

  Scenario: A usage error answers in JSON under --json
    When I run "--json add project_x --colour blue"
    Then the exit code is 2
    And the JSON error code is "usage.option"
    And the JSON error hint names "memfold add --help"

  Scenario: A missing description is a usage error, an empty one is rejected input
    Given an initialised project
    When I run "add project_x"
    Then the exit code is 2
    And the error mentions "Missing option '--description'"
    When I run "add project_x -d ' '"
    Then the exit code is 1
    And the error mentions "memory.description"

  Scenario: The checkers run without the typer app
    Given the memory "project_api" with description "the API listens on port 8080"
    When I run "audit" in a fresh interpreter
    Then the exit code is 0
    And the interpreter never imported typer
