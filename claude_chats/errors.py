"""Every error claude-chats raises on purpose, under one base.

Library code raises these; the CLI turns them into a one-line message
(``click.ClickException``, exit 1) and the MCP server into a ``ToolError``.
Messages say how to fix the problem. The hook catches everything and logs it.

The tree (classes defined elsewhere name their module)::

    ClaudeChatsError
    ├── ConfigError                 a setting is missing, malformed or contradicts another
    │   └── InstallError            (install) Claude Code's settings cannot be changed safely
    ├── JournalError                the journal cannot be opened, migrated or written
    ├── SessionNotFound             no conversation with this session id is stored
    ├── RestoreError                (restore) a session cannot be written back as a transcript
    ├── SearchError                 a search cannot run as asked
    ├── ProviderError               the embedding provider failed (down, throttled, bad answer)
    │   └── ProviderUnavailable     its SDK, model file or server is not there
    ├── SpaceMismatchError          the configured model does not match the stored vectors
    ├── PostgresError               Postgres refused or failed an operation
    │   ├── PostgresUnavailable     not configured, or cannot be reached
    │   └── InsecureConnectionError a remote URL without TLS was refused
    ├── SyncLocked                  another ``chats sync`` is running
    ├── ConversionError             (models.convert) a checkpoint cannot be converted to GGUF
    ├── QueryFileError              (evaluate) a labelled query file cannot be read
    └── ScheduleError               (sync.schedule) the periodic sync cannot be installed
"""


class ClaudeChatsError(Exception):
    """Base of all claude-chats errors."""


class ConfigError(ClaudeChatsError):
    """A setting is missing, malformed or contradicts another."""


class JournalError(ClaudeChatsError):
    """The local journal cannot be opened, migrated or written."""


class SessionNotFound(ClaudeChatsError):
    """No conversation with this session id is stored."""


class RestoreError(ClaudeChatsError):
    """A session cannot be written back as a Claude Code transcript (no kept lines, a different file there)."""


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
