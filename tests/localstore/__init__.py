"""Tests of claude_chats/localstore: the journal, its vectors, its search, its redaction."""
