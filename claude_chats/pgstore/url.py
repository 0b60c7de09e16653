"""Database URLs: is the host local, is TLS on, and a printable (masked) form.

A URL whose host is not local must ask for TLS (``sslmode=require``,
``verify-ca`` or ``verify-full``), unless the user opts out explicitly.
Passwords never reach output or logs: print ``mask(url)``, and pass error text
through ``hide_password(text, url)``.
"""

import os
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg.conninfo

from ..errors import ConfigError, InsecureConnectionError
from ..hosts import is_local_host

TLS_MODES = ("require", "verify-ca", "verify-full")
MASK = "***"

_KV_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def parse(url):
    """The connection parameters of ``url`` (URL or ``key=value`` form) as a dict."""
    try:
        return psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"database_url is not a valid PostgreSQL URL: {hide_password(str(exc), url)}") from None


def mask(url):
    """``url`` with its password replaced by ``***`` (safe to print)."""
    if not url:
        return url
    if "://" in url:
        parts = urlsplit(url)
        if parts.password is not None:
            user = parts.username or ""
            host = parts.netloc.rsplit("@", 1)[1]
            parts = parts._replace(netloc=f"{user}:{MASK}@{host}")
        query = _KV_PASSWORD.sub(lambda m: m.group(1) + MASK, parts.query.replace("&", " "))
        return urlunsplit(parts._replace(query=query.replace(" ", "&")))
    return _KV_PASSWORD.sub(lambda m: m.group(1) + MASK, url)


def hide_password(text, url):
    """``text`` (an error message) with any password of ``url`` replaced by ``***``."""
    password = _password(url)
    if password:
        text = text.replace(password, MASK)
    return text


def _password(url):
    try:
        return psycopg.conninfo.conninfo_to_dict(url).get("password")
    except psycopg.Error:
        match = re.search(r"://[^/:@]*:([^@/]*)@", url or "")
        return match.group(1) if match else None


def hosts(params, environ=None):
    """The hosts ``params`` connect to (``PGHOST`` and the Unix socket when unset)."""
    environ = os.environ if environ is None else environ
    raw = params.get("host") or params.get("hostaddr") or environ.get("PGHOST") or ""
    return [h.strip() for h in raw.split(",")] if raw else [""]


def sslmode(params, environ=None):
    environ = os.environ if environ is None else environ
    return (params.get("sslmode") or environ.get("PGSSLMODE") or "prefer").lower()


def check(url, allow_insecure_remote=False, environ=None):
    """Refuse a non-local host without TLS; returns the parsed parameters."""
    params = parse(url)
    remote = [h for h in hosts(params, environ) if not is_local_host(h)]
    if remote and sslmode(params, environ) not in TLS_MODES and not allow_insecure_remote:
        raise InsecureConnectionError(
            f"refusing to connect to {', '.join(remote)} without TLS ({mask(url)}). "
            "Add sslmode=verify-full (with sslrootcert=<CA file>) or sslmode=require to the URL, "
            "e.g. postgresql://user@host:5432/db?sslmode=verify-full; or, if this network is trusted, "
            "set allow_insecure_remote = true in the config file (or CLAUDE_CHATS_ALLOW_INSECURE=1).")
    return params
