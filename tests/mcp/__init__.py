"""Tests of claude_chats/mcp: the server in memory, over stdio, through a Postgres outage."""
