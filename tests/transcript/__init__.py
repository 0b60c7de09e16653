"""Tests of claude_chats/transcript.py: the parser, against FORMAT.md and the real corpus."""
