"""The shell daemon: a separate process that runs shell commands under an OS sandbox."""
