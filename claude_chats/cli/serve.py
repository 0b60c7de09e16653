"""``chats mcp``: the conversation-memory MCP server over stdio."""

import click


@click.command("mcp")
def mcp_cmd():
    """Serve the conversation-memory MCP server over stdio (for Claude Code).

    Register it with: claude mcp add conversation-memory -- chats mcp
    """
    from ..mcp.front import main

    main()


def register(group):
    group.add_command(mcp_cmd)
