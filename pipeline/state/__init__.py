"""The state model: both roots as read (pre), the base a sync starts from, the post-state, proofs."""
