"""The MCP server ``conversation-memory`` (FastMCP over stdio, started by ``chats mcp``).

``claude_chats.mcp.server.create_server()`` builds it; importing this package
imports nothing heavy.
"""
