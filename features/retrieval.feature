Feature: Retrieval finds the memory that answers, and injection stays within what it promises
  Search, the MCP memory_search tool and the prompt hook rank alike, in every language;
  the injected block is never larger than its byte budget, says what it left out, and a
  session is sent each relevant body once.

  Background:
    Given an initialised project

  Scenario: Exact words in Russian, Chinese, Japanese and German are found, and so are word forms and typos
    Given the memory "project_razvertyvanie" with description "развертывание идёт только через конвейер"
    And the memory "project_bushu" with description "生产环境部署使用蓝绿发布脚本"
    And the memory "project_deploy-ja" with description "本番環境へのデプロイは金曜日に行わない"
    And the memory "project_schluessel" with description "API-Schlüssel werden alle 90 Tage rotiert"
    And the memory "project_deploy-target" with description "production deployments go through ops/deploy.sh"
    Then searching "конвейер" ranks "project_razvertyvanie.md" first
    And searching "部署" ranks "project_bushu.md" first
    And searching "金曜日" ranks "project_deploy-ja.md" first
    And searching "Schlussel" ranks "project_schluessel.md" first
    And searching "deploying" ranks "project_deploy-target.md" first
    And searching "deplyo" ranks "project_deploy-target.md" first

  Scenario: An empty search is a usage error
    When I run "search ''"
    Then the exit code is 2
    And the error names "usage.query"

  Scenario: A byte budget too small for the frame is refused with the minimum it needs
    Given the memory "project_deploy-target" with description "production deployments go through ops/deploy.sh"
    When I run "inject --max-bytes 10"
    Then the exit code is 2
    And the error names "usage.max-bytes"
    And the output mentions "--max-bytes must be at least"

  Scenario: A truncated block is exactly within its budget and ends by counting what it left out
    Given 40 memories about deploys
    When I run "inject --max-bytes 1500"
    Then the exit code is 0
    And the output is at most 1500 bytes
    And the output mentions "more memories not shown: ask for them with memory_search or read them in"
    And the output names the private store's directory

  Scenario: Each prompt of a session adds only the relevant bodies it has not been sent
    Given the memory "project_deploy-target" with description "production deployments go through ops/deploy.sh"
    And 10 feedback memories about code review
    When Claude Code starts session "s1"
    Then the session context holds the index and feedback bodies, not the body of "project_deploy-target.md"
    When Claude Code's prompt hook runs in session "s1" for "how do we deploy this?"
    Then the prompt context holds the body of "project_deploy-target.md" only
    And the prompt context holds no index and no guidance
    When Claude Code's prompt hook runs in session "s1" for "deploy it again"
    Then the hook adds nothing
    When Claude Code's prompt hook runs in session "s2" for "deploy it again"
    Then the prompt context holds the body of "project_deploy-target.md" only

  Scenario: A forgotten memory never reaches the prompt again
    Given the memory "project_deploy-target" with description "production deployments go through ops/deploy.sh"
    When I run "forget project_deploy-target"
    And Claude Code's prompt hook runs in session "s1" for "how do we deploy?"
    Then the hook adds nothing
    And searching "deploy" finds nothing

  Scenario: A memory is labelled by its visibility, not by the store it was read from
    Given the safe memory "project_shared" with description "the team deploys on Tuesdays"
    And the memory "project_mine" with description "my own deploy notes"
    When I run "inject"
    Then the output mentions "- project_shared.md [safe, project]: the team deploys on Tuesdays"
    And the output mentions "- project_mine.md [private, project]: my own deploy notes"

  Scenario: A word an editor saves into a memory file in place is found by the next search
    Given the memory "project_db" with description "the database listens on port 5433"
    And the memory "project_docs" with description "docs are built with mkdocs"
    And the memory "project_ci" with description "CI runs on every push"
    And an MCP server that has searched "mkdocs" already
    When I run "search mkdocs"
    And an editor saves "project_db.md" in place with "port 5433" changed to "port 5433 behind pgbouncer"
    Then the private store's directory has the stat it had before the save
    And searching "pgbouncer" ranks "project_db.md" first
    And the MCP server's search for "pgbouncer" ranks "project_db.md" first
