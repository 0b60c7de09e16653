"""What claude-chats knows of Claude Code's own files and commands (2.1.332; stdlib only).

The folder a project's transcripts are kept in (``project_folder_name``), a session's transcript
(``transcript_path``), and the command line that resumes a session (``resume_command``): what
``chats restore`` writes to and what search results and ``chats sessions`` print.
"""

import os
import shlex

from . import paths
from .transcript import SUBAGENT_MARK, id_problem

NAME_LIMIT = 200   # Claude Code's limit on a project folder name; longer ones are cut and hashed


def project_folder_name(project_path):
    """The folder Claude Code keeps a project's transcripts in: every character but ASCII letters
    and digits as ``-``; past 200 characters, the first 200 and a hash of the path (as 2.1.332 does)."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in project_path)
    if len(name) <= NAME_LIMIT:
        return name
    return f"{name[:NAME_LIMIT]}-{_base36(abs(_java_hash(project_path)))}"


def _java_hash(text):
    """JavaScript's ``(h << 5) - h + charCode | 0`` over UTF-16 code units."""
    h = 0
    units = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(units), 2):
        h = ((h << 5) - h + int.from_bytes(units[i:i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(number):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def root_session(session_id):
    """The session Claude Code resumes for a conversation (a subagent's: its parent's)."""
    return session_id.split(SUBAGENT_MARK)[0]


def transcript_path(session_id, project_path, projects_dir=None):
    """Where Claude Code keeps the transcript of ``session_id`` (a subagent: its parent's) made in
    ``project_path``. The folder name is letters, digits and ``-`` whatever the path holds; the session id
    must have been checked (``transcript.id_problem``) before a file is made of it."""
    folder = os.path.join(projects_dir or paths.claude_projects_dir(), project_folder_name(project_path))
    return os.path.join(folder, f"{root_session(session_id)}.jsonl")


def resume_command(session_id, project_path=None, restore_first=False):
    """The line that resumes a session in Claude Code (a subagent: its parent session), from its
    project folder; ``restore_first``: ``chats restore`` it before (its transcript is gone).

    The line is meant to be pasted into a shell: an id that is not one Claude Code writes, or a project
    path with control characters (an escape sequence from another machine's row), gives no command
    but a sentence that shows them escaped."""
    root = root_session(session_id)
    problem = id_problem(root)
    if problem:
        return f"(no resume line: the session id {shown(root)} is not one Claude Code writes: {problem})"
    command = f"claude --resume {root}"
    if project_path and not project_path.isprintable():
        return (f"(no resume line: the project path {shown(project_path)} holds control characters; "
                f"go there yourself and run `{command}`)")
    if project_path:   # `--`: a path that starts with "-" (a relative one from another machine) is no option
        command = f"cd {'-- ' if project_path.startswith('-') else ''}{shlex.quote(project_path)} && {command}"
    return f"chats restore {root} && {command}" if restore_first else command


def resume_line(session_id, project_path):
    """``resume_command``, with ``chats restore`` first when Claude Code no longer has the transcript."""
    gone = bool(project_path) and not id_problem(root_session(session_id)) and \
        not os.path.exists(transcript_path(session_id, project_path))
    return resume_command(session_id, project_path, restore_first=gone)


def shown(text, limit=120):
    """``text`` (an id, a path, a name from a store) as a terminal may print it: on one line, each
    unprintable character (control characters, escape sequences' ESC, NUL) as its escape (``\\x1b``),
    cut past ``limit`` characters (saying how long it was)."""
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
