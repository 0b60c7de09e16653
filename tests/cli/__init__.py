"""Tests of claude_chats/cli: the commands through the real CLI."""
