"""`chats config show/set/unset` and the config library: sources, validation, masking, the file."""

import json
import os
import stat
import subprocess
import sys
import tomllib

import pytest

from claude_chats import config, faults, paths
from claude_chats.errors import ConfigError
from tests.support import ROOT
from tests.support.cli import chats

# Read by the product besides its settings (tests/conftest.py clears them too).
NOT_SETTINGS = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "OLLAMA_MODELS",
                "CLAUDE_CHATS_MODEL_CACHE", "PGHOST", "PGSSLMODE", faults.ENV)
# ... of which the fixture sets these to its own: an empty Ollama store, the test model's cache
FIXED = {"OLLAMA_MODELS", "CLAUDE_CHATS_MODEL_CACHE"}


def shown(as_json=True):
    result = chats("config", "show", "--json")
    assert result.exit_code == 0, result.output
    return {row["key"]: row for row in json.loads(result.output)["settings"]}


def test_show_says_where_each_value_comes_from(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu-box:11434")
    chats("config", "set", "model", "nomic-embed-text")
    rows = shown()
    assert rows["provider"]["value"] == "llama" and rows["provider"]["source"] == "default"
    assert rows["model"]["value"] == "nomic-embed-text" and rows["model"]["source"] == "file"
    assert rows["ollama_base_url"]["source"] == "env OLLAMA_HOST"
    assert rows["sync_interval"]["source"] == "env CLAUDE_CHATS_SYNC_INTERVAL"   # the test fixture sets it
    assert list(rows) == list(config.SETTINGS)


def test_secrets_are_masked_everywhere(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdef123456")
    result = chats("config", "set", "database_url", "postgresql://me:hunter2@db.example.com/chats?sslmode=require")
    assert result.exit_code == 0 and "hunter2" not in result.output
    text = chats("config", "show").output + chats("config", "show", "--json").output
    assert "hunter2" not in text and "sk-live-abcdef123456" not in text
    rows = shown()
    assert rows["database_url"]["value"] == "postgresql://me:***@db.example.com/chats?sslmode=require"
    assert rows["openai_api_key"]["value"] == "***"


def test_set_converts_and_validates_before_writing():
    assert chats("config", "set", "redact", "off").exit_code == 0
    assert chats("config", "set", "sync_interval", "1h").exit_code == 0
    assert chats("config", "set", "dimensions", "512").exit_code == 0
    with open(paths.config_path(), "rb") as fh:
        data = tomllib.load(fh)
    assert data == {"redact": False, "sync_interval": 3600, "dimensions": 512}
    assert stat.S_IMODE(os.stat(paths.config_path()).st_mode) == 0o600
    for key, value, says in [("provider", "nonsense", "unknown embedding provider"),
                             ("dimensions", "0", "positive"), ("dimensions", "many", "not a valid integer"),
                             ("redact", "maybe", "boolean"), ("sync_interval", "soon", "duration"),
                             ("colour", "blue", "unknown setting 'colour'"),
                             ("database_url", "definitely not a url", "not a valid PostgreSQL URL")]:
        result = chats("config", "set", key, value)
        assert result.exit_code == 1 and says in result.output, (key, result.output)
    with open(paths.config_path(), "rb") as fh:
        assert tomllib.load(fh) == data


def test_unset_returns_to_the_default():
    chats("config", "set", "provider", "ollama")
    assert config.load().provider == "ollama"
    assert chats("config", "unset", "provider").exit_code == 0
    settings = config.load()
    assert (settings.provider, settings.source("provider")) == ("llama", "default")


def test_unknown_keys_in_the_file_survive_a_set():
    paths.ensure_private_dir(paths.config_dir())
    with open(paths.config_path(), "w") as fh:
        fh.write('provider = "ollama"\n[future]\nthing = 1\n')
    chats("config", "set", "model", "m")
    with open(paths.config_path(), "rb") as fh:
        assert tomllib.load(fh) == {"provider": "ollama", "model": "m", "future": {"thing": 1}}


def test_a_broken_file_is_reported_with_its_path():
    paths.ensure_private_dir(paths.config_dir())
    with open(paths.config_path(), "w") as fh:
        fh.write("provider = \n")
    result = chats("config", "show")
    assert result.exit_code == 1 and paths.config_path() in result.output and "not valid TOML" in result.output


@pytest.mark.parametrize("text, seconds", [("300", 300), ("5m", 300), ("1.5h", 5400), ("off", 0), ("0", 0), (42, 42)])
def test_durations(text, seconds):
    assert config.parse_value("sync_interval", text) == seconds


def test_env_duration_is_understood_too(monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", "2m")
    assert config.load().sync_interval == 120
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", "-1")
    with pytest.raises(ConfigError, match="CLAUDE_CHATS_SYNC_INTERVAL"):
        config.load()


def test_embed_timeout_reaches_each_network_provider(monkeypatch):
    """``embed_timeout`` (seconds or a duration) is the timeout of ollama, openai and bedrock; 0 is refused."""
    from claude_chats.models import get_provider

    assert config.parse_value("embed_timeout", "2m") == 120
    result = chats("config", "set", "embed_timeout", "0")
    assert result.exit_code == 1 and "positive" in result.output
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    overrides = {"openai_api_key": "sk-test"}
    for timeout, expected in ((None, 30.0), ("7", 7.0)):
        settings = config.load({**overrides, "embed_timeout": timeout})
        for name in ("ollama", "openai", "bedrock"):
            provider = get_provider(config.load({**overrides, "provider": name, "embed_timeout": timeout}))
            try:
                assert provider.timeout == expected, name
            finally:
                provider.close()
        assert settings.embed_timeout == (None if timeout is None else int(timeout))
    bedrock = get_provider(config.load({"provider": "bedrock", "embed_timeout": "7"}))
    assert (bedrock._client.meta.config.read_timeout, bedrock._client.meta.config.connect_timeout) == (7.0, 7.0)


# -- the tests' own isolation (tests/conftest.py) ---------------------------------------------


def test_inside_a_test_every_setting_is_its_default(tmp_path):
    """What ``isolated_home`` gives every test: no setting, folder or fault injection from the shell."""
    settings = config.load()
    for key in config.SETTINGS:
        if key == "sync_interval":   # the fixture turns the hook's background sync off
            assert (settings.sync_interval, settings.source(key)) == (0, "env CLAUDE_CHATS_SYNC_INTERVAL")
        else:
            assert settings.source(key) == "default", (key, settings.source(key))
    assert [name for name in NOT_SETTINGS if name in os.environ and name not in FIXED] == []
    assert os.environ["OLLAMA_MODELS"] == str(tmp_path / "ollama-models")
    assert os.environ["CLAUDE_CHATS_MODEL_CACHE"] != "/from/the/shell"
    assert paths.data_dir() == str(tmp_path / "chats-home")
    assert paths.claude_projects_dir() == str(tmp_path / "claude" / "projects")


def test_a_setting_in_the_developers_shell_does_not_reach_a_test():
    """Every variable of every setting (and the others the product reads) set in the shell that starts
    pytest: the test above, run by that pytest, still sees the defaults only."""
    shell = {**os.environ, **{env: "1" for setting in config.SETTINGS.values() for env in setting.envs},
             **{name: "/from/the/shell" for name in NOT_SETTINGS}, faults.ENV: "after-embed",
             "CLAUDE_CHATS_HOME": "/from/the/shell", "CLAUDE_CONFIG_DIR": "/from/the/shell"}
    inner = f"{__file__}::test_inside_a_test_every_setting_is_its_default"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", inner], cwd=ROOT,
                          env=shell, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-3000:]
