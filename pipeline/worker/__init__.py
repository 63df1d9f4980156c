"""The worker stage: render the task, spawn the untrusted worker sandboxed, capture bounded output, extract one plan."""
