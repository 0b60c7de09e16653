"""Tests of claude_chats/sync: the engine, the background start, crashes, the schedule."""
