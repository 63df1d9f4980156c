Feature: A commit keeps the search index exact while it writes it beside the files
  The transaction that changes a store writes that store's search index while it stages its files,
  and commits the index only once its own commit has landed. The index says which state it describes,
  so the next commit changes only the rows of the files it changes; a commit that fails leaves the
  index as it was.

  Scenario: After a commit the index describes the files on disk and is served as it is
    Given a store with the memories "project_alpha", "project_beta" and "project_gamma"
    When I add "project_delta" saying "delta deploys use the grey script"
    Then the search index describes exactly the memory files on disk
    And the search index records the store directory as the commit left it
    And a prompt about "delta grey script" shows "delta deploys use the grey script" from the same index file

  Scenario: A commit that fails leaves the index as it was and serves nothing of it
    Given a store with the memories "project_alpha", "project_beta" and "project_gamma"
    When the disk reports a failed write-back while I add "project_delta" saying "delta deploys use the grey script"
    Then the add exits 6 and the store files are unchanged
    And the search index holds the same rows, state and file as before the add
    And a prompt about "delta grey script" does not show "delta deploys use the grey script"
