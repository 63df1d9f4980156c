Feature: memfold inside the real hosts
  Claude Code, Pi and the MCP Inspector from npm, each on a user's machine of its
  own and talking to a fake model on 127.0.0.1, run what `hooks install` wrote.

  Scenario: Claude Code's /consolidate in a resumed session consolidates that session
    Given memfold installed into the real "claude" from npm
    And a Claude Code session that asked "what do we know about deploys?"
    And a later Claude Code session that asked "an unrelated question about the cache"
    When that first session is resumed with "/consolidate"
    Then one receipt was added
    And its snapshot is that session's transcript, holding "what do we know about deploys?" and not "unrelated question"
    And the model was shown the memory "production deploys go out on Fridays after 14:00 UTC"

  Scenario: Pi's /consolidate as the first command of a session still writes a receipt
    Given memfold installed into the real "pi" from npm
    When I run pi with "/consolidate"
    Then pi exits 0 and says "this session has no saved messages yet: consolidated without session context"
    And one receipt was added
    And its snapshot holds no context

  Scenario: A memfold tool error reaches the MCP Inspector as a tool error with its message and hint
    Given a store with one memory and the real MCP Inspector from npm
    When the Inspector calls "memory_forget" with "name=project_nothing-here"
    Then the Inspector shows a tool error starting "[memory.not-found] no memory named 'project_nothing-here'" with a hint
