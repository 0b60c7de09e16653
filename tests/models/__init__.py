"""Tests of claude_chats/models: the providers, chunking, conversion, the embedded text."""
