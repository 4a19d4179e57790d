"""The Textual app: :mod:`workbench.app.app` holds the App; its panes, widgets and screens
live in their own subpackages. Imports nothing from the CLI, the MCP server or the benches."""
