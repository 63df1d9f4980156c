Feature: A hostile worker cannot touch anything but its scratch dir
  `memfold consolidate --worker NAME` runs a command from the user config inside
  the OS sandbox. Whatever that command tries, both roots, the project and the
  user's home stay byte-identical, no process it started survives, the lock is
  released, and the run says what was stopped. A plan it prints is only used if
  it passes validation.

  Background:
    Given an initialised project
    And the memory "user_tea" with description "prefers green tea"
    And the safe memory "project_deploy" with description "deploys go through ops/deploy.sh"

  Scenario Outline: <attack> is contained
    Given the configured worker "evil" attempts "<attack>" and then prints "<then>"
    And I remember every file of the store, the mirror, the project and the home
    When I run "consolidate --no-context --worker evil"
    Then the exit code is <exit>
    And every remembered file is byte-identical
    And the attack left no trace
    And no process of the worker is left
    And the project lock is free
    And the run names what was stopped: "<diagnostic>"

    Examples:
      | attack          | then            | exit | diagnostic                                |
      | write-store     | verdict         | 4    | planted.md: failed: PermissionError 13    |
      | write-mirror    | bad-plan        | 1    | planted.md: failed: PermissionError 13    |
      | write-project   | verdict         | 4    | planted.txt: failed: PermissionError 13   |
      | write-home      | plan            | 0    | planted: failed: PermissionError 13       |
      | remove          | bad-plan        | 1    | rename: failed: PermissionError           |
      | symlink         | verdict         | 4    | through: failed: PermissionError 13       |
      | tcp             | plan            | 0    | connect: failed: PermissionError 1        |
      | udp             | verdict         | 4    | sendto: failed: PermissionError 1         |
      | unix            | bad-plan        | 1    | connect: failed: PermissionError 1        |
      | env             | verdict         | 4    | parent_environ: failed                    |
      | root            | verdict         | 4    | setuid: failed: PermissionError 1         |
      | forkbomb        | verdict         | 4    | hostile: limited:                         |
      | orphan          | plan            | 0    | hostile: forked: True                     |
      | stdout          | verdict         | 4    | printed more than 16777216 bytes          |
      | stderr          | plan            | 0    | bytes of stderr dropped                   |
      | hang            | verdict         | 4    | timed out after 3 s                       |
      | nothing         | event-then-hang | 0    | hostile: attack: nothing                  |
      | nothing         | two-plans       | 4    | plans that differ                         |
      | metadata        | verdict         | 4    | user_tea.md: failed: PermissionError 1    |
      | setuid          | plan            | 0    | setuid: failed: PermissionError 1         |
      | unix-networked  | plan            | 0    | abstract: failed: PermissionError 1       |
      | forge           | plan            | 4    | pidfd_getfd: failed                       |
      | devices         | plan            | 0    | /dev/shm/                                 |

  Scenario Outline: A project that exposes a home is refused before any worker starts
    Given the project directory <relation> the home directory
    And I remember every file of the store, the mirror, the project and the home
    When I run "consolidate --no-context"
    Then the exit code is 4
    And the error mentions "worker.project-root-unsafe"
    And the error mentions "hint:"
    And the worker never ran
    And every remembered file is byte-identical
    And the project lock is free

    Examples:
      | relation  |
      | is        |
      | contains  |

  Scenario: The receipt records the protections that were in force
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the manifest and the receipt record every protection this machine enforces

  Scenario: The built-in planner runs inside the confined process, with no second interpreter
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the launcher recorded its protections, then ran the built-in planner itself, which exited 0
    And the manifest and the receipt record every protection this machine enforces

  Scenario: The built-in planner reads none of /etc
    Given the launchers that consolidations start ahead of their worker are watched
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the policy handed to the launcher runs the planner in-process and grants nothing under /etc
    And the launcher recorded its protections, then ran the built-in planner itself, which exited 0

  Scenario: A run refused before its worker starts leaves no launcher behind
    Given the launchers that consolidations start ahead of their worker are watched
    And the project lock is held by another process
    When I run "consolidate --no-context"
    Then the exit code is 3
    And every launcher started ahead was stopped before it started anything
    And no run cgroup of this process is left

  Scenario: A launcher started ahead waits in its run's cgroups, bounded before it gets its policy
    Given the launchers that consolidations start ahead of their worker are watched
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the launcher was in every run cgroup, each bounded, when its policy went over
    And no run cgroup of this process is left

  Scenario: Without Landlock a configured worker is refused
    Given Landlock is unavailable
    And the configured worker "evil" attempts "write-store" and then prints "plan"
    And I remember every file of the store, the mirror, the project and the home
    When I run "consolidate --no-context --worker evil"
    Then the exit code is 4
    And the error mentions "refused"
    And the error mentions "--unsafe-no-sandbox"
    And the worker never ran
    And every remembered file is byte-identical
    And the project lock is free

  Scenario: Without Landlock the built-in planner still runs and says what was missing
    Given Landlock is unavailable
    When I run "consolidate --no-context"
    Then the exit code is 0
    And the receipt says "landlock-filesystem" was missing

  Scenario: Without Landlock --unsafe-no-sandbox runs the worker and says so
    Given Landlock is unavailable
    And the configured worker "evil" attempts "nothing" and then prints "plan"
    When I run "consolidate --no-context --worker evil --unsafe-no-sandbox"
    Then the exit code is 0
    And the receipt says "landlock-filesystem" was missing
    And the receipt says the run was unsafe

  Scenario: An unprivileged user gets the same containment
    Given the whole project belongs to an unprivileged user
    When that user runs a consolidation with a worker that writes into the store and leaves a grandchild
    Then the exit code is 4
    And the store is byte-identical, the marker never appears and no process is left

  Scenario: A worker filling its scratch dir past its bound is stopped and the scratch is deleted
    Given the configured worker "evil" attempts "fill" and then prints "verdict"
    And the worker "evil" is limited to "scratch_mb: 4"
    When I run "consolidate --no-context --worker evil"
    Then the exit code is 4
    And the error mentions "worker.scratch-too-large"
    And the error mentions "workers.evil.limits.scratch_mb"
    And no process of the worker is left
    And the run's scratch dir is gone
    And the project lock is free

  Scenario: A fork bomb of 1500 never has more processes than the configured bound
    Given the configured worker "evil" attempts "forkbomb-1500" and then prints "verdict"
    And the worker "evil" is limited to "processes: 64"
    When I run "consolidate --no-context --worker evil"
    Then the exit code is 4
    And the worker had fewer than 64 processes at once, and some forks were refused
    And no process of the worker is left
    And the run's scratch dir is gone

  Scenario: An allocation past the configured memory bound fails
    Given the configured worker "evil" attempts "memory" and then prints "verdict"
    And the worker "evil" is limited to "memory_mb: 256"
    When I run "consolidate --no-context --worker evil"
    Then the exit code is 4
    And the run names what was stopped: "hostile: children: ['memory-error']"
    And no process of the worker is left

  Scenario: When memfold is killed the worker dies within a second, and the next run clears what was left
    Given the configured worker "evil" leaves a setsid grandchild and then sleeps
    When memfold is killed while the worker runs
    Then within a second no process of the worker is left
    And the next consolidation removes the run cgroups the killed memfold left
