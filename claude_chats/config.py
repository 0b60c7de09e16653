"""One configuration for the hook, sync, the CLI and the MCP server.

Each setting resolves once, in this order: explicit value (a CLI flag) >
environment variable > config file (``config.toml`` in the config dir) >
default. The environment variable names of the hand-made setup keep working.

``write_values`` / ``unset`` change the file (``chats config set``, ``chats
install``); ``shown(key, value)`` is a value safe to print (secrets masked).
Stdlib only at import time: the hook's background-sync check reads the config.
"""

import os

from . import paths
from .errors import ConfigError
from .times import DURATION_FORMS
from .times import seconds as _seconds


def _bool(value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError()


def _text(value):
    """A string, as the command line and the environment give it (a TOML string in the file)."""
    if not isinstance(value, str):
        raise ValueError(f"it is {_toml_type(value)}")
    return value


def _integer(value):
    """A whole number: ``512`` or ``"512"``; not ``true``, not ``1.7``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"it is {_toml_type(value)}")
    try:
        return int(value)
    except ValueError:
        raise ValueError() from None


def _startup_count(value):
    """0 to 10 sessions."""
    count = _integer(value)
    if not 0 <= count <= 10:
        raise ValueError()
    return count


def _paths(value):
    """Project folders (globs allowed): a TOML array of strings, or one string of folders separated by
    ``:`` (the environment's form). ``~`` is expanded; each must then be absolute, as Claude Code
    records a session's folder."""
    if isinstance(value, str):
        items = value.split(os.pathsep)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise ValueError(f"it is {_toml_type(value)}")
    out = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        path = os.path.expanduser(item)
        if not os.path.isabs(path):
            raise ValueError(f"{item!r} is not an absolute path")
        out.append(path.rstrip("/") or "/")
    return tuple(out)


def _toml_type(value):
    """What TOML calls the type of ``value``, with its article."""
    return {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array",
            dict: "a table"}.get(type(value), f"a {type(value).__name__}")


class Setting:
    __slots__ = ("key", "envs", "default", "kind", "secret", "help")

    def __init__(self, key, envs, default, kind=_text, secret=False, help=""):
        self.key, self.envs, self.default = key, envs, default
        self.kind, self.secret, self.help = kind, secret, help


SETTINGS = {
    s.key: s
    for s in [
        Setting("provider", ("CLAUDE_CHATS_PROVIDER",), "llama",
                help="embedding provider: llama, ollama, bedrock, openai"),
        Setting("model", ("CLAUDE_CHATS_MODEL", "OLLAMA_MODEL"), None,
                help="embedding model (GGUF path or Ollama name; provider default when unset)"),
        Setting("dimensions", ("CLAUDE_CHATS_DIMENSIONS",), None, kind=_integer,
                help="embedding dimensions, for models that offer several"),
        Setting("threads", ("CLAUDE_CHATS_THREADS",), None, kind=_integer,
                help="CPU threads for the llama provider"),
        Setting("ollama_base_url", ("OLLAMA_BASE_URL", "OLLAMA_HOST"), "http://localhost:11434"),
        Setting("bedrock_region", ("BEDROCK_REGION", "AWS_REGION"), "us-east-1"),
        Setting("openai_api_key", ("OPENAI_API_KEY",), None, secret=True),
        Setting("openai_base_url", ("OPENAI_BASE_URL",), "https://api.openai.com/v1"),
        Setting("embed_text", ("CLAUDE_CHATS_EMBED_TEXT",), "lean",
                help="what is embedded per message: lean (the previous message, who and when, then the text; "
                     "a tool result's first 300 characters; nothing of thinking and the kinds search leaves out), "
                     "context (the same, every kind whole) or plain (the text alone); KIND=CHARS after a comma "
                     "limits a kind (0: no vector); a change re-embeds at the next `chats sync`"),
        Setting("embed_timeout", ("CLAUDE_CHATS_EMBED_TIMEOUT",), None, kind=_seconds,
                help="seconds a request to ollama, openai or bedrock may take (default 30; 1m, 90)"),
        Setting("database_url", ("DATABASE_URL", "CLAUDE_CHATS_DB_URL"), None, secret=True,
                help="canonical PostgreSQL + pgvector database"),
        Setting("allow_insecure_remote", ("CLAUDE_CHATS_ALLOW_INSECURE",), False, kind=_bool,
                help="allow a non-local Postgres host without TLS"),
        Setting("sync_interval", ("CLAUDE_CHATS_SYNC_INTERVAL",), 300, kind=_seconds,
                help="seconds between background syncs started by the hook (5m, 1h; 0 or off: never)"),
        Setting("redact", ("CLAUDE_CHATS_REDACT",), True, kind=_bool,
                help="redact secrets before text leaves the machine"),
        Setting("recall_hints", ("CLAUDE_CHATS_RECALL_HINTS",), True, kind=_bool,
                help="on each prompt, point Claude at up to 3 other sessions that strongly match it "
                     "(a full-text probe of the journal by the hook)"),
        Setting("startup_sessions", ("CLAUDE_CHATS_STARTUP_SESSIONS",), 3, kind=_startup_count,
                help="when a session starts, name this project's N most recent sessions to Claude "
                     "(0: nothing; at most 10)"),
        Setting("exclude_projects", ("CLAUDE_CHATS_EXCLUDE_PROJECTS",), (), kind=_paths,
                help="project folders (and everything below them; *, ? and [...] as in globs) whose transcripts "
                     "the hook and `chats import` never store; in the environment, separated by ':'"),
        Setting("journal_redact", ("CLAUDE_CHATS_JOURNAL_REDACT",), False, kind=_bool,
                help="store redacted text in the local journal too (hook and import); "
                     "`chats redact --journal` rewrites what is already stored"),
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


CONFIG_BYTES = 1 << 20   # a config file is a few hundred bytes


def read_file(path=None):
    """The config file as a dict ({} when absent); a malformed file is an error."""
    import tomllib  # here, not at the top: the hook imports this module on some turns

    path = path or paths.config_path()
    if path == os.devnull:   # what a caller passes for "no config file" (evaluate's bake-off)
        return {}
    try:
        data = paths.read_regular(path, CONFIG_BYTES)   # a FIFO there would hang every command
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except RecursionError:   # tomllib reads nested arrays and tables by recursion
        raise ConfigError(f"config file {path} is not a configuration: its arrays or tables nest too deep to "
                          "be read") from None


_KIND_NAMES = {_bool: "boolean (true/false)", _seconds: f"duration ({DURATION_FORMS})",
               _integer: "integer", _startup_count: "number of sessions (0 to 10)", _text: "string", _paths: "list of absolute folder paths (globs allowed)"}


def _checked(setting, value, origin, validate=True):
    """``value`` of ``setting`` from ``origin`` converted and checked, or a one-line ConfigError naming
    the setting, where the value came from, the value (masked when secret) and what is allowed."""
    if value is None:
        return None
    try:
        value = setting.kind(value)
    except (TypeError, ValueError, OverflowError) as exc:
        why = f": {exc}" if str(exc) else ""
        raise ConfigError(f"{setting.key} from {origin}: {_printable(setting, value)} is not a valid "
                          f"{_KIND_NAMES[setting.kind]}{why}") from None
    check = _VALIDATORS.get(setting.key)
    if check is not None and (validate or setting.key not in _IMPORTING):
        try:
            check(value)
        except ConfigError as exc:
            raise ConfigError(f"{setting.key} from {origin}: {exc}") from None
    return value


def _printable(setting, value):
    """``value`` as an error message may show it: a secret masked, a long value cut."""
    if setting.secret:
        return shown(setting.key, value) if isinstance(value, str) else _toml_type(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def load(overrides=None, path=None, environ=None, validate=True):
    """Resolve every setting: ``overrides`` (flags) > env > file > default.

    Every value is converted and checked as ``chats config set`` checks it, and a key of the
    file that is no setting is refused: a one-line ``ConfigError`` naming the key, where it came
    from (the flag, ``$VARIABLE``, the file) and what is allowed. ``validate=False`` skips the
    checks that import a provider registry or the Postgres driver (provider, embed_text,
    database_url): what the hook's path uses, which must stay cheap.
    """
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    environ = os.environ if environ is None else environ
    unknown = set(overrides) - set(SETTINGS)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    path = path or paths.config_path()
    filed = read_file(path)
    for key, value in filed.items():
        if key not in SETTINGS:
            raise ConfigError(unknown_setting(key, f"config file {path}", value))
    values, sources = {}, {}
    for key, setting in SETTINGS.items():
        env = next((e for e in setting.envs if environ.get(e)), None)
        if key in overrides:
            value, sources[key], origin = overrides[key], "flag", "flag"
        elif env:
            value, sources[key], origin = environ[env], f"env {env}", f"${env}"
        elif key in filed:
            value, sources[key], origin = filed[key], "file", f"config file {path}"
        else:
            values[key], sources[key] = setting.default, "default"
            continue
        values[key] = _checked(setting, value, origin, validate)
    return Settings(values, sources)


def from_environment(key, environ=None):
    """A setting's value from the environment alone, checked (None when no variable of it is set):
    what the hook reads without parsing the config file."""
    environ = os.environ if environ is None else environ
    setting = SETTINGS[key]
    env = next((e for e in setting.envs if environ.get(e)), None)
    return None if env is None else _checked(setting, environ[env], f"${env}", validate=False)


def unknown_setting(key, where, value=None):
    """The message for ``key``, which is no setting: the nearest setting's name when it looks misspelled."""
    import difflib

    near = difflib.get_close_matches(str(key), SETTINGS, n=1, cutoff=0.6)
    if near:
        shown_value = "" if value is None else f" = {_printable(SETTINGS[near[0]], value)}"
        return (f"{where}: unknown setting {key!r}{shown_value}: did you mean {near[0]}? "
                f"(rename it, or `chats config unset {key}`)")
    return f"{where}: unknown setting {key!r}; the settings are: {', '.join(SETTINGS)}"


def project_filter(settings=None):
    """A ``capture.ProjectFilter`` of the ``exclude_projects`` setting, or None when it lists none."""
    patterns = (settings or load(validate=False)).exclude_projects
    if not patterns:
        return None
    from .capture import ProjectFilter

    return ProjectFilter(patterns)


def journal_redactor(settings=None):
    """``redact.redact`` when the ``journal_redact`` setting is on, else None (what the hook and
    ``chats import`` store message text, session names and summaries through)."""
    if not (settings or load(validate=False)).journal_redact:
        return None
    from .redact import redact  # imported only when the setting is on: the hook's path
    return redact


# -- changing the file ------------------------------------------------------------

def setting(key):
    """The ``Setting`` named ``key``; ConfigError naming the valid keys otherwise."""
    try:
        return SETTINGS[key]
    except KeyError:
        raise ConfigError(unknown_setting(key, "chats config")) from None


def parse_value(key, text):
    """``text`` (from the command line) converted and checked for ``key``."""
    return _checked(setting(key), text, "the command line")


def _check_provider(name):
    from .models import check_provider_name  # the validators import lazily: the hook imports this module

    check_provider_name(name)


def _check_database_url(url):
    from .pgstore import url as dburl

    dburl.parse(url)


INT_MAX = 2**31 - 1    # the providers hand these to C (thread counts, dimensions, timeouts)


def _check_positive(value):
    if value is not None and not 0 < value <= INT_MAX:
        raise ConfigError(f"must be a positive integer up to {INT_MAX}, not {value}")


def _check_embed_text(value):
    from .models.recipe import recipe_for

    recipe_for(value)


_VALIDATORS = {"provider": _check_provider, "embed_text": _check_embed_text, "database_url": _check_database_url,
               "dimensions": _check_positive, "threads": _check_positive, "embed_timeout": _check_positive}
_IMPORTING = {"provider", "embed_text", "database_url"}   # their checks import models or psycopg


def write_values(values, path=None):
    """Merge ``values`` ({key: text or value}) into the config file; None removes a key.

    Every value is converted and checked before anything is written; the file
    is replaced atomically and stays owner-only. Returns the file's path.
    """
    path = path or paths.config_path()
    current = read_file(path)
    for key, value in values.items():
        if value is None:
            if key not in current:   # a key that is no setting may be removed (a misspelling)
                setting(key)
            current.pop(key, None)
        else:
            current[key] = parse_value(key, value)
    _write(path, current)
    return path


def unset(key, path=None):
    """Remove ``key`` from the config file (its value falls back to env or default)."""
    return write_values({key: None}, path)


def _write(path, data):
    import tomli_w

    paths.ensure_private_dir(os.path.dirname(path))
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"# claude-chats configuration (chats config set KEY VALUE; chats config show)\n")
        fh.write(tomli_w.dumps({k: data[k] for k in SETTINGS if k in data}
                               | {k: v for k, v in data.items() if k not in SETTINGS}).encode())
    os.replace(tmp, path)


# -- showing ----------------------------------------------------------------------

MASK = "***"


def shown(key, value):
    """``value`` of ``key`` as it may be printed: secrets masked, URLs without passwords."""
    if value is None or not SETTINGS[key].secret:
        return value
    if key == "database_url":
        from .pgstore import url as dburl

        return dburl.mask(value)
    return MASK


def describe(settings):
    """``[{key, value, source, help}]`` of every setting, secrets masked."""
    return [{"key": key, "value": shown(key, value), "source": source, "help": SETTINGS[key].help}
            for key, value, source in settings.items()]
