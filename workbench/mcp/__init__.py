"""``workbench mcp``: the MCP server (:mod:`workbench.mcp.server`) and the memory tools it
serves (:mod:`workbench.mcp.tools`)."""
