"""``chats status``: what is stored, what ran last, and whether the parts are reachable.

``collect()`` returns a plain dict (``chats status --json`` prints it as is);
each section is gathered by its own function and never raises: a part that
cannot be read says so in its section (``"error"``).
"""

import json
import os
import time

from . import config, install, paths
from .errors import ConfigError
from .localstore import counts, db, erase, outbox
from .localstore.journal import Journal
from .sync.lock import is_locked
from .times import spoken


def collect(settings=None, check_postgres=True, check_provider=True):
    """Every section of the status (see the module docstring)."""
    settings = settings or config.load()
    report = {
        "journal": journal_section(),
        "hook": hook_section(),
        "sync": sync_section(),
        "spaces": spaces_section(),
        "postgres": postgres_section(settings) if check_postgres else {"checked": False,
                                                                        "configured": bool(settings.database_url)},
        "provider": provider_section(settings) if check_provider else {"checked": False, "provider": settings.provider,
                                                                        "model": settings.model},
        "claude_code": claude_code_section(),
        "config_file": paths.config_path(),
    }
    report["sync"]["backlog"] = backlog_section(settings, report)
    return report


# -- the journal -------------------------------------------------------------------


def open_journal_readonly():
    """The journal read-only, or None when it does not exist yet."""
    path = paths.journal_path()
    return Journal.open(path, readonly=True) if os.path.exists(path) else None


def _with_journal(read, empty):
    try:
        journal = open_journal_readonly()
    except Exception as exc:  # noqa: BLE001 - status reports, never fails
        return {**empty, "error": str(exc)}
    if journal is None:
        return empty
    try:
        return read(journal)
    except Exception as exc:  # noqa: BLE001
        return {**empty, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        journal.close()


def file_bytes(path):
    """Size of a SQLite file with its WAL and shared-memory files."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal", path + "-shm") if os.path.exists(p))


def journal_section():
    path = paths.journal_path()
    empty = {"path": path, "exists": os.path.exists(path), "bytes": file_bytes(path),
             "sessions": 0, "messages": 0, "pending": 0, "synced": 0}
    return _with_journal(lambda j: {**empty, **j.counts(), "skipped_lines": j.skipped_lines(),
                                    "tombstones": erase.remote_summary(j.conn, _days_ago(TOMBSTONE_DAYS)),
                                    "kept_lines_to_redact": outbox.keyed_redaction(j.conn) == "pending"}, empty)


TOMBSTONE_DAYS = 7   # what other machines' tombstones removed here lately (a scheduled sync prints to no one)


def _days_ago(days):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - days * 86400))


def _state(journal, key):
    value = journal.state(key)
    try:
        return json.loads(value) if value else None
    except ValueError:
        return {"raw": value}


def hook_section():
    log = os.path.join(paths.log_dir(), "hook.log")
    section = _with_journal(lambda j: {"last_run": _state(j, "last_hook")}, {"last_run": None})
    section["log"] = log
    section["last_error"] = last_log_line(log)
    return section


def last_log_line(path):
    """The last line of a JSON-lines log as a dict (None when there is none)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 8192))
            tail = fh.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return None
    if not tail:
        return None
    try:
        return json.loads(tail[-1])
    except ValueError:
        return {"error": tail[-1][:500]}


def sync_section():
    section = _with_journal(lambda j: {"last": _state(j, "last_sync"), "progress": _state(j, "sync_progress")},
                            {"last": None, "progress": None})
    section["running"] = is_locked()
    if not section["running"]:
        section["progress"] = None   # a finished (or killed) run's last progress is no news
    return section


def backlog_section(settings, report):
    """What the configured embedding space still lacks: messages and characters to embed (after the
    ``embed_text`` recipe's per-kind limits), and the time that takes at the last sync's rate. The
    space is the configured model's (``provider`` section), else the last sync's (``--offline``)."""
    from .models.recipe import recipe_for

    last = report["sync"].get("last") or {}
    key = report["provider"].get("key") or last.get("space")
    if not key:
        return None
    try:
        recipe = recipe_for(settings.embed_text)
    except ConfigError:
        recipe = None
    limits = recipe.limits if recipe is not None else ()

    def read(journal):
        messages, chars, exact = counts.backlog(journal.conn, db.find_space(journal.conn, key), limits)
        out = {"space": key, "messages": messages, "chars": chars, "chars_exact": exact, "estimate_seconds": None}
        rate = (last.get("embedded_chars") or 0) / float(last.get("seconds") or 0) if last.get("seconds") else 0
        if rate and last.get("space") == key:
            out["estimate_seconds"] = round(chars / rate, 1)
        return out
    return _with_journal(read, {})


def spaces_section():
    """Embedding spaces of the journal with their vector (chunk) counts."""
    def read(journal):
        rows = journal.conn.execute(
            "SELECT s.id, s.key, s.provider, s.model, s.dimensions FROM spaces s ORDER BY s.id").fetchall()
        names = ("id", "key", "provider", "model", "dimensions")
        chunks = counts.space_vectors(journal.conn)
        return {"local": [{**dict(zip(names, row)), "vectors": chunks.get(row[0], 0)} for row in rows]}
    return _with_journal(read, {"local": []})


# -- Postgres, provider, Claude Code -------------------------------------------------


def postgres_section(settings):
    """Reachable or not (with latency), and the canonical store's counts."""
    from .pgstore import connect as pg
    from .pgstore import url as dburl

    url = settings.database_url
    if not url:
        return {"configured": False}

    section = {"configured": True, "url": dburl.mask(url), "reachable": False}
    try:
        started = time.perf_counter()
        conn = pg.connect(url, settings.allow_insecure_remote, register=False)
    except Exception as exc:  # noqa: BLE001 - PostgresUnavailable, InsecureConnectionError, ConfigError...
        return {**section, "error": str(exc)}
    try:
        section["connect_ms"] = round((time.perf_counter() - started) * 1000, 1)
        started = time.perf_counter()
        conn.execute("SELECT 1").fetchone()
        section.update(reachable=True, latency_ms=round((time.perf_counter() - started) * 1000, 2))
        section.update(postgres_counts(conn, url))
    finally:
        conn.close()
    return section


def postgres_counts(conn, url):
    from .pgstore import migrations
    from .pgstore.store import PgStore

    try:
        if not conn.execute("SELECT to_regclass('conversations') IS NOT NULL").fetchone()[0]:
            return {"counts": None, "note": migrations.blocker(conn)
                    or "no claude-chats tables yet (the first `chats sync` creates them)"}
        return {"counts": PgStore(conn, url).counts()}
    except Exception as exc:  # noqa: BLE001
        return {"counts": None, "error": f"{type(exc).__name__}: {exc}"}


def provider_section(settings):
    """The configured provider and whether its model loads (timed)."""
    from .models import embedder

    section = {"provider": settings.provider, "model": settings.model, "source": settings.source("provider")}
    started = time.perf_counter()
    try:
        with embedder(settings) as provider:
            section.update(available=True, space=provider.space.describe(), key=provider.space.key)
    except Exception as exc:  # noqa: BLE001 - ProviderUnavailable, ConfigError, a model that fails to load
        section.update(available=False, error=str(exc) or type(exc).__name__)
    section["load_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return section


def claude_code_section():
    path = install.settings_path()
    try:
        _text, data = install.read_settings(path)
    except Exception as exc:  # noqa: BLE001
        return {"settings": path, "error": str(exc)}
    hooks = install.our_hooks(data)
    plugins = install.plugin_installs(data)
    registered = set(hooks).union(*(p["hooks"] for p in plugins))
    return {"settings": path, "hooks": sorted(hooks), "plugins": plugins,
            "hooks_missing": [e for e in install.HOOK_EVENTS if e not in registered]}


# -- for people ----------------------------------------------------------------------


def sections(report):
    """[(section name, [its lines])]: what ``render`` prints, for a page (``ui``) to lay out its own way."""
    return [(name, section(report)) for name, section in (
        ("journal", _journal_lines), ("hook", _hook_lines), ("sync", _sync_lines), ("spaces", _spaces_lines),
        ("postgres", _postgres_lines), ("provider", _provider_lines), ("claude code", _claude_lines))]


def render(report):
    """The status as aligned lines for a terminal."""
    return [f"{name if index == 0 else '':<12} {line}" for name, lines in sections(report)
            for index, line in enumerate(lines)]


def _size(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _journal_lines(r):
    j = r["journal"]
    if not j["exists"]:
        return [f"{j['path']} (not created yet: the first hook run or `chats import` creates it)"]
    lines = [f"{j['path']} ({_size(j['bytes'])})",
             f"{j['sessions']:,} sessions, {j['messages']:,} messages: " + (
                 "journal only (no Postgres to push them to)" if r["postgres"].get("configured") is False
                 else f"{j['synced']:,} synced, {j['pending']:,} pending")]
    skipped = j.get("skipped_lines") or {}
    if skipped:
        top = ", ".join(f"{reason} {count:,}" for reason, count in list(skipped.items())[:6])
        lines.append(f"transcript lines not stored: {sum(skipped.values()):,} ({top}"
                     + (", ..." if len(skipped) > 6 else "") + ")")
    lines += _tombstone_lines(j.get("tombstones") or {})
    if j.get("kept_lines_to_redact"):
        lines.append("transcript lines this machine pushed to Postgres with an earlier version may hold values "
                     "named as secrets by their JSON keys: `chats redact --postgres` rewrites them")
    return lines + ([f"error: {j['error']}"] if j.get("error") else [])


def _tombstone_lines(t):
    lines = []
    if t.get("removed_sessions"):
        lines.append(f"tombstones from other machines removed {t['removed_sessions']} sessions here in the last "
                     f"{TOMBSTONE_DAYS} days")
    if t.get("waiting"):
        lines.append(f"{t['waiting']} tombstones from other machines wait for confirmation (nothing removed): "
                     "`chats purge --apply-remote --dry-run` lists them")
    if t.get("refused"):
        lines.append(f"{t['refused']} tombstones from other machines refused (dated ahead, or too wide): "
                     "never applied")
    return lines


def _hook_lines(r):
    h = r["hook"]
    run = h.get("last_run")
    lines = [f"last run {run.get('at')} ({run.get('event')}, {run.get('messages')} new messages)" if run
             else "never ran (run `chats install`, then use Claude Code)"]
    error = h.get("last_error")
    lines.append(f"last error {error.get('at')}: {error.get('error')}" if error else "no errors logged")
    return lines


def _sync_lines(r):
    s = r["sync"]
    last = s.get("last")
    running = " (a sync is running now)" if s.get("running") and not s.get("progress") else ""
    lines = _progress_lines(s.get("progress"))
    if not last:
        lines.append("never ran (`chats sync`)" + running)
    elif last.get("ok"):
        lines.append(f"last {last.get('at')}: ok, {last.get('pushed', 0):,} messages pushed, "
                     f"{last.get('embedded', 0):,} embedded in {float(last.get('seconds') or 0):.1f} s{running}"
                     + _backfill_text(last))
    else:
        lines += [f"last {last.get('at')}: failed{running}"] + [f"  {e}" for e in last.get("errors", [])[:3]]
    return lines + _backlog_lines(s.get("backlog"))


def _progress_lines(p):
    if not p:
        return []
    done = f"{p['chars_done'] / p['chars_total']:.0%} of the text, " if p.get("chars_total") else ""
    eta = f", about {spoken(p['eta_seconds'])} left" if p.get("eta_seconds") is not None else ""
    step = f"; now: {p['step']}" if isinstance(p.get("step"), str) and p["step"] else ""
    return [f"running since {p.get('started_at')} (pid {p.get('pid')}): {p['messages_done']:,} of "
            f"{p['messages_total']:,} messages, {done}{spoken(p.get('seconds') or 0)} so far{eta}{step}"]


def _backlog_lines(b):
    if not b:
        return []
    if b.get("error"):
        return [f"backlog: {b['error']}"]
    if not b["messages"]:
        return ["backlog: none (every message the configured space embeds has its vectors)"]
    estimate = f", about {spoken(b['estimate_seconds'])} at the last sync's rate" \
        if b.get("estimate_seconds") is not None else ""
    about = "" if b.get("chars_exact", True) else "about "
    return [f"backlog: {b['messages']:,} messages to embed ({about}{b['chars']:,} characters){estimate}"]


def _backfill_text(last):
    if not last.get("backfill_before"):
        return ""
    return (f"; {last.get('backfilled', 0):,} of {last['backfill_before']:,} synced messages embedded "
            "into the configured space")


def _spaces_lines(r):
    configured = r["provider"].get("key")

    def mark(key):   # spaces of another model or embedded text stay until removed; search skips them
        return "" if not configured else " (configured)" if key == configured else " (not searched)"
    spaces = r["spaces"].get("local") or []
    lines = [f"{s['key']}: {s['vectors']:,} local vectors{mark(s['key'])}" for s in spaces] or \
        ["no vectors yet (local)"]
    counts = (r["postgres"].get("counts") or {}).get("vectors") or {}
    return lines + [f"{key}: {n:,} vectors in Postgres{mark(key)}" for key, n in counts.items()]


def _postgres_lines(r):
    p = r["postgres"]
    if not p.get("checked", True):
        return ["not checked"]
    if not p.get("configured"):
        return ["not configured (journal only; `chats config set database_url URL`)"]
    if not p.get("reachable"):
        return [f"{p['url']} unreachable: {p.get('error')}"]
    line = f"{p['url']} reachable ({p['latency_ms']} ms round trip, connect {p['connect_ms']} ms)"
    counts = p.get("counts")
    detail = (f"{counts['conversations']:,} conversations, {counts['messages']:,} messages" if counts
              else p.get("note") or p.get("error", ""))
    return [line, detail]


def _provider_lines(r):
    p = r["provider"]
    if not p.get("checked", True):
        return [f"{p.get('provider')} {p.get('model') or '(default model)'}: configured (not loaded to check it)"
                if p.get("provider") else "not checked"]
    if p.get("available"):
        return [f"{p['space']}: available (loaded in {p['load_ms']:.0f} ms)"]
    return [f"{p['provider']} {p.get('model') or '(default model)'}: unavailable: {p.get('error')}"]


def _claude_lines(r):
    c = r["claude_code"]
    if c.get("error"):
        return [f"error: {c['error']}"]
    plugins = c.get("plugins") or []
    if c["hooks_missing"]:
        where = f"the {plugins[0]['key']} plugin" if plugins else c["settings"]
        fix = f"claude plugin update {plugins[0]['key']}" if plugins else "chats install"
        return [f"hooks missing for {', '.join(c['hooks_missing'])} in {where} (run `{fix}`)"]
    lines = [f"hooks registered by the {p['key']} plugin ({p['path']})" for p in plugins if p["hooks"]]
    if c["hooks"]:
        lines.append(f"hooks registered in {c['settings']}")
    if len(lines) > 1:
        lines.append("both the plugin and `chats install` record every turn: keep one (chats uninstall, or "
                     "claude plugin disable)")
    return lines
