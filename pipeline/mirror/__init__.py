"""The safe mirror: what may be published, the drift and privacy checks, trust, and read-only git facts."""
