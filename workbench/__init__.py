"""Memory Workbench: the Textual app, the CLI and the MCP server over the core engine."""
