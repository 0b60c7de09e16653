"""``chats restore``: a recorded session written back as the transcript ``claude --resume`` reads.

Claude Code deletes transcripts after ``cleanupPeriodDays``; the journal keeps each session's
lines that resuming needs (``rawlines``; Postgres has them too once synced), so the session can
be written back where Claude Code looks for it: ``<claude config dir>/projects/<project folder
name>/<session>.jsonl``, its subagents' transcripts beside it in ``<session>/subagents/``. The
lines come from the journal, else from Postgres (another machine's session). A transcript
already there is left alone when it differs (``force`` replaces it, keeping the old file as
``<name>.bak-<time>``). Above both stores, like ``purge``.
"""

import os
import time
from dataclasses import asdict, dataclass, field

from . import config, rawlines
from .claudecode import resume_command, root_session, transcript_path
from .errors import PostgresError, RestoreError
from .localstore.journal import Journal
from .pgstore.store import PgStore

@dataclass
class RestoredFile:
    conversation: str
    path: str
    lines: int
    status: str     # "written", "unchanged", "replaced" (force); dry run: "would write", "differs"
    backup: str = None


@dataclass
class RestoreReport:
    session_id: str
    project_path: str
    source: str         # "journal" or "postgres"
    dry_run: bool
    files: list = field(default_factory=list)
    resume: str = ""

    def as_dict(self):
        return asdict(self)


def restore(session_id, to=None, dry_run=False, force=False, settings=None, journal=None, projects_dir=None):
    """Write ``session_id`` (and its subagents) back as Claude Code transcripts; a ``RestoreReport``.

    ``to``: the project folder to restore it for (default: where it was recorded). Raises
    ``RestoreError`` when no lines are kept anywhere, or when a transcript there differs and
    ``force`` is not set (nothing is written then). ``dry_run``: the report only, nothing written.
    """
    session_id = root_session(session_id)
    project, kept, source = _kept(session_id, settings, journal)
    project = os.path.abspath(os.path.expanduser(to)) if to else project
    if not project:
        raise RestoreError(f"session {session_id} has no project folder recorded: say where to restore it "
                           "with --to PATH (the folder you run claude in)")
    main = transcript_path(session_id, project, projects_dir)
    report = RestoreReport(session_id, project, source, dry_run, resume=resume_command(session_id, project))
    planned = []
    for conversation in sorted(kept, key=lambda c: (c != session_id, c)):
        data = b"".join(line + b"\n" for line in rawlines.relink(kept[conversation]))
        if not data:
            continue
        path = main if conversation == session_id else _subagent_path(main, conversation)
        planned.append((RestoredFile(conversation, path, data.count(b"\n"), _status(path, data, dry_run)), data))
    differing = [f for f, _ in planned if f.status == "differs"]
    if differing and not force and not dry_run:
        names = "\n  ".join(f.path for f in differing)
        raise RestoreError(f"a different transcript is already there, not overwritten:\n  {names}\n"
                           f"(Claude Code still has this session: `{report.resume}` may be all you need; "
                           "`chats restore --force` replaces it, keeping the old file as <name>.bak-<time>)")
    for restored, data in planned:
        if not dry_run and restored.status != "unchanged":
            restored.backup = _write(restored.path, data)
            restored.status = "replaced" if restored.backup else "written"
        report.files.append(restored)
    return report


def _kept(session_id, settings, journal):
    """``(project path, {conversation: [(key, parent, line)]}, source)``: the journal's, else Postgres'."""
    own = journal is None
    journal = journal or Journal.open()
    try:
        kept = journal.kept_lines(session_id)
        known = journal.conn.execute("SELECT project_path FROM sessions WHERE id = ?", (session_id,)).fetchall()
    finally:
        if own:
            journal.close()
    if kept.get(session_id):
        return (known[0][0] if known else None), kept, "journal"
    settings = settings or config.load()
    why = "" if settings.database_url else " (and no database_url is configured to look in Postgres)"
    if settings.database_url:
        try:
            with PgStore.open(settings.database_url, settings.allow_insecure_remote) as store:
                project, kept = store.kept_lines(session_id)
        except PostgresError as exc:
            why = f" (Postgres could not be asked: {exc})"
        else:
            if kept.get(session_id):
                return project, kept, "postgres"
    if known:
        raise RestoreError(f"session {session_id} is recorded, but not its transcript lines: it was recorded by "
                           f"a claude-chats that did not keep them{why}; its text is still there (`chats show "
                           f"{session_id}`)")
    raise RestoreError(f"no session {session_id!r} in the journal{' or Postgres' if settings.database_url else ''}"
                       f"{why} (see `chats sessions`)")


def _subagent_path(main, conversation):
    agent = conversation.rsplit(":agent-", 1)[1]
    return os.path.join(main[:-len(".jsonl")], "subagents", f"agent-{agent}.jsonl")


def _status(path, data, dry_run):
    try:
        with open(path, "rb") as fh:
            existing = fh.read()
    except FileNotFoundError:
        return "would write" if dry_run else "new"
    return "unchanged" if existing == data else "differs"


def _write(path, data):
    """Write ``data`` to ``path`` whole (a temporary file renamed over it), owner-only; the path of
    the backup of a file it replaces, or None."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    backup = None
    if os.path.exists(path):
        backup = f"{path}.bak-{time.strftime('%Y%m%dT%H%M%S')}"
        os.replace(path, backup)
    temporary = f"{path}.restoring-{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(temporary, path)
    return backup


