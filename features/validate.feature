Feature: A worker's plan is validated before anything is written
  The worker is never trusted. Its plan must be bound to the run, cover exactly the
  selected scope, ground its claims inside the repository and change only what it may;
  any failure rejects the whole plan with exit 1, both roots byte-identical and no
  receipt added.

  Background:
    Given an initialised project
    And a store of two private memories and one safe memory, and the repository file "docs/guide.md"

  Scenario Outline: A plan bound to another run is rejected
    Given a worker whose plan has <field> set to another value
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "plan.identity" at "$.<field>"

    Examples:
      | field          |
      | runId          |
      | scopeKey       |
      | scopeDigest    |
      | artifactHash   |
      | snapshotDigest |

  Scenario: A plan whose selected scope differs from the manifest is rejected
    Given a worker whose plan leaves "user_gamma.md" out of selected
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "plan.selected" at "$.selected"

  Scenario Outline: Each artifact must name every selected memory exactly once
    Given a worker whose plan has <artifact> <fault>
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "<code>" in "<artifact>"

    Examples:
      | artifact  | fault                 | code                    |
      | inventory | missing a name        | plan.coverage.missing   |
      | inventory | naming one twice      | plan.coverage.duplicate |
      | inventory | naming an unknown one | plan.coverage.unknown   |
      | staleness | missing a name        | plan.coverage.missing   |
      | staleness | naming one twice      | plan.coverage.duplicate |
      | staleness | naming an unknown one | plan.coverage.unknown   |
      | grounding | missing a name        | plan.coverage.missing   |
      | grounding | naming one twice      | plan.coverage.duplicate |
      | grounding | naming an unknown one | plan.coverage.unknown   |
      | report    | missing a name        | plan.coverage.missing   |
      | report    | naming one twice      | plan.coverage.duplicate |
      | report    | naming an unknown one | plan.coverage.unknown   |
      | clusters  | missing a name        | plan.coverage.missing   |
      | clusters  | naming one twice      | plan.coverage.duplicate |
      | clusters  | naming an unknown one | plan.coverage.unknown   |

  Scenario: A verdict spelled with an underscore is rejected with the right spelling
    Given a worker whose plan gives "project_alpha.md" the verdict "OPS_ONLY"
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "plan.verdict" in "staleness"
    And the output mentions "OPS-ONLY"

  Scenario Outline: Grounding paths must stay inside the repository and exist when found
    Given the repository holds a symlink "escape" to a directory outside it
    And a worker whose plan observes "<path>" as found
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "<code>" in "grounding"

    Examples:
      | path                   | code                  |
      | /etc/hostname          | plan.grounding.path   |
      | docs/../../outside.md  | plan.grounding.path   |
      | escape/secret.txt      | plan.grounding.escape |
      | docs/absent.md         | plan.grounding.absent |

  Scenario: A grounding path that exists inside the repository is accepted
    Given a worker whose plan observes "docs/guide.md" as found
    When I run "consolidate --no-context --worker fake --json"
    Then the exit code is 0

  Scenario Outline: Operations may change only what the run allows
    Given a worker whose plan adds <operation>
    When I run "consolidate --no-context --worker fake --json <options>"
    Then the plan is rejected with "<code>" in "operations"

    Examples:
      | operation                                              | options                  | code                      |
      | a delete of "project_beta.md"                          | --select project_alpha   | plan.operation.scope      |
      | two deletes of "user_gamma.md"                         |                          | plan.operation.duplicate  |
      | a create of the existing "project_alpha.md"            |                          | plan.operation.exists     |
      | a create of "project_big.md" over the size bound       |                          | plan.operation.too-large  |
      | a safe create of "project_new.md" whose content is private |                      | plan.operation.disagrees  |

  Scenario: Publishing a private memory needs --allow-publish
    Given a worker whose plan makes "project_alpha.md" safe
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "privacy.publish" in "operations"
    And the mirror does not hold "project_alpha.md"

  Scenario: A safe memory that carries a private memory's wording needs --allow-publish
    Given a worker whose plan creates the safe "project_notes.md" carrying the description of "project_alpha.md" with one character added
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "privacy.publish-near-copy" in "operations"
    And the output mentions "project_alpha.md"
    And the mirror does not hold "project_notes.md"
    When I run "consolidate --no-context --worker fake --allow-publish --json"
    Then the exit code is 0
    And the mirror copy of "project_notes.md" is byte-identical to the private copy

  Scenario: With --allow-publish a private memory is published byte for byte
    Given a worker whose plan makes "project_alpha.md" safe
    When I run "consolidate --no-context --worker fake --allow-publish --json"
    Then the exit code is 0
    And the mirror copy of "project_alpha.md" is byte-identical to the private copy
    And the mirror index lists "project_alpha.md"
    And 1 receipt was added

  Scenario: A safe memory holding a secret is rejected and the secret leaks nowhere
    Given a worker whose plan creates the safe "project_token.md" holding a GitHub token
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "privacy.credential" in "operations"
    And the token appears in no output and in no file outside the private store and the run dirs
    And the run dirs are private to their owner

  Scenario: A privacy rule of the user's config refuses a worker's plan that holds its match
    Given a worker whose plan creates the safe "project_acme.md" holding an ACME service token
    And the config adds a privacy rule "acme-internal-token" for ACME service tokens
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "privacy.credential" in "operations"
    And the output mentions "acme-internal-token"
    And the mirror does not hold "project_acme.md"

  Scenario: A privacy rule of the user's config searched together with the shipped shapes still refuses its match
    Given a worker whose plan creates the safe "project_acme.md" holding an ACME service token
    And the config adds a privacy rule "acme-internal-token" for ACME service tokens in the screen "rare-shapes"
    When I run "consolidate --no-context --worker fake --json"
    Then the plan is rejected with "privacy.credential" in "operations"
    And the output mentions "acme-internal-token"
    And the mirror does not hold "project_acme.md"

  Scenario: A broken privacy rule of the user's config refuses the run before its worker starts
    Given a worker whose plan creates the safe "project_acme.md" holding an ACME service token
    And the config adds a privacy rule "acme-internal-token" without a pattern
    When I run "consolidate --no-context --worker fake --json"
    Then the exit code is 2
    And the output mentions "acme-internal-token"
    And no run dir was added
    And both roots and the receipt log are unchanged
