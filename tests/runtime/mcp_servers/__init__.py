"""MCP servers written with the official SDK, started by the tests as real processes."""
