"""``chats doctor``: every check a person would otherwise do by hand, each with its fix.

A check is a function of a ``Context`` (the settings, and the journal, model and
Postgres connection opened once and shared) returning one ``Check`` or a list
of them. ``run()`` runs them all; a check that crashes is reported as failed,
never raised.
"""

import json
import os
import shlex
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from . import config, install, paths, scrub
from .localstore import db, ftsparts
from .localstore.db import Immediate
from .localstore.journal import Journal, discover, printable
from .models import canary_vector
from .models import check_canary as compare
from .models.recipe import same_model
from .models.spaces import canary_from_blob, space_of_key
from .pgstore import connect as pg
from .pgstore import migrations
from .pgstore import url as dburl
from .stores import open_embedder
from .sync.lock import holder as sync_holder
from .sync.lock import is_locked

PASS, WARN, FAIL, SKIP = "pass", "warn", "fail", "skip"
VECTOR_MIN = (0, 5, 0)          # HNSW; halfvec (above 2,000 dimensions) needs 0.7
CLEANUP_DEFAULT_DAYS = 30       # Claude Code's cleanupPeriodDays default


@dataclass
class Check:
    name: str
    status: str
    detail: str
    fix: str = None
    ran: list = None        # which checks of this part ran (the journal's and the FTS index's)

    @property
    def failed(self):
        return self.status == FAIL

    def as_dict(self):
        data = asdict(self)
        if data["ran"] is None:
            del data["ran"]
        return data


class Context:
    """What the checks share; each part is opened on first use and its failure remembered."""

    def __init__(self, settings=None, full=False, progress=None):
        self._settings, self._cache = settings, {}
        self.full, self._progress = full, progress

    def timed(self, what, step):
        """``(seconds, step())``, saying on ``progress`` what runs (no progress comes from inside one PRAGMA)."""
        if self._progress:
            self._progress(f"{what} ...")
        started = time.perf_counter()
        value = step()
        seconds = time.perf_counter() - started
        if self._progress:
            self._progress(f"  done in {seconds:.1f} s")
        return seconds, value

    def _get(self, name, opener):
        if name not in self._cache:
            try:
                self._cache[name] = (opener(), None)
            except Exception as exc:  # noqa: BLE001 - reported by the checks that need it
                self._cache[name] = (None, exc)
        value, error = self._cache[name]
        if error is not None:
            raise error
        return value

    @property
    def settings(self):
        return self._settings or self._get("settings", config.load)

    def journal(self):
        return self._get("journal", Journal.open)

    def provider(self):
        return self._get("provider", lambda: open_embedder(self.settings))

    def pg(self):
        return self._get("pg", lambda: pg.connect(self.settings.database_url,
                                                  self.settings.allow_insecure_remote, register=False))

    def close(self):
        for value, _error in self._cache.values():
            if value is not None and hasattr(value, "close"):
                value.close()


# -- Claude Code ------------------------------------------------------------------------


def check_hooks(ctx):
    _text, data = install.read_settings(install.settings_path())
    ours = install.our_hooks(data)
    plugins = [p for p in install.plugin_installs(data) if p["hooks"]]
    if plugins and ours:
        return Check("hooks", WARN, f"the hooks are in settings.json and the {plugins[0]['key']} plugin is enabled "
                     "too: every turn is recorded twice (harmless, slower)", "chats uninstall, or disable the plugin")
    if plugins:
        return _plugin_hooks(plugins[0])
    missing = [e for e in install.HOOK_EVENTS if e not in ours]
    if missing:
        return Check("hooks", FAIL, f"no record-conversation hook for {', '.join(missing)} in "
                     f"{install.settings_path()}", "chats install")
    broken = sorted({c for commands in ours.values() for c in commands if not _executable(c)})
    if broken:
        return Check("hooks", FAIL, f"hook command not executable: {', '.join(broken)}",
                     "chats install (re-points the hooks at the installed record-conversation)")
    return Check("hooks", PASS, f"{', '.join(install.HOOK_EVENTS)} run {sorted(ours.values())[0][0]}")


def _plugin_hooks(plugin):
    """The hooks of an installed plugin: all events there, and record-conversation on PATH to run them."""
    missing = [e for e in install.HOOK_EVENTS if e not in plugin["hooks"]]
    if missing:
        return Check("hooks", WARN, f"the {plugin['key']} plugin ({plugin['path']}) has no hook for "
                     f"{', '.join(missing)}: an older version", f"claude plugin update {plugin['key']}")
    if not _executable(install.HOOK_NAME):
        return Check("hooks", FAIL, f"the {plugin['key']} plugin runs {install.HOOK_NAME} from PATH, and it is not "
                     "on PATH", "uv tool install claude-chats (or pip install claude-chats)")
    return Check("hooks", PASS, f"{', '.join(install.HOOK_EVENTS)} run {install.HOOK_NAME} from the "
                 f"{plugin['key']} plugin")


def _executable(command):
    path = shlex.split(command)[0]
    path = shutil.which(path) if os.sep not in path else os.path.expanduser(path)
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def claude_json_path():
    """Where Claude Code keeps user-scope MCP servers (``~/.claude.json``, or inside CLAUDE_CONFIG_DIR)."""
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        return os.path.join(paths.claude_config_dir(), ".claude.json")
    return os.path.expanduser("~/.claude.json")


def check_mcp(ctx):
    _text, data = install.read_settings(install.settings_path())
    plugins = [p for p in install.plugin_installs(data) if p["mcp"]]
    registered = _user_mcp()
    if plugins and registered.status != PASS:
        if not _executable("chats"):
            return Check("mcp", FAIL, f"the {plugins[0]['key']} plugin runs `chats mcp` from PATH, and chats is not "
                         "on PATH", "uv tool install claude-chats (or pip install claude-chats)")
        return Check("mcp", PASS, f"{install.MCP_NAME}: `chats mcp`, from the {plugins[0]['key']} plugin")
    return registered


def _user_mcp():
    """The user-scope MCP server that `chats install` registers."""
    path = claude_json_path()
    fix = _mcp_fix()
    try:
        with open(path, encoding="utf-8") as fh:
            server = (json.load(fh).get("mcpServers") or {}).get(install.MCP_NAME)
    except FileNotFoundError:
        return Check("mcp", FAIL, f"{path} does not exist (Claude Code never ran, or another config dir)", fix)
    except (OSError, ValueError) as exc:
        return Check("mcp", FAIL, f"cannot read {path}: {exc}", fix)
    if not server:
        return Check("mcp", FAIL, f"MCP server {install.MCP_NAME} is not registered (user scope)", fix)
    command = [server.get("command", ""), *server.get("args", [])]
    if not _executable(command[0] or "/nonexistent"):
        return Check("mcp", FAIL, f"MCP server {install.MCP_NAME} runs {command[0]!r}, which is not executable", fix)
    return Check("mcp", PASS, f"{install.MCP_NAME}: {' '.join(command)}")


def _mcp_fix():
    try:
        chats = install.installed_script("chats")
    except install.InstallError:
        chats = "chats"
    return f"chats install (or: {shlex.join(install.mcp_add_command(chats))})"


def check_cleanup_period(ctx):
    _text, data = install.read_settings(install.settings_path())
    days = data.get("cleanupPeriodDays", CLEANUP_DEFAULT_DAYS)
    oldest = ctx.journal().conn.execute("SELECT min(first_at) FROM sessions WHERE first_at IS NOT NULL").fetchall()[0][0]
    held = _age_days(oldest)
    if held is None:
        return Check("cleanup", PASS, f"Claude Code keeps transcripts {days} days; the journal holds no history yet")
    if isinstance(days, (int, float)) and held > days:
        return Check("cleanup", WARN,
                     f"Claude Code deletes transcripts after {days} days (cleanupPeriodDays) but the journal holds "
                     f"{held:.0f} days: the journal keeps them, it is now the only copy of the older ones",
                     "nothing to do (back up the journal; `chats restore SESSION_ID` writes a deleted session "
                     "back for `claude --resume`); or raise cleanupPeriodDays in settings.json")
    return Check("cleanup", PASS, f"Claude Code keeps transcripts {days} days; the journal holds {held:.0f}")


def _age_days(iso):
    if not iso:
        return None
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - moment).total_seconds() / 86400


# -- local state -------------------------------------------------------------------------


MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"   # Linux; Claude Code's policy file


def check_scrub(ctx):
    """Claude Code's environment scrub and the credentials it would take from the hook and ``chats mcp``."""
    where = _scrub_source()
    lost = scrub.losses(ctx.settings)
    what = "; ".join(f"{thing} ({', '.join(names)})" for thing, names, _ in lost)
    if not lost:
        state = f"on ({where})" if where else "off"
        return Check("scrub", PASS, f"Claude Code's environment scrub is {state}: claude-chats takes nothing from "
                     "the environment that it would remove")
    if not where:
        return Check("scrub", PASS, f"Claude Code's environment scrub is off; with {scrub.FLAG}=1 it would remove "
                     f"{what} from the hook and `chats mcp`")
    return Check("scrub", FAIL, f"{scrub.FLAG} is on ({where}): Claude Code removes {what} from the environment of "
                 "the hook and `chats mcp`, so their searches run full text only (or on the journal alone) and "
                 "the background sync cannot embed", "; ".join(fix for *_, fix in lost))


def _scrub_source():
    """Where the scrub is turned on: this environment or a Claude Code settings file's ``env``; None: off."""
    if scrub.scrub_on():
        return f"{scrub.FLAG} in the environment"
    for path in (install.settings_path(), MANAGED_SETTINGS):
        try:
            _text, data = install.read_settings(path)
        except install.InstallError:
            continue
        env = data.get("env") if isinstance(data.get("env"), dict) else {}
        if scrub.scrub_on({k: str(v) for k, v in env.items()}):
            return f"env of {path}"
    return None


def check_config(ctx):
    path = paths.config_path()
    try:
        config.load()
    except Exception as exc:  # noqa: BLE001 - ConfigError naming the file (or variable), key and value
        return Check("config", FAIL, str(exc),
                     f"edit {path}, or `chats config set KEY VALUE` / `chats config unset KEY` (an environment "
                     "variable named in the message: change or unset it)")
    where = path if os.path.exists(path) else f"{path} (absent: defaults and environment)"
    return Check("config", PASS, f"readable: {where}")


QUICK_CHECK_BYTES = 64 << 20   # quick_check 0.3 s warm, 2.1 s from a cold disk here (bench_doctor.py): by bytes, as a
#   journal's pages are 4 KB (older) or 16 KB (db.PAGE_SIZE)
TABLES = ("sessions", "messages", "transcripts", "spaces", "chunks", "state", "migrations")
FULL_FIX = "chats doctor --full"


def _journal_fix(path):
    return f"check the permissions of {os.path.dirname(path)}; move a damaged journal aside and run `chats import`"


def check_journal(ctx):
    """The file opens and takes the write lock, is a journal of our schema at this version's migration, reads
    through its WAL; ``PRAGMA quick_check`` when small, ``PRAGMA integrity_check`` with ``--full``."""
    path = paths.journal_path()
    fix = _journal_fix(path)
    ran = ["open", "write lock", "schema", "wal"]
    busy = None
    try:
        conn = ctx.journal().conn
        busy = _write_lock_busy(conn, path)
        known, version = len(db.migration_files()), db.user_version(conn)
        if version > known:
            return Check("journal", FAIL, f"{path} is of a newer claude-chats (schema {version}; this one knows "
                         f"{known}): this version must not write to it", "upgrade claude-chats (uv tool upgrade "
                         "claude-chats, or pip install -U claude-chats)", ran=ran[:3])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in TABLES if t not in tables]
        if missing:
            return Check("journal", FAIL, f"{path} is not a claude-chats journal (no table {', '.join(missing)})",
                         fix, ran=ran[:3])
        mode = conn.execute("PRAGMA journal_mode").fetchall()[0][0]
        conn.execute("SELECT max(id) FROM messages").fetchall()          # a read through the WAL
        pages, page_size = (conn.execute(f"PRAGMA {p}").fetchall()[0][0] for p in ("page_count", "page_size"))
        size = f"{pages * page_size / 1e6:,.0f} MB, {pages:,} pages"
        if ctx.full:
            pragma = "integrity_check"
        elif pages * page_size <= QUICK_CHECK_BYTES:
            pragma = "quick_check"
        else:
            pragma = None
        if pragma:
            seconds, result = ctx.timed(f"SQLite {pragma} of {path} ({size})",
                                        lambda: [r[0] for r in conn.execute(f"PRAGMA {pragma}").fetchall()])
            ran.append(pragma)
    except Exception as exc:  # noqa: BLE001
        return Check("journal", FAIL, f"{path}: {exc}", fix, ran=ran)
    if pragma and result != ["ok"]:
        return Check("journal", FAIL, f"{pragma} of {path}: {'; '.join(result[:3])}", fix, ran=ran)
    state = f"{pragma} ok ({seconds:.1f} s)" if pragma else \
        f"quick_check skipped above {QUICK_CHECK_BYTES >> 20} MB"
    if busy:
        return Check("journal", WARN, f"{path} ({size}, schema {version}, {mode}), {state}; its write lock is held "
                     f"by {busy}: writes wait for it (up to {db.BUSY_TIMEOUT_MS // 1000} s each)",
                     "let it finish and run `chats doctor` again; if it never ends, stop that process", ran=ran)
    return Check("journal", PASS, f"{path} ({size}, schema {version}, {mode}) writable, {state}", ran=ran)


LOCK_PROBE_MS = 1000   # how long doctor waits for the journal's write lock before saying who holds it


def _write_lock_busy(conn, path):
    """None when the write lock is free (taken and released at once); else who holds it, as far as the
    sync lock and the kernel's lock table (/proc/locks) say."""
    conn.set_busy_timeout(LOCK_PROBE_MS)
    try:
        with Immediate(conn):
            return None
    except db.apsw.BusyError:
        return lock_holder(path)
    finally:
        conn.set_busy_timeout(db.BUSY_TIMEOUT_MS)


def lock_holder(path):
    """Who holds the write lock of the journal at ``path``: "`chats sync` (pid N)" when the sync lock's
    holder is the one, else "another process (pid N: its command)" from the WAL write lock in
    /proc/locks (Linux), else "another process"."""
    pid = _wal_writer(path)
    if is_locked():
        holder = sync_holder()
        if pid is None or str(pid) == holder:
            return f"a running `chats sync` (pid {holder})"
    if pid is None:
        return "another process (a hook run, `chats import`, `chats sync` or `chats purge`)"
    return f"another process (pid {pid}: {_command(pid)})"


WAL_WRITE_LOCK_BYTE = 120   # SQLite's WAL write lock: a POSIX lock on this byte of the -shm file


def _wal_writer(path):
    try:
        inode = os.stat(path + "-shm").st_ino
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                # "8: POSIX  ADVISORY  WRITE 13624 fe:00:2156154 120 120"
                if len(parts) >= 8 and parts[1] == "POSIX" and parts[3] == "WRITE" and \
                        parts[5].rsplit(":", 1)[-1] == str(inode) and parts[6] == str(WAL_WRITE_LOCK_BYTE):
                    return int(parts[4])
    except (OSError, ValueError):
        return None
    return None


def _command(pid):
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
            argv = fh.read(4096).split(b"\0")
    except OSError:
        return "gone since"
    words = [a.decode("utf-8", "replace") for a in argv[:6] if a]
    words[:2] = [os.path.basename(w) for w in words[:2]]     # the interpreter and the script: their names
    text = "".join(c if c.isprintable() else "?" for c in " ".join(words))
    return text[:120] or "unknown"


def _fts_fix():
    return "rebuild it from the messages: chats doctor --rebuild-fts"


def check_fts(ctx):
    """The full-text index's tables (the head and its sealed parts, ``localstore.ftsparts``) are there with
    their shadow tables and index as many rows as there are messages (FTS5's own row total of each table,
    O(1), and the highest rowid); with ``--full``, FTS5's ``integrity-check`` of each table and every
    message indexed in exactly one of them."""
    conn = ctx.journal().conn
    missing = ftsparts.shadows_missing(conn)
    if missing:
        return Check("fts", FAIL, f"the full-text index is missing ({', '.join(missing)}): full-text search and "
                     "every write to the journal fail", _fts_fix(), ran=["present"])
    ran = ["present", "row count"]
    names = ftsparts.tables(conn)
    messages = conn.execute("SELECT count(*), max(id) FROM messages").fetchall()[0]
    highest = max((conn.execute(f"SELECT max(id) FROM {n}_docsize").fetchall()[0][0] or 0 for n in names),
                  default=0) or None
    indexed = (sum(ftsparts.rows(conn, n) for n in names), highest)
    where = f"{len(names)} tables" if len(names) > 1 else "one table"
    if tuple(indexed) != tuple(messages):
        return Check("fts", FAIL, f"the full-text index ({where}) holds {indexed[0]:,} rows (highest {indexed[1]}), "
                     f"the messages {messages[0]:,} (highest {messages[1]}): out of step", _fts_fix(), ran=ran)
    if not ctx.full:
        return Check("fts", PASS, f"full-text index present ({where}), {messages[0]:,} rows as the messages", ran=ran)
    ran = ran + ["integrity-check"]
    started = time.monotonic()
    try:
        # the head alone indexes every message: checked against them (rank 1), unless a text is packed
        # (FTS5 reads the column as stored, and a packed text is a BLOB: ``texts``)
        packed = conn.execute("SELECT 1 FROM messages WHERE typeof(content) = 'blob' LIMIT 1").fetchall()
        check = 1 if len(names) == 1 and not packed else 0
        for name in names:
            ctx.timed(f"FTS5 integrity-check of {name} ({ftsparts.rows(conn, name):,} rows)", lambda: conn.execute(
                f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', {check})"))
        unindexed, twice, stray = ctx.timed(f"every message in one of the {len(names)} tables",
                                            lambda: ftsparts.coverage(conn))[1]
    except Exception as exc:  # noqa: BLE001 - apsw.CorruptError when the index and the table disagree
        return Check("fts", FAIL, f"full-text index does not match the messages: {exc}", _fts_fix(), ran=ran)
    if unindexed or twice or stray:
        return Check("fts", FAIL, f"full-text index does not match the messages: {unindexed:,} messages in no "
                     f"table, {twice:,} in two or more, {stray:,} rows naming no message", _fts_fix(), ran=ran)
    return Check("fts", PASS, f"full-text index consistent with the messages ({where}, "
                 f"{time.monotonic() - started:.1f} s)", ran=ran)


def rebuild_fts():
    """``chats doctor --rebuild-fts``: the journal's full-text index made again from its messages; seconds."""
    started = time.monotonic()
    with Journal.open() as journal:
        ftsparts.rebuild(journal.conn)
    return time.monotonic() - started


def skipped_full(results):
    """The one line saying the full checks did not run, or None when they did (or no journal check ran)."""
    journal = next((r for r in results if r.name == "journal" and r.ran), None)
    if journal is None or "integrity_check" in journal.ran:
        return None
    return f"full checks skipped (SQLite integrity_check and FTS5 integrity-check read the whole journal: " \
           f"seconds to minutes at a year of history): run `{FULL_FIX}`"


def check_transcripts(ctx):
    root = paths.claude_projects_dir()
    if not os.path.isdir(root):
        return Check("transcripts", PASS, f"no transcripts folder at {root}")
    known = {r[0] for r in ctx.journal().conn.execute("SELECT path FROM transcripts")}
    missing = [f for f in discover([root]) if f not in known]
    if missing:
        return Check("transcripts", FAIL, f"{len(missing)} transcript(s) under {root} never imported "
                     f"(e.g. {printable(missing[0])})", "chats import")
    return Check("transcripts", PASS, f"every transcript under {root} is in the journal")


# -- the model ---------------------------------------------------------------------------


def check_model(ctx):
    settings = ctx.settings
    started = time.perf_counter()
    try:
        provider = ctx.provider()
        canary_vector(provider)
    except Exception as exc:  # noqa: BLE001 - ProviderUnavailable / ProviderError carry the fix
        fix = "chats models setup" if "chats models setup" in str(exc) else \
            "see the message; `chats config show` for the provider and model in use"
        return Check("model", FAIL, f"{settings.provider} {settings.model or '(default model)'}: {exc}", fix)
    ms = (time.perf_counter() - started) * 1000
    return Check("model", PASS, f"{provider.space.describe()} loads and embeds ({ms:.0f} ms)")


def check_canary(ctx):
    """Every stored space of the configured model reproduces its canary; vectors exist for the model."""
    try:
        provider = ctx.provider()
    except Exception:  # noqa: BLE001 - check_model reports why
        return Check("canary", SKIP, "no model to compare with (see the model check)")
    stored = [("local", key, blob) for key, blob in local_spaces(ctx)] + \
             [("postgres", key, vec) for key, vec in postgres_spaces(ctx)]
    return canary_verdict(provider, stored)


def canary_verdict(provider, stored):
    """``stored``: ``[(store, key, canary)]``. Each store holding vectors must hold the configured model's,
    and they must reproduce its canary."""
    key = provider.space.key
    if not stored:
        return Check("canary", PASS, "no stored vectors yet")
    for where in sorted({w for w, _k, _v in stored}):
        mine = [vec for w, k, vec in stored if w == where and k == key]
        if not mine and rebuilding(where, stored, provider.space):
            return Check("canary", WARN, f"{where}: the vectors of {key} are not built yet (the stored ones are "
                         "of the same model with another embedded text)", "chats sync")
        if not mine:
            others = sorted({k for w, k, _v in stored if w == where})
            return Check("canary", FAIL, f"{where}: stored vectors are of {', '.join(others)}, none of the configured "
                         f"{key}: semantic search there has nothing to compare with",
                         "configure the model the vectors were made with (chats config set provider/model), "
                         "or re-embed the history with the configured one")
        for vec in mine:
            try:
                compare(provider.space, canary_from_blob(vec) if isinstance(vec, bytes) else vec, provider)
            except Exception as exc:  # noqa: BLE001 - SpaceMismatchError names both models
                return Check("canary", FAIL, f"{where}: {exc}", "configure the model the vectors were made with")
    stores = ", ".join(sorted({w for w, _k, _v in stored}))
    return Check("canary", PASS, f"the configured model reproduces the canary of {key} ({stores})")


def rebuilding(where, stored, configured):
    """Whether ``where`` holds vectors of the configured model with another embedded text (``embed_text``)."""
    return any(w == where and same_model(space_of_key(k), configured) for w, k, _v in stored)


def local_spaces(ctx):
    return [(k, c) for k, c in ctx.journal().conn.execute("SELECT key, canary FROM spaces").fetchall()]


def postgres_spaces(ctx):
    if not ctx.settings.database_url:
        return []
    try:
        conn = ctx.pg()
    except Exception:  # noqa: BLE001 - the postgres check reports it
        return []
    if not conn.execute("SELECT to_regclass('spaces') IS NOT NULL").fetchone()[0]:
        return []
    return [(k, c) for k, c in conn.execute("SELECT key, canary::real[] FROM spaces").fetchall()]


# -- Postgres ----------------------------------------------------------------------------


def check_postgres(ctx):
    url = ctx.settings.database_url
    if not url:
        return [Check("postgres", SKIP, "not configured: the journal alone (search works offline)")]
    checks = [_tls(url, ctx.settings.allow_insecure_remote)]
    started = time.perf_counter()
    try:
        conn = ctx.pg()
    except Exception as exc:  # noqa: BLE001
        return checks + [Check("postgres", FAIL, str(exc), "start it (docker compose up -d) or fix database_url")]
    ms = (time.perf_counter() - started) * 1000
    version = conn.execute("SHOW server_version").fetchone()[0]
    checks.append(Check("postgres", PASS, f"{dburl.mask(url)} reachable (PostgreSQL {version}, {ms:.0f} ms)"))
    return checks + [_extension(conn), _migrations(conn)]


def _tls(url, allowed):
    try:
        targets, mode = dburl.connection(dburl.parse(url))
    except Exception as exc:  # noqa: BLE001
        return Check("tls", FAIL, str(exc), "fix database_url")
    remote = dburl.remote(targets)
    if not remote:
        return Check("tls", PASS, "local host: TLS not needed")
    if mode in dburl.TLS_MODES:
        level = PASS if mode == "verify-full" else WARN
        return Check("tls", level, f"remote host, sslmode={mode}",
                     None if level == PASS else "use sslmode=verify-full (and sslrootcert) to check the server")
    return Check("tls", FAIL if not allowed else WARN, f"remote host {', '.join(remote)} without TLS (sslmode={mode})",
                 "add sslmode=verify-full to database_url")


def _extension(conn):
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    if row is None:
        return Check("pgvector", FAIL, "the vector extension is not installed",
                     "CREATE EXTENSION vector (as a superuser; pgvector >= 0.5)")
    version = tuple(int(p) for p in row[0].split(".")[:3] if p.isdigit())
    if version < VECTOR_MIN:
        return Check("pgvector", FAIL, f"pgvector {row[0]} is older than 0.5 (no HNSW)",
                     "ALTER EXTENSION vector UPDATE (after upgrading pgvector)")
    return Check("pgvector", PASS, f"pgvector {row[0]}")


def _migrations(conn):
    pending = [n for n, _sql in migrations.available() if n not in migrations.applied(conn)]
    if pending:
        return Check("migrations", FAIL, f"{len(pending)} migration(s) not applied: {', '.join(pending)}",
                     migrations.blocker(conn) or "chats sync (applies them)")
    return Check("migrations", PASS, "schema current")


# -- running -------------------------------------------------------------------------------

CHECKS = (check_hooks, check_mcp, check_config, check_scrub, check_journal, check_fts, check_transcripts,
          check_cleanup_period, check_model, check_canary, check_postgres)


def run(settings=None, checks=CHECKS, full=False, progress=None):
    """Run ``checks``; returns the list of ``Check`` results. ``full``: SQLite's and FTS5's integrity checks of
    the whole journal too; ``progress``: called with a line as each of those starts and ends."""
    ctx = Context(settings, full, progress)
    results = []
    try:
        for check in checks:
            results.extend(_safe(check, ctx))
    finally:
        ctx.close()
    return results


def _safe(check, ctx):
    name = check.__name__.removeprefix("check_")
    try:
        result = check(ctx)
    except Exception as exc:  # noqa: BLE001 - a crashing check is a failed check
        return [Check(name, FAIL, f"{type(exc).__name__}: {exc}")]
    return result if isinstance(result, list) else [result]
