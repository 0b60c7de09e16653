"""``record-conversation``: the Claude Code hook (SessionStart, UserPromptSubmit, Stop, SubagentStop,
PreCompact, SessionEnd).

Reads the hook payload on stdin and stores the transcript lines written since
the last run into the local journal. The contract (DESIGN.md): exit 0 always;
nothing on stdout but valid hook JSON where Claude Code reads it (SessionStart's
``additionalContext``: where the session's full record is, after a compaction or
on a resume); errors logged with the session id; tens of milliseconds. So the
import path is stdlib + apsw + the parser and writer, nothing else: no numpy, no
providers, no MCP, no Postgres driver (tests/test_layers.py guards this).
"""

import gc
import os
import sys
import time

from . import jsonl, paths

LOG_NAME = "hook.log"
MAX_LOG_BYTES = 1 << 20
WAL_TRIM_BYTES = 4 << 20   # about SQLite's autocheckpoint threshold (1,000 pages)


def main():
    """Entry point of ``record-conversation``. Never returns: exits 0 at once.

    ``os._exit`` skips interpreter teardown and the journal's checkpoint on
    close (the transaction is already committed to the WAL; later writers
    checkpoint), which is a good part of the hook's budget.

    The cyclic garbage collector is off for the process's life: what the hook makes is freed by reference
    counting as it goes, and a collection set off by the imports below (apsw, the writer, the parser) walks
    every object of every module loaded, 0.6-0.7 ms a run (``python -X importtime``, 25 runs each).
    """
    gc.disable()
    payload, conn = {}, None
    try:
        payload = _read_payload()
        conn = open_journal(payload)
        if conn is not None:
            answer = handle(payload, conn)
            if answer:
                os.write(1, answer.encode("utf-8"))   # the one output: hook JSON, written whole, unbuffered
            trim_wal(conn)
    except BaseException as exc:  # noqa: BLE001 - the hook must never fail Claude Code
        log_error(payload, exc)
    os._exit(0)


def handle(payload, conn):
    """Record the turn ``payload`` names and say what the hook answers (hook JSON text, or None)."""
    exclude, answer = project_filter(conn), None
    if not kept_out(payload, exclude):   # an excluded project: nothing read, nothing stored
        run(payload, conn, exclude)
        answer = respond(payload, conn)
    remember_verdicts(conn, exclude)
    return answer


def open_journal(payload):
    """The journal, migrated; None when a heavy migration is pending on a journal big enough to feel it
    (``db.MigrationDeferred``): the turn is then handed to a process in the background (``hand_over``),
    and this turn answers nothing."""
    from .localstore import db
    try:
        return db.connect(paths.journal_path(), defer_heavy=True)
    except db.MigrationDeferred:
        hand_over(payload)
        return None


# -- a turn handed over while a heavy migration is pending ------------------------------------------
#
# A heavy migration writes a table again (``db.HEAVY``: the kept lines keyed by session number, 7 s
# at a million messages). The hook does not wait for it, which would stall Claude Code: it starts
# ``python -m claude_chats.hook --later`` in a session of its own with the payload on stdin and exits 0.
# That process applies the migration, or waits for the one applying it (``db.heavy_lock``), then records
# the turn as the hook would have (``handle``): nothing of the turn is lost, it is recorded seconds later.
# Its answer (SessionStart's context) goes nowhere: that turn has passed. Its errors go to the hook's log.


def hand_over(payload):
    """Start the process that migrates and then records ``payload``, detached as the background sync is
    (``background.spawn``); not waited for, its output nowhere."""
    from .sync import background

    background.spawn([sys.executable, "-m", "claude_chats.hook", "--later"], jsonl.dumps(payload).encode("utf-8"))


def later():
    """``python -m claude_chats.hook --later``: the turn on stdin recorded once the journal is migrated."""
    from .localstore import db

    payload = {}
    try:
        payload = _read_payload()
        conn = db.connect(paths.journal_path())   # migrates, or waits for the process that is (heavy_lock)
        try:
            handle(payload, conn)
        finally:
            conn.close()
    except BaseException as exc:  # noqa: BLE001 - logged where the hook's errors are
        log_error(payload, exc)
        return 1
    return 0


def _read_payload():
    raw = sys.stdin.buffer.read() if sys.stdin is not None else b""
    if not raw.strip():
        raise ValueError("empty hook payload on stdin")
    payload = jsonl.loads(raw)
    if not isinstance(payload, dict):
        raise ValueError(f"hook payload is a JSON {type(payload).__name__}, not an object")
    return payload


def _path(payload, key):
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\x00" in value:
        raise ValueError(f"{key} is not a usable path: {str(value)[:200]!r}")
    return os.path.expanduser(value)


RECALL_HINTS_DEFAULT = True   # config.py's default for recall_hints (a test checks they agree)
_CONFIG = []                  # the config file's bytes, read once per run (b"" when there is none)


def _config_names(key):
    """Whether the config file mentions ``key`` at all (a peek: it is parsed only then)."""
    if not _CONFIG:
        try:
            with open(paths.config_path(), "rb") as fh:
                _CONFIG.append(fh.read())
        except (FileNotFoundError, NotADirectoryError):
            _CONFIG.append(b"")
    return key.encode() in _CONFIG[0]


def _switch(key, default):
    """A yes/no setting read cheaply: the configuration is parsed only when the environment
    (``CLAUDE_CHATS_<KEY>``) or the config file names it."""
    env = os.environ.get("CLAUDE_CHATS_" + key.upper(), "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    if not env and not _config_names(key):   # else the config module says what is wrong with it
        return default
    from . import config

    return bool(getattr(config.load(), key))


def recall_hints_on():
    """The ``recall_hints`` setting, read cheaply (``_switch``)."""
    return _switch("recall_hints", RECALL_HINTS_DEFAULT)


REDACT_DEFAULT = True   # config.py's default for redact (a test checks they agree)


def context_redacted():
    """The ``redact`` setting, read cheaply (``_switch``): what the hook tells the model of recorded
    sessions is redacted as the MCP results are (it goes to the model's API too)."""
    return _switch("redact", REDACT_DEFAULT)


STARTUP_SESSIONS_DEFAULT = 3   # config.py's default for startup_sessions (a test checks they agree)


def startup_sessions():
    """The ``startup_sessions`` setting, read cheaply like ``recall_hints_on``."""
    env = os.environ.get("CLAUDE_CHATS_STARTUP_SESSIONS", "").strip()
    if env.isdigit() and int(env) <= 10:
        return int(env)
    if not env and not _config_names("startup_sessions"):   # else the config module says what is wrong
        return STARTUP_SESSIONS_DEFAULT
    from . import config

    return config.load().startup_sessions


def journal_redactor():
    """``config.journal_redactor()``, read only on a turn that stores something, and cheaply: the
    environment and a peek at the small config file say whether the setting can be on at all, and
    only then is the config module imported and the file parsed. A malformed value is a
    ``ConfigError`` (nothing is stored until it is fixed, rather than stored unredacted)."""
    if not os.environ.get("CLAUDE_CHATS_JOURNAL_REDACT", "").strip() and not _config_names("journal_redact"):
        return None
    from . import config

    return config.journal_redactor()


EXCLUDE_ENV = "CLAUDE_CHATS_EXCLUDE_PROJECTS"
EXCLUDE_CACHE = "exclude_projects"   # journal state: the config file's patterns, keyed by the file's stat


def project_filter(conn):
    """A ``capture.ProjectFilter`` of the ``exclude_projects`` setting, or None, cheaply: from the
    environment; else, when the config file names the setting, from the journal's copy of what the
    file said the last time it looked as it looks now (parsing TOML costs the hook about 20 ms),
    reading the file again only when it changed. The folders already judged come from the journal
    too (see ``remember_verdicts``), for the environment's patterns as for the file's.
    A malformed value is a ``ConfigError``: nothing is stored until it is fixed, rather than stored
    when it should not be."""
    env = os.environ.get(EXCLUDE_ENV, "").strip()
    if not env and not _config_names("exclude_projects"):
        return None
    from .capture import ProjectFilter

    if env:
        from . import config

        patterns = list(config.from_environment("exclude_projects"))
        stamp = ["env", env]   # the folders' verdicts are kept as for the file's
    else:
        st = os.stat(paths.config_path())
        stamp = [st.st_mtime_ns, st.st_size, st.st_ino]
    from .localstore import db

    cached = db.get_state(conn, EXCLUDE_CACHE)
    cached = jsonl.loads(cached) if cached else None
    if cached and cached.get("stat") == stamp:
        patterns, known = cached["patterns"], cached.get("verdicts") or {}
    else:
        if not env:
            from . import config

            patterns = list(config.load(validate=False).exclude_projects)
        known = {}
        cached = {"stat": stamp, "patterns": patterns}
        db.set_state(conn, EXCLUDE_CACHE, jsonl.dumps(cached))
    return ProjectFilter(patterns, known) or None


def remember_verdicts(conn, exclude):
    """Keep the paths ``exclude`` judged for the first time beside the patterns, so resolving a folder
    (a ``stat`` per folder of it) and a glob (``fnmatch``, and ``re``'s import, about 3 ms) cost once
    per project folder, not on every turn."""
    if exclude is None or not exclude.learned():
        return
    verdicts = exclude.verdicts()
    if len(verdicts) > MAX_VERDICTS:
        return
    from .localstore import db

    cached = jsonl.loads(db.get_state(conn, EXCLUDE_CACHE))   # written by project_filter in this run
    db.set_state(conn, EXCLUDE_CACHE, jsonl.dumps(dict(cached, verdicts=verdicts)))


MAX_VERDICTS = 500   # project folders remembered; past it, a new folder costs its stats (and fnmatch) each turn


def kept_out(payload, exclude):
    """Whether the payload's session is in an excluded project (its ``cwd``): nothing is read then."""
    cwd = _text(payload, "cwd")
    return bool(exclude and cwd and exclude(os.path.abspath(os.path.expanduser(cwd))))


MACHINE_MADE_ENV = "CLAUDE_CHATS_MACHINE_MADE"


def machine_made_run():
    """Whether this hook runs under a script that drives Claude Code (``CLAUDE_CHATS_MACHINE_MADE=1``:
    what a script running the interactive UI, or claude-chats' own real-CLI tests, set): every
    session it records is machine-made, whatever its ``entrypoint`` says."""
    return os.environ.get(MACHINE_MADE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def run(payload, conn, exclude=None):
    """Store what is new in the payload's transcript (and its subagents') into ``conn``; the lines
    of projects ``exclude`` names (a ``capture.ProjectFilter``) are kept out."""
    from .localstore import db, writer
    from .times import now_iso

    transcript_path = _path(payload, "transcript_path")
    agent_path = _path(payload, "agent_transcript_path")
    if transcript_path is None and agent_path is None:
        raise ValueError("hook payload has no transcript_path")
    def record_run(conn, stats):
        db.set_state(conn, "last_hook", jsonl.dumps({
            "at": now_iso(), "event": str(payload.get("hook_event_name", ""))[:64],
            "session_id": str(payload.get("session_id", ""))[:200], "messages": stats.messages}))

    # The run is recorded inside each write transaction (the last one's record
    # stands), not in one more transaction of its own: one commit fewer per turn.
    stats = writer.IngestStats(resolve_redact=journal_redactor, before_commit=record_run,
                               machine_made=machine_made_run(), exclude=exclude)
    if transcript_path:
        # A transcript not written yet (a session's first prompt; `claude mcp list`, whose
        # SessionEnd names a file never created) is nothing to record, not an error.
        writer.ingest_session(conn, transcript_path, stats)
        if payload.get("hook_event_name") == "SessionStart" and payload.get("source") == "fork":
            # `/fork` starts a background session: no other hook of its own ever fires
            writer.watch(conn, transcript_path, _text(payload, "session_id"))
        said = marked(payload)
        if said:   # before Claude Code writes the prompt line: its turn's answers may come first
            writer.keep_out(conn, transcript_path, said)
    writer.ingest_watched(conn, stats, skip=transcript_path and os.path.abspath(transcript_path))
    if agent_path:
        writer.ingest_file(conn, agent_path, stats)
    answer = payload.get("last_assistant_message")
    if answer and payload.get("hook_event_name") in FINAL_ANSWER_EVENTS:
        session = final_answer_session(payload)
        if session and not (agent_path and transcript_path and writer.capture_of(conn, transcript_path)):
            writer.record_final_answer(conn, session, answer, stats, project_path=_text(payload, "cwd"),
                                       transcript_path=agent_path or transcript_path)
    if stats.messages:
        from .sync import background
        background.maybe_start(conn)
    if not stats.commits:
        record_run(conn, stats)
    return stats


def respond(payload, conn):
    """The hook JSON Claude Code reads back from this run, or None (print nothing).

    SessionStart after a compaction or on a resume: where this session's full record is, and
    (after a compaction) an index of what was compacted, as ``additionalContext``; on startup,
    the project's latest sessions (the ``startup_sessions`` setting).
    UserPromptSubmit (the ``recall_hints`` setting): pointers to other sessions that strongly
    match the prompt, when there are any.
    """
    event = payload.get("hook_event_name")
    session = _text(payload, "session_id")
    if event == "SessionStart" and session:
        from .localstore import recall

        source = payload.get("source")
        if source == "startup":
            context = recall.startup_context(conn, session, _text(payload, "cwd"), startup_sessions(),
                                             redacted=context_redacted)
        else:
            context = recall.session_context(conn, session, source, redacted=context_redacted)
    elif event == "UserPromptSubmit" and isinstance(payload.get("prompt"), str) and not marked(payload) \
            and recall_hints_on():
        from .localstore.hints import recall_hints

        hints = recall_hints(conn, payload["prompt"], session)
        if not hints:
            return None
        from .localstore import recall

        context = recall.hint_context(hints, redacted=context_redacted)
    else:
        return None
    if not context:
        return None
    return jsonl.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}},
                       ensure_ascii=False)


FINAL_ANSWER_EVENTS = ("Stop", "SubagentStop")


def marked(payload):
    """``"skip"`` or ``"off"`` when a UserPromptSubmit's prompt has a marker (``capture``), else None."""
    prompt = payload.get("prompt")
    if payload.get("hook_event_name") != "UserPromptSubmit" or not isinstance(prompt, str):
        return None
    from .transcript import prompt_marker

    return prompt_marker(prompt)


def _text(payload, key):
    value = payload.get(key)
    return value if isinstance(value, str) and value and "\x00" not in value else None


def final_answer_session(payload):
    """The session a Stop (the main conversation) or SubagentStop (``<session>:agent-<id>``) answer belongs to."""
    from .transcript import subagent_session_id

    session = _text(payload, "session_id")
    if session and payload.get("hook_event_name") == "SubagentStop":
        agent = _text(payload, "agent_id")
        return subagent_session_id(session, agent) if agent else None
    return session


def trim_wal(conn):
    """Empty the journal's WAL once it is past the autocheckpoint threshold.

    SQLite restarts a fully checkpointed WAL only from a connection's second
    write transaction, and the hook writes once per process: left alone, the
    WAL would grow without end and every turn would pay a checkpoint (an
    fsync) at its commit. A stat on most turns; on about one in forty, a
    TRUNCATE checkpoint that never waits (a busy reader, such as a running
    sync, just leaves it for a later turn).
    """
    try:
        if os.path.getsize(paths.journal_path() + "-wal") < WAL_TRIM_BYTES:
            return
        conn.set_busy_timeout(0)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except Exception:  # noqa: BLE001 - a busy or missing WAL is fine: the next turn tries again
        pass


def log_error(payload, exc):
    """Append one line to the hook log; never raise."""
    try:
        folder = paths.log_dir()
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, LOG_NAME)
        if os.path.exists(path) and os.path.getsize(path) > MAX_LOG_BYTES:
            os.replace(path, path + ".1")
        session = payload.get("session_id") if isinstance(payload, dict) else None
        line = jsonl.dumps({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "session_id": str(session)[:200] if session is not None else None,
                           "event": str(payload.get("hook_event_name"))[:64] if isinstance(payload, dict) else None,
                           "error": f"{type(exc).__name__}: {exc}"[:2000]})
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except BaseException:  # noqa: BLE001
        pass


if __name__ == "__main__":
    sys.exit(later() if sys.argv[1:] == ["--later"] else main())
