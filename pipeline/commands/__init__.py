"""The command modules: each declares its options, calls one core function and formats its result."""
