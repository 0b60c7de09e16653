"""``chats restore``: a recorded session written back as the transcript ``claude --resume`` reads.

Claude Code deletes transcripts after ``cleanupPeriodDays``; the journal keeps each session's
lines that resuming needs (``rawlines``; Postgres has them too once synced), so the session can
be written back where Claude Code looks for it: ``<claude config dir>/projects/<project folder
name>/<session>.jsonl``, its subagents' transcripts beside it in ``<session>/subagents/``. The
lines come from the journal, else from Postgres (another machine's session). A transcript
already there is left alone when it differs (``force`` replaces it, keeping the old file as
``<name>.bak-<time>``, never over an older backup). Above both stores, like ``purge``.

Every door is hostile (another machine pushed the rows): an id that is not one Claude Code writes
(``transcript.id_problem``) is refused, a conversation that is not this session or one of its
subagents (``<session>:agent-<id>``) is skipped with a note, every file written must resolve
(realpath) inside its ``projects/<folder>/``, the temporary file is created anew (never through a
link planted at its name), and the lines unpack within bounds (``rawlines.unpack_rows``).
"""

import os
import stat
import time
from dataclasses import asdict, dataclass, field

from . import config, paths, rawlines
from .claudecode import resume_command, root_session, shown, transcript_path
from .errors import PostgresError, RestoreError
from .localstore.journal import Journal
from .pgstore.store import PgStore
from .transcript import SUBAGENT_MARK, id_problem


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
    skipped: list = field(default_factory=list)   # [{"conversation", "reason"}]: rows not written back

    def as_dict(self):
        return asdict(self)


def restore(session_id, to=None, dry_run=False, force=False, settings=None, journal=None, projects_dir=None):
    """Write ``session_id`` (and its subagents) back as Claude Code transcripts; a ``RestoreReport``.

    ``to``: the project folder to restore it for (default: where it was recorded). Raises
    ``RestoreError`` when no lines are kept anywhere, when a transcript there differs and
    ``force`` is not set (nothing is written then), and for an id, a path or a line it will not
    write. ``dry_run``: the report only, nothing written.
    """
    session_id = root_session(session_id)
    problem = id_problem(session_id)
    if problem:
        raise RestoreError(f"not a session id Claude Code writes ({problem}): {shown(session_id)}")
    project, kept, source = _kept(session_id, settings, journal)
    project = os.path.abspath(os.path.expanduser(to)) if to else project
    if not project:
        raise RestoreError(f"session {session_id} has no project folder recorded: say where to restore it "
                           "with --to PATH (the folder you run claude in)")
    main = transcript_path(session_id, project, projects_dir or paths.claude_projects_dir())
    home = os.path.realpath(os.path.dirname(main))   # projects/<folder>: every file must stay inside
    report = RestoreReport(session_id, project, source, dry_run, resume=resume_command(session_id, project))
    planned = []
    for conversation in sorted(kept, key=lambda c: (c != session_id, c)):
        path, why = _file_of(conversation, session_id, main)
        if why:
            report.skipped.append({"conversation": shown(conversation), "reason": why})
            continue
        data = b"".join(line + b"\n" for line in rawlines.relink(kept[conversation]))
        if not data:
            continue
        _check_inside(path, home)
        planned.append((RestoredFile(conversation, path, data.count(b"\n"), _status(path, data, dry_run)), data))
    differing = [f for f, _ in planned if f.status == "differs"]
    if differing and not force and not dry_run:
        names = "\n  ".join(f.path for f in differing)
        raise RestoreError(f"a different transcript is already there, not overwritten:\n  {names}\n"
                           f"(Claude Code still has this session: `{report.resume}` may be all you need; "
                           "`chats restore --force` replaces it, keeping the old file as <name>.bak-<time>)")
    for restored, data in planned:
        if not dry_run and restored.status != "unchanged":
            restored.backup = _write(restored.path, data, home)
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
    except rawlines.UnpackError as exc:
        raise RestoreError(f"session {session_id}: {exc}, in the journal; nothing was written") from None
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
        except rawlines.UnpackError as exc:
            raise RestoreError(f"session {session_id}: {exc}, in Postgres; nothing was written") from None
        else:
            if kept.get(session_id):
                return project, kept, "postgres"
    if known:
        raise RestoreError(f"session {session_id} is recorded, but not its transcript lines: it was recorded by "
                           f"a claude-chats that did not keep them{why}; its text is still there (`chats show "
                           f"{session_id}`)")
    raise RestoreError(f"no session {session_id!r} in the journal{' or Postgres' if settings.database_url else ''}"
                       f"{why} (see `chats sessions`)")


def _file_of(conversation, session_id, main):
    """``(path, None)`` of a conversation's transcript, or ``(None, why)`` it is not written back."""
    if conversation == session_id:
        return main, None
    session, mark, agent = conversation.partition(SUBAGENT_MARK) if isinstance(conversation, str) else ("", "", "")
    if session != session_id or not mark:
        return None, f"not this session nor one of its subagents (<session>{SUBAGENT_MARK}<id>)"
    problem = id_problem(agent)
    if problem:
        return None, f"not an agent id Claude Code writes ({problem})"
    return os.path.join(main[:-len(".jsonl")], "subagents", f"agent-{agent}.jsonl"), None


def _check_inside(path, home):
    """``RestoreError`` unless ``path`` (links followed: its realpath) is inside the folder ``home``, and
    every part of it that is there already is a folder."""
    real = os.path.realpath(path)
    if not real.startswith(home + os.sep):
        raise RestoreError(f"not written: {shown(path)} leads to {shown(real)}, outside {shown(home)}")
    folder = os.path.dirname(path)
    while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise RestoreError(f"cannot write {shown(path)}: {shown(folder)} is not a folder")


def _status(path, data, dry_run):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "would write" if dry_run else "new"
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
        return "differs"
    try:
        with open(path, "rb") as fh:
            existing = fh.read(len(data) + 1)
    except OSError as exc:
        raise RestoreError(f"cannot read {shown(path)}: {exc.strerror or exc}") from None
    return "unchanged" if existing == data else "differs"


CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _write(path, data, home):
    """Write ``data`` to ``path`` whole (a temporary file of its own, renamed over it), owner-only; the
    path of the backup of a file it replaces, or None."""
    folder = os.path.dirname(path)
    temporary = None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        _check_inside(path, home)   # again, now that the folders are there
        temporary, fd = _claim(f"{path}.restoring-{os.getpid()}", lambda name: os.open(name, CREATE, 0o600))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        backup = _claim(f"{path}.bak-{time.strftime('%Y%m%dT%H%M%S')}", lambda name: _keep_as(path, name))[0] \
            if os.path.lexists(path) else None
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise RestoreError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None
    finally:
        if temporary is not None:
            _remove(temporary)
    return backup


def _claim(name, create, tries=1000):
    """``(name, create(name))`` for the first of ``name``, ``name-2``, ``name-3``... not taken yet
    (``create`` raises ``FileExistsError`` for a name taken: nothing there is ever replaced)."""
    for n in range(1, tries + 1):
        candidate = name if n == 1 else f"{name}-{n}"
        try:
            return candidate, create(candidate)
        except FileExistsError:
            continue
    raise RestoreError(f"not written: {tries} files named {shown(name)}... are there already")


def _keep_as(path, backup):
    """The file at ``path`` kept as ``backup`` too (a hard link; a copy where links cannot be made),
    never over a file already there."""
    try:
        os.link(path, backup, follow_symlinks=False)
        return None
    except (FileExistsError, FileNotFoundError):
        raise
    except OSError:
        pass
    with open(path, "rb") as src, os.fdopen(os.open(backup, CREATE, 0o600), "wb") as out:
        while chunk := src.read(1 << 20):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return None


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
