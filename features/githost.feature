Feature: Git and host files
  A cloned repository is untrusted input: its git directory may name programs in
  its config, hooks and attributes, and its host directories may be symlinks.
  No memfold command runs what a repository configures or writes where a
  repository points.

  Scenario Outline: No command runs a program the repository configures
    Given a project whose .git file names a git dir configured to run a program everywhere
    And an initialised project
    And the safe memory "project_ports" with description "dev server on port 8080"
    When I run "<command>"
    Then the exit code is 0
    And no program the repository configures has run

    Examples:
      | command                   |
      | status                    |
      | --json status             |
      | audit                     |
      | mirror check              |
      | inject                    |
      | trust                     |
      | consolidate --no-context  |
      | hooks install claude      |
      | hooks install git         |
      | hooks uninstall git       |
      | list                      |

  Scenario Outline: A symlinked host directory in the project is refused
    Given an initialised project
    And the project's "<path>" is a symlink to a directory outside
    When I run "hooks install <host>"
    Then the exit code is 1
    And the error mentions "path.symlink"
    And the directory outside is unchanged
    And memfold recorded no installed file

    Examples:
      | host   | path             |
      | claude | .claude          |
      | claude | .claude/commands |
      | pi     | .pi              |
      | pi     | .pi/extensions   |
      | codex  | .codex           |
