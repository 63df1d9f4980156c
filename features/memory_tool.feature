Feature: memfold as the store behind the Claude API memory tool
  An application on the Claude API passes memfold's memory tool to the Anthropic SDK's tool
  runner. The model's /memories files are memfold memories: it reads back exactly what it wrote,
  every change is a receipted transaction, and hostile or impossible commands get an error the
  model can act on while nothing is written.

  Background:
    Given an initialised project
    And a model that calls the memory tool through the SDK's tool runner

  Scenario: A file the model creates reads back exactly as written and is a private memory
    When the model creates "/memories/deploy.md" with the text "# Deploy\nBlue/green via ops/deploy.sh\n\n"
    And the model views "/memories/deploy.md"
    Then the model was told "File created successfully at: /memories/deploy.md"
    And the model saw the lines "# Deploy", "Blue/green via ops/deploy.sh", "", ""
    And "deploy.md" is a private memory of type "reference" described as "Deploy"
    And the newest receipt is for command "memory-tool create"

  Scenario: A path that tries to leave /memories is refused and nothing is written
    Given I remember the state of both roots
    When the model creates "/memories/../../outside.md" with the text "owned"
    And the model creates "/memories/notes/todo.md" with the text "nested"
    Then the model was refused with "never leave /memories"
    And the model was refused with "use /memories/notes_todo.md"
    And the memory tool log names the codes "memtool.traversal", "memtool.directory"
    And both roots are as remembered

  Scenario: An edit that matches twice or inserts past the end changes nothing
    Given the model has created "/memories/todo.md" with the text "- a\n- b\n- a\n"
    And I remember the state of both roots
    When the model replaces "- a" with "- c" in "/memories/todo.md"
    And the model inserts "- d" at line 9 of "/memories/todo.md"
    Then the model was refused with "appears 2 times in /memories/todo.md (lines 1, 3)"
    And the model was refused with "which has 3 lines"
    And both roots are as remembered

  Scenario: A secret written into a memory a person made safe is refused naming the rule, not the value
    Given the model has created "/memories/chat.md" with the text "Team chat: #deploys\n"
    And a person makes "chat.md" safe
    And I remember the state of both roots
    When the model replaces "#deploys" with "#deploys, token <a Slack token>" in "/memories/chat.md"
    Then the model was refused with "slack-token at line 1 of its text"
    And no tool result holds the Slack token
    And both roots are as remembered

  Scenario: The memories are ordinary memfold memories
    Given the model has created "/memories/db_tests.md" with the text "Integration tests use the real postgres\n"
    When I run "search postgres"
    Then the output mentions "db_tests.md"
    When I run "list"
    Then the output mentions "db_tests"

  Scenario: Verify and audit pass after a scripted session of fifty commands
    When the model runs a scripted session of 50 memory commands
    Then the model was answered 50 times, of which at least 40 without error
    When I run "verify"
    Then the exit code is 0
    When I run "audit"
    Then the exit code is 0
    And "audit" exits 0 without hand edits

  Scenario: Undo of one command's run restores the file
    Given the model has created "/memories/ci.md" with the text "CI runs on push\n"
    When the model replaces "on push" with "on push and tags" in "/memories/ci.md"
    And I undo the last run
    Then the exit code is 0
    And the model views "/memories/ci.md"
    And the model saw the lines "CI runs on push", ""
