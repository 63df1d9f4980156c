"""The apply stage: lock, run dirs, stale check, journal, batched durability, commit and recovery."""
