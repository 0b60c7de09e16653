"""Shared fixtures. Every test gets its own CLAUDE_CHATS_HOME and Claude dirs."""

import pytest

pytest_plugins = ["tests.support.model", "tests.support.pg", "tests.support.corpus", "tests.support.journals"]

_ISOLATED_ENV = (
    "CLAUDE_CHATS_PROVIDER", "CLAUDE_CHATS_MODEL", "CLAUDE_CHATS_DIMENSIONS", "CLAUDE_CHATS_THREADS",
    "OLLAMA_BASE_URL", "OLLAMA_HOST", "OLLAMA_MODEL", "OLLAMA_MODELS", "BEDROCK_REGION", "AWS_REGION",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "DATABASE_URL", "CLAUDE_CHATS_DB_URL",
    "CLAUDE_CHATS_ALLOW_INSECURE", "CLAUDE_CHATS_SYNC_INTERVAL", "CLAUDE_CHATS_REDACT",
    "CLAUDE_CHATS_JOURNAL_REDACT", "CLAUDE_CHATS_EMBED_TIMEOUT",
    "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point all claude-chats and Claude Code state at a temporary folder."""
    for name in _ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "chats-home"
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CHATS_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", "0")  # no background sync from tests' hooks
    return home
