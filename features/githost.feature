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
      | list                      |
