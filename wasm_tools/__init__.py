"""Sources of the WASI guest tools, their build, and the built modules."""
