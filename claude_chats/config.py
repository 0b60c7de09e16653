"""One configuration for the hook, sync, the CLI and the MCP server.

Each setting resolves once, in this order: explicit value (a CLI flag) >
environment variable > config file (``config.toml`` in the config dir) >
default. The environment variable names of the hand-made setup keep working.
"""

import os
import tomllib

from . import paths
from .errors import ConfigError


class Setting:
    __slots__ = ("key", "envs", "default", "kind", "secret", "help")

    def __init__(self, key, envs, default, kind=str, secret=False, help=""):
        self.key, self.envs, self.default = key, envs, default
        self.kind, self.secret, self.help = kind, secret, help


def _bool(value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {value!r}")


SETTINGS = {
    s.key: s
    for s in [
        Setting("provider", ("CLAUDE_CHATS_PROVIDER",), "llama",
                help="embedding provider: llama, ollama, bedrock, openai"),
        Setting("model", ("CLAUDE_CHATS_MODEL", "OLLAMA_MODEL"), None,
                help="embedding model (GGUF path or Ollama name; provider default when unset)"),
        Setting("dimensions", ("CLAUDE_CHATS_DIMENSIONS",), None, kind=int,
                help="embedding dimensions, for models that offer several"),
        Setting("threads", ("CLAUDE_CHATS_THREADS",), None, kind=int,
                help="CPU threads for the llama provider"),
        Setting("ollama_base_url", ("OLLAMA_BASE_URL", "OLLAMA_HOST"), "http://localhost:11434"),
        Setting("bedrock_region", ("BEDROCK_REGION", "AWS_REGION"), "us-east-1"),
        Setting("openai_api_key", ("OPENAI_API_KEY",), None, secret=True),
        Setting("openai_base_url", ("OPENAI_BASE_URL",), "https://api.openai.com/v1"),
        Setting("database_url", ("DATABASE_URL", "CLAUDE_CHATS_DB_URL"), None, secret=True,
                help="canonical PostgreSQL + pgvector database"),
        Setting("allow_insecure_remote", ("CLAUDE_CHATS_ALLOW_INSECURE",), False, kind=_bool,
                help="allow a non-local Postgres host without TLS"),
        Setting("sync_interval", ("CLAUDE_CHATS_SYNC_INTERVAL",), 300, kind=int,
                help="seconds between background syncs started by the hook (0: never)"),
        Setting("redact", ("CLAUDE_CHATS_REDACT",), True, kind=_bool,
                help="redact secrets before text leaves the machine"),
    ]
}


class Settings:
    """Resolved settings; ``source(key)`` tells where each value came from."""

    def __init__(self, values, sources):
        self._values, self._sources = values, sources

    def __getattr__(self, key):
        try:
            return self._values[key]
        except KeyError:
            raise AttributeError(key) from None

    def source(self, key):
        return self._sources[key]

    def items(self):
        return [(k, self._values[k], self._sources[k]) for k in SETTINGS]


def read_file(path=None):
    """The config file as a dict ({} when absent); a malformed file is an error."""
    path = path or paths.config_path()
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _convert(setting, value, origin):
    if value is None:
        return None
    try:
        return setting.kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{setting.key} from {origin}: {value!r} is not a valid {setting.kind.__name__}") from None


def load(overrides=None, path=None, environ=None):
    """Resolve every setting: ``overrides`` (flags) > env > file > default."""
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    environ = os.environ if environ is None else environ
    unknown = set(overrides) - set(SETTINGS)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    filed = read_file(path)
    values, sources = {}, {}
    for key, setting in SETTINGS.items():
        if key in overrides:
            values[key], sources[key] = _convert(setting, overrides[key], "flag"), "flag"
            continue
        env = next((e for e in setting.envs if environ.get(e)), None)
        if env:
            values[key], sources[key] = _convert(setting, environ[env], f"${env}"), f"env {env}"
        elif key in filed:
            values[key], sources[key] = _convert(setting, filed[key], "config file"), "file"
        else:
            values[key], sources[key] = setting.default, "default"
    return Settings(values, sources)
