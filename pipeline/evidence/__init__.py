"""Evidence beyond one file: citing from the command line and a memory's text, renames through git,
drift with the lines that changed, and the review of drifted memories (``store.evidence`` holds the
model and the check itself)."""
