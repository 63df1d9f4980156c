Feature: Host integrations
  Claude Code, Pi, Codex and any MCP client reach the same store; every install
  merges into what is there and every uninstall removes exactly what it added.

  Background:
    Given an initialised project

  Scenario: An MCP client drives the store through the official SDK over stdio
    When an MCP client lists the tools and calls each of them
    Then every memfold tool is listed with annotations and an output schema
    And the private store holds "project_mcp-added.md"
    And the duplicate add came back as a tool error with code "memory.near-duplicate"
    And the forgotten memory is gone from the private store

  Scenario: MCP tool errors are text results with isError, in memfold's error shape
    When an MCP client forgets "project_absent", adds a memory without a name and calls "memory_nope"
    Then each call came back as a tool error with no structured content
    And the errors are "memory.not-found", "mcp.arguments" and "mcp.unknown-tool", each with a hint
    And the argument error says "memory_add: 'name' is required"

  Scenario: The MCP server names its version and ends cleanly on SIGINT and SIGTERM
    When an MCP client initializes a session
    Then serverInfo names "memfold" with this package's version
    And a server waiting for its next line exits 0 on "SIGINT" and on "SIGTERM" with no traceback

  Scenario: The installed SessionStart hook turns hook JSON into additionalContext
    Given the memory "project_build.md" with description "builds with pnpm workspaces"
    When I run "hooks install claude"
    And Claude Code runs the installed SessionStart hook
    Then the hook exits 0 with additionalContext mentioning "builds with pnpm workspaces"

  Scenario: The hook fails open when memfold cannot read its own files
    Given the memfold config file is not valid YAML
    When Claude Code runs the installed SessionStart hook
    Then the hook exits 0 and prints nothing
    And the hook log names the reason

  Scenario: Installing keeps an unrelated hook; uninstalling removes only what was added
    Given a project Claude settings file with an unrelated SessionStart hook
    When I run "hooks install claude --prompt"
    And I run "hooks install claude --prompt"
    Then the Claude settings keep the unrelated hook and hold one memfold hook for "SessionStart" and "UserPromptSubmit"
    And the consolidate command file runs "hooks consolidate claude --background --session ${CLAUDE_SESSION_ID} $ARGUMENTS" before the model sees it
    When I run "hooks uninstall claude"
    Then the Claude settings file is byte-identical to the original
    And the consolidate command file and its directory are gone

  Scenario: A user-scope install respects CLAUDE_CONFIG_DIR and leaves no trace after uninstall
    Given CLAUDE_CONFIG_DIR points to an empty directory
    When I run "hooks install claude --user"
    Then the Claude config dir holds "settings.json" and "commands/consolidate.md"
    When I run "hooks uninstall claude --user"
    Then the Claude config dir is empty

  Scenario: /consolidate consolidates the running session, not the one that wrote last
    Given the memory "project_build.md" with description "builds with pnpm workspaces"
    And a Claude Code transcript of this project for session "s1"
    And another session of this project wrote its transcript later
    When I run "hooks consolidate claude --session s1"
    Then the exit code is 0
    And the output names the transcript of session "s1"
    And the newest receipt is a consolidation whose context is the transcript of session "s1"

  Scenario: /consolidate as the first command of a new session runs without context and says so
    Given another session of this project wrote its transcript later
    When I run "hooks consolidate claude --session brand-new"
    Then the exit code is 0
    And the output mentions "session brand-new has no saved messages yet, consolidated without session context"
    And the newest receipt is a consolidation without context

  Scenario: /consolidate that cannot run reports FAILED where Claude Code shows it, and writes nothing
    Given another session of this project wrote its transcript later
    When I run "hooks consolidate claude"
    Then the exit code is 0
    And the output mentions "memfold /consolidate FAILED, nothing was written."
    And the output mentions "error [hooks.no-session]"
    And no receipt was written

  Scenario: Committed host files name memfold on PATH; this machine's home stays in a local file
    When I run "hooks install claude"
    And I run "hooks install pi"
    And I run "hooks install codex"
    Then no file under ".claude", ".pi" or ".codex" but ".claude/settings.local.json" holds a machine path
    And ".claude/settings.local.json" sets MEMFOLD_HOME to this store's home
    And Claude Code's SessionStart hook, run with that local setting, reaches this store

  Scenario: /consolidate no-context runs without a transcript
    When I run "hooks consolidate claude no-context"
    Then the exit code is 0
    And the output mentions "transcript: none (no-context)"

  Scenario: The Pi extension is valid JavaScript once its types are stripped
    When I run "hooks install pi"
    Then the exit code is 0
    And ".pi/extensions/memfold.ts" passes node's syntax check
    And the Pi extension registers "consolidate" and runs memfold "inject" at "session_start"

  Scenario: Codex gets a SessionStart hook in .codex/hooks.json and the trust steps to run
    When I run "hooks install codex"
    Then the output mentions "hooks install codex --trust --trust-project"
    And the output mentions "codex exec --dangerously-bypass-hook-trust"
    Then ".codex/hooks.json" runs the memfold hook at "SessionStart"
    When I run "hooks uninstall codex"
    Then ".codex" does not exist in the project

  Scenario: A memory from a Claude transcript keeps the memory tool's name and description
    Given a Claude Code transcript that says "remember: we deploy on Fridays after 14:00 UTC." and then writes memory "deploy-day" described as "production deploys happen on Fridays after 14:00 UTC"
    When I run "consolidate --context transcript.jsonl"
    Then the exit code is 0
    And the private store holds only "project_deploy-day.md" with name "deploy-day" and description "production deploys happen on Fridays after 14:00 UTC"
    And "show project_deploy-day" prints the memory
