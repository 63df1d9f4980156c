"""The context stage: an immutable snapshot of both roots, host transcripts, scope, manifest and candidates."""
