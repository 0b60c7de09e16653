"""What the tests of keeping out (issue 17, issue 21 item 7) share: a project's transcript folder,
lines appended as Claude Code appends them, and every byte claude-chats stored locally."""

import os

from claude_chats import paths, rawlines
from claude_chats.claudecode import project_folder_name
from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.journals import kept_line_bytes


def folder(project):
    """The folder Claude Code keeps ``project``'s transcripts in (created)."""
    path = os.path.join(paths.claude_projects_dir(), project_folder_name(project))
    os.makedirs(path, exist_ok=True)
    return path


def append(path, *objs):
    with open(path, "ab") as fh:
        fh.write(lines.encode(*objs))


def stored_bytes():
    """Every byte of the journal, its WAL and the logs, and the kept lines decompressed."""
    out = []
    for name in os.listdir(paths.data_dir()):
        if name.startswith("journal.db"):
            with open(os.path.join(paths.data_dir(), name), "rb") as fh:
                out.append(fh.read())
    if os.path.isdir(paths.log_dir()):
        for name in os.listdir(paths.log_dir()):
            with open(os.path.join(paths.log_dir(), name), "rb") as fh:
                out.append(fh.read())
    with Journal.open() as journal:
        out += kept_line_bytes(journal.conn)
    return b"\n".join(out)
