"""Database URLs: where libpq will connect, is TLS on, and a printable (masked) form.

A connection whose target is not this machine must ask for TLS (``sslmode=require``,
``verify-ca`` or ``verify-full``), unless the user opts out explicitly. The
target is what libpq (through psycopg) connects to, not what the URL seems to
say: ``hostaddr`` wins over ``host``; a ``service`` reads its parameters from
the service files; ``PGHOST``, ``PGHOSTADDR``, ``PGSSLMODE`` and ``PGSERVICE``
fill in what the URL leaves out (see ``connection``).

Passwords never reach output or logs: print ``mask(url)``, and pass error text
through ``hide_password(text, url)``. Both read the URL the way libpq does
(the URI grammar: the user information runs to the first ``@`` before any
``/``, and ``#`` or ``?`` inside it are characters of the password; the
``key=value`` form with its quotes and backslashes; ``?password=`` parameters,
percent-encoding), hide more rather than less where the text is not what libpq
reads (a ``/`` in a password), and never raise.
"""

import os
from urllib.parse import unquote

import psycopg.conninfo

from ..errors import ConfigError, InsecureConnectionError
from ..hosts import is_local_host

TLS_MODES = ("require", "verify-ca", "verify-full")
MASK = "***"
SECRET_KEYS = ("password", "sslpassword")
NESTED_KEYS = ("dbname",)              # a connection string may hide inside dbname
LDAP_TARGET = "(a host looked up in LDAP)"
SYSCONFDIR = "/etc/postgresql-common"  # libpq's compiled default for pg_service.conf (psycopg-binary's)

_SPACE = " \t\n\v\f\r"                 # C isspace(), what libpq skips
_SEPARATORS = "/@:?&=,#" + _SPACE       # a password cut by one of these may show in part
_ENV = {"host": "PGHOST", "hostaddr": "PGHOSTADDR", "sslmode": "PGSSLMODE", "service": "PGSERVICE",
        "servicefile": "PGSERVICEFILE"}


def parse(url):
    """The connection parameters of ``url`` (URL or ``key=value`` form) as a dict."""
    try:
        return psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise ConfigError(f"database_url is not a valid PostgreSQL URL: {hide_password(str(exc), url)}") from None


# -- masking -----------------------------------------------------------------------------


def mask(url):
    """``url`` with its passwords replaced by ``***`` (safe to print; never raises)."""
    if not url:
        return url
    try:
        text = str(url)
        return _replaced(text, _secret_spans(text))
    except Exception:  # noqa: BLE001 - what cannot be read is not printed
        return MASK


def hide_password(text, url):
    """``text`` (an error message) with any password of ``url`` replaced by ``***``."""
    if not text:
        return text
    for secret in sorted(_secrets(url), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def _secrets(url):
    """Every string of ``url`` that is, or may be, a password (as written, decoded, and in pieces)."""
    if not url:
        return set()
    found = set()
    try:
        text = str(url)
        for start, end in _secret_spans(text):
            raw = text[start:end]
            for form in (raw, unquote(raw), _unescaped(raw)):
                found.add(form)
                found.update(piece for piece in _split(form) if len(piece) >= 3)
        params = psycopg.conninfo.conninfo_to_dict(text)
        found.update(params.get(key) for key in SECRET_KEYS)
    except Exception:  # noqa: BLE001 - what was found so far is hidden
        pass
    return {s for s in found if s and s != MASK}


def _split(text):
    for sep in _SEPARATORS:
        text = text.replace(sep, "\0")
    return text.split("\0")


def _replaced(text, spans):
    out, at = [], 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        start = max(start, at)
        out.append(text[at:start] + MASK)
        at = end
    return "".join(out) + text[at:]


def _secret_spans(text):
    """``(start, end)`` of each secret in ``text``."""
    head, sep, _tail = text.partition("://")
    if sep and head.strip()[:1].isalpha() and all(c.isalnum() or c in "+.-" for c in head.strip()):
        return _uri_spans(text, len(head) + 3)
    return _keyword_spans(text)


def _uri_spans(text, start):
    """Secrets of ``scheme://[user[:password]@][host][/dbname][?params]``.

    libpq ends the user information at the first ``@`` before any ``/``. The
    span masked runs to the last ``@`` before that ``/`` (a host has no ``@``), or,
    when a ``/`` comes first, to the first ``@`` (libpq then reads no password,
    but the person wrote one with a ``/`` in it). Parameters are read from
    where libpq reads them and from after the widened span.
    """
    slash = text.find("/", start)
    slash = len(text) if slash < 0 else slash
    first = min((i for i in (text.find("@", start), slash) if i >= 0), default=len(text))
    libpq_at = first if first < len(text) and text[first] == "@" else -1
    at = text.rfind("@", start, slash) if libpq_at >= 0 else text.find("@", start)
    spans = []
    if at >= 0:
        colon = text.find(":", start, at)
        if colon >= 0:
            spans.append((colon + 1, at))
    for after in {libpq_at + 1 if libpq_at >= 0 else start, at + 1 if at >= 0 else start}:
        question = text.find("?", after)
        if question >= 0:
            spans += _query_spans(text, question + 1)
    return spans


def _query_spans(text, start):
    spans, at = [], start
    for param in text[start:].split("&"):
        key, sep, value = param.partition("=")
        if sep and _is_secret(unquote(key), unquote(value)):
            spans.append((at + len(key) + 1, at + len(param)))
        at += len(param) + 1
    return spans


def _keyword_spans(text):
    """Secrets of ``key=value key='quoted \\' value'`` (libpq's ``conninfo_parse``). From where the
    text stops being that (a missing ``=``, an unterminated quote) everything is a secret."""
    spans, i, n = [], 0, len(text)
    while i < n:
        if text[i] in _SPACE:
            i += 1
            continue
        key_start = i
        while i < n and text[i] != "=" and text[i] not in _SPACE:
            i += 1
        key = text[key_start:i]
        while i < n and text[i] in _SPACE:
            i += 1
        if i >= n or text[i] != "=":
            return spans + [(key_start, n)]
        i += 1
        while i < n and text[i] in _SPACE:
            i += 1
        value_start = i
        if i < n and text[i] == "'":
            i += 1
            while i < n and text[i] != "'":
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                return spans + [(value_start, n)]
            i += 1
        else:
            while i < n and text[i] not in _SPACE:
                i += 2 if text[i] == "\\" else 1
            i = min(i, n)
        if _is_secret(key, _unescaped(text[value_start:i])):
            spans.append((value_start, i))
    return spans


def _unescaped(value):
    if value[:1] == "'" and value[-1:] == "'" and len(value) > 1:
        value = value[1:-1]
    out, i = [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            i += 1
        out.append(value[i])
        i += 1
    return "".join(out)


def _is_secret(key, value):
    key = key.strip().lower()
    if key in SECRET_KEYS:
        return True
    return key in NESTED_KEYS and ("=" in value or "://" in value) and bool(_secret_spans(value))


# -- where libpq connects ------------------------------------------------------------------


def connection(params, environ=None):
    """``(targets, sslmode)``: the addresses or hosts libpq will connect to, and the TLS mode.

    Each value comes from the URL, else the service file (``service``, or ``PGSERVICE``),
    else the environment (libpq's order). psycopg resolves the URL's and the environment's
    hosts itself, without the service file; the targets are those of both readings. A
    ``hostaddr`` is connected to instead of its ``host``. A service whose parameters come
    from LDAP has an unknown target (``LDAP_TARGET``, never local).
    """
    environ = os.environ if environ is None else environ
    service_name = _value("service", params, {}, environ)
    service = service_params(service_name, params, environ) if service_name else {}
    libpq = {k: _value(k, params, service, environ) for k in ("host", "hostaddr")}
    driver = {k: _value(k, params, {}, environ) for k in ("host", "hostaddr")}
    targets = []
    for view in (libpq, driver):
        targets += [t for t in _targets(view) if t not in targets]
    if "ldap" in service:
        targets.append(LDAP_TARGET)
    mode = _value("sslmode", params, service, environ)
    return targets, (mode if mode is not None else "prefer").lower()


def remote(targets):
    """The ``targets`` that are not this machine."""
    return [t for t in targets if not is_local_host(t)]


def _value(key, params, service, environ):
    if key in params:
        return params[key]
    if key in service:
        return service[key]
    return environ.get(_ENV[key])


def _targets(view):
    """What one reading connects to: each ``hostaddr`` entry, else its ``host`` ("" is the socket)."""
    hosts = view["host"].split(",") if view["host"] else []
    addrs = view["hostaddr"].split(",") if view["hostaddr"] else []
    if not hosts and not addrs:
        return [""]
    return [(addrs[i] if i < len(addrs) else "") or (hosts[i] if i < len(hosts) else "")
            for i in range(max(len(hosts), len(addrs)))]


def service_params(name, params=None, environ=None):
    """The parameters of service ``name`` as libpq reads them: the first file that defines it of
    ``servicefile`` (or ``PGSERVICEFILE``, else ``~/.pg_service.conf``) and
    ``$PGSYSCONFDIR/pg_service.conf``; ConfigError when none does."""
    params = params or {}
    environ = os.environ if environ is None else environ
    user_file = params.get("servicefile") or environ.get("PGSERVICEFILE") or \
        os.path.join(_home(environ), ".pg_service.conf")
    files = [user_file, os.path.join(environ.get("PGSYSCONFDIR") or SYSCONFDIR, "pg_service.conf")]
    for path in files:
        found = _read_service(path, name)
        if found is not None:
            return found
    raise ConfigError(f"the PostgreSQL service {name!r} is defined in none of {', '.join(files)}: "
                      "claude-chats cannot tell where it connects (set PGSYSCONFDIR, or put the host in database_url)")


def _home(environ):
    home = environ.get("HOME")
    if home:
        return home
    import pwd

    return pwd.getpwuid(os.getuid()).pw_dir


def _read_service(path, name):
    """Service ``name``'s ``{key: value}`` in the file at ``path`` (libpq's ``parseServiceFile``: ``[name]``
    groups of ``key=value`` lines, ``#`` comments, the first value of a key kept); None when absent."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the PostgreSQL service file {path}: {exc}") from None
    found, values = False, {}
    for line in lines:
        line = line.strip(_SPACE)
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            if found:
                break
            found = line[1:len(name) + 2] == name + "]"
        elif found and line.startswith("ldap"):
            values.setdefault("ldap", line)
        elif found:
            key, _sep, value = line.partition("=")
            values.setdefault(key, value)
    return values if found else None


def check(url, allow_insecure_remote=False, environ=None):
    """Refuse a connection to another machine without TLS; returns the parsed parameters."""
    params = parse(url)
    targets, mode = connection(params, environ)
    others = remote(targets)
    if others and mode not in TLS_MODES and not allow_insecure_remote:
        raise InsecureConnectionError(
            f"refusing to connect to {', '.join(others)} without TLS ({mask(url)}). "
            "Add sslmode=verify-full (with sslrootcert=<CA file>) or sslmode=require to the URL, "
            "e.g. postgresql://user@host:5432/db?sslmode=verify-full; or, if this network is trusted, "
            "set allow_insecure_remote = true in the config file (or CLAUDE_CHATS_ALLOW_INSECURE=1).")
    return params
