"""Hostile MCP servers written with the official SDK; the tests run them under the sandbox."""
