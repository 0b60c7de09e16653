"""Every error claude-chats raises on purpose, under one base.

Library code raises these; the CLI turns them into a one-line message
(``click.ClickException``) and the MCP server into a ``ToolError``. Messages say
how to fix the problem.
"""


class ClaudeChatsError(Exception):
    """Base of all claude-chats errors."""


class ConfigError(ClaudeChatsError):
    """A setting is missing, malformed or contradicts another."""


class JournalError(ClaudeChatsError):
    """The local journal cannot be opened, migrated or written."""


class SessionNotFound(ClaudeChatsError):
    """No conversation with this session id is stored."""


class SearchError(ClaudeChatsError):
    """A search cannot run as asked (unknown mode, malformed filter, no vectors to search)."""


class ProviderError(ClaudeChatsError):
    """The embedding provider failed (down, throttled, bad answer)."""


class ProviderUnavailable(ProviderError):
    """The provider's SDK, model file or server is not available."""


class SpaceMismatchError(ClaudeChatsError):
    """The configured embedding model does not match the stored vectors."""


class PostgresError(ClaudeChatsError):
    """Postgres refused or failed an operation."""


class PostgresUnavailable(PostgresError):
    """Postgres is not configured or cannot be reached."""


class InsecureConnectionError(PostgresError):
    """A remote Postgres URL without TLS was refused."""


class SyncLocked(ClaudeChatsError):
    """Another ``chats sync`` is already running."""
