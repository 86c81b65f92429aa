"""A tiny stdio MCP server for crab-acp's test of the editor's MCP servers: one tool, ``shout``."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", version="0.1", log_level="CRITICAL")


@server.tool()
def shout(text: str) -> str:
    """Say ``text`` louder."""
    return text.upper() + "!"


if __name__ == "__main__":
    server.run()
