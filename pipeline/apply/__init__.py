"""The apply stage: lock, run directories, stale check, journal, atomic commit and recovery."""
