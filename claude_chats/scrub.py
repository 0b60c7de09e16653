"""Claude Code's ``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB``: which of claude-chats' credentials it takes away.

With the scrub on (``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1``; it needs bubblewrap),
Claude Code 2.1.332 starts hooks, Bash commands and MCP servers without the
variables whose names look secret and without any variable whose value is a URL
with a user and a password. Observed with the real CLI
(tests/claude_code/test_scrub.py): ``OPENAI_API_KEY``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_BEARER_TOKEN_BEDROCK``,
``PGPASSWORD`` and ``DATABASE_URL=postgresql://user:password@host/db`` are gone;
``AWS_PROFILE``, ``AWS_REGION``, a URL without a password and the variable
``CLAUDE_CODE_SUBPROCESS_ENV_SCRUB`` itself stay. Files stay too: ``config.toml``,
``~/.pgpass``, ``~/.aws/credentials``.

``missing_credential(settings)``, inside a scrubbed process (``chats mcp``, the
hook's background sync, ``chats`` run by Claude's Bash): why the configured
provider has no credentials, or None. ``losses(settings)``, in the person's
shell (``chats doctor``): what the scrub would take from what the settings read.
"""

import os
import re

from .errors import ProviderUnavailable

FLAG = "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB"
AWS_SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
OPENAI_URL = "https://api.openai.com/v1"
_URL_WITH_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:[^/?#@]*@")
CONFIG_FIX = "which the scrub cannot reach"


def scrub_on(environ=None):
    """Whether this environment says the scrub is on (Claude Code passes the variable on to what it starts)."""
    return (environ if environ is not None else os.environ).get(FLAG, "").strip().lower() in ("1", "true", "yes", "on")


def scrubbed_by_value(value):
    """Whether the scrub removes a variable holding ``value`` whatever its name (a URL with a password)."""
    return bool(_URL_WITH_PASSWORD.match(value or ""))


def missing_credential(settings, environ=None):
    """Inside a scrubbed process: why the configured embedding provider has no credentials, or None."""
    environ = environ if environ is not None else os.environ
    if not scrub_on(environ):
        return None
    if settings.provider == "openai" and not settings.openai_api_key and _openai_url(settings) == OPENAI_URL:
        return (f"Claude Code's {FLAG} removes OPENAI_API_KEY from the environment of what it starts, so the openai "
                f"provider has no key here: put it in config.toml (chats config set openai_api_key sk-...), "
                f"{CONFIG_FIX}")
    if settings.provider == "bedrock" and not any(environ.get(v) for v in AWS_SECRETS) and not _aws_files(environ):
        return (f"Claude Code's {FLAG} removes the AWS keys from the environment of what it starts, so the bedrock "
                f"provider has no credentials here: keep them in ~/.aws/credentials (a profile; AWS_PROFILE and "
                f"AWS_REGION pass the scrub), {CONFIG_FIX}")
    return None


def check(settings, environ=None):
    """Raise ``ProviderUnavailable`` with ``missing_credential``'s reason, if any: before a provider is built
    that would fail with a less helpful message (or, for bedrock, after a second of asking the instance
    metadata service)."""
    reason = missing_credential(settings, environ)
    if reason:
        raise ProviderUnavailable(reason)


def losses(settings, environ=None):
    """``[(what, variables, fix)]``: credentials the settings take from the environment that the scrub removes."""
    environ = environ if environ is not None else os.environ
    found = []
    if settings.provider == "openai" and str(settings.source("openai_api_key")).startswith("env"):
        found.append(("the openai provider's key", ["OPENAI_API_KEY"],
                      f"chats config set openai_api_key <key> (config.toml, {CONFIG_FIX})"))
    aws = [v for v in AWS_SECRETS if environ.get(v)]
    if settings.provider == "bedrock" and aws:
        found.append(("the bedrock provider's AWS credentials", aws,
                      f"keep them in ~/.aws/credentials (a profile, chosen with AWS_PROFILE), {CONFIG_FIX}"))
    source = str(settings.source("database_url"))
    if settings.database_url and source.startswith("env") and scrubbed_by_value(settings.database_url):
        found.append(("the database URL (it holds a password)", [source.split(" ", 1)[-1]],
                      f"chats config set database_url <url> (config.toml, {CONFIG_FIX}), or the password in "
                      "~/.pgpass and the URL without it"))
    if settings.database_url and environ.get("PGPASSWORD"):
        found.append(("the Postgres password", ["PGPASSWORD"], f"put it in ~/.pgpass, {CONFIG_FIX}"))
    return found


def _openai_url(settings):
    return (getattr(settings, "openai_base_url", None) or OPENAI_URL).rstrip("/")


def _aws_files(environ):
    home = os.path.expanduser("~")
    files = (environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.join(home, ".aws", "credentials"),
             environ.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config"))
    return any(os.path.isfile(f) for f in files)
