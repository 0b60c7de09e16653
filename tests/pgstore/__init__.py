"""Tests of claude_chats/pgstore: the Postgres store, its URLs, its search."""
