"""claude-chats: a persistent, searchable memory of Claude Code conversations.

This module stays empty on purpose: the hook imports ``claude_chats.hook`` and
must not pay for anything it does not use.
"""

__version__ = "0.1.0"
