"""Tests of claude_chats/search and of its evaluation (claude_chats/evaluate.py)."""
