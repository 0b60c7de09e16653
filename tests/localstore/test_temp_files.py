"""The journal writes no temporary file: a statement that fires triggers (a hook turn's inserts, the
sync marking messages synced, a purge's delete) keeps its statement journal in memory (``PRAGMA temp_store = MEMORY``,
``db.connect``). On a file, past 64 KB (four 16 KB pages) SQLite spilled it into a deleted file in
/var/tmp: the changed pages, message text among them, in clear on a disk where no purge reaches; and
one such file for every hook turn; a purge of a 20,000-message session wrote 30 MB of the pages it
was erasing there.

Seen from below SQLite: a VFS that wraps the default one records every file SQLite opens, and its
flags say which are temporary."""

import apsw
import pytest

from claude_chats import hook
from claude_chats.localstore import db, erase
from claude_chats.localstore.journal import Journal
from tests.support import lines

TEMPORARY = (apsw.SQLITE_OPEN_SUBJOURNAL | apsw.SQLITE_OPEN_TEMP_JOURNAL | apsw.SQLITE_OPEN_TEMP_DB
             | apsw.SQLITE_OPEN_TRANSIENT_DB)


class Recording(apsw.VFS):
    """The default VFS, every open recorded as ``(name, flags)``."""

    def __init__(self):
        self.opened, self.base = [], apsw.vfs_names()[0]   # the default, before this one
        super().__init__("recording-test", base=self.base, makedefault=True)

    def xOpen(self, name, flags):  # noqa: N802 - apsw's name
        self.opened.append((None if name is None else str(name.filename() if hasattr(name, "filename") else name),
                            flags[0]))
        return apsw.VFSFile(self.base, name, flags)

    def temporary(self):
        return [(name, hex(flags)) for name, flags in self.opened if flags & TEMPORARY]


@pytest.fixture
def recording():
    vfs = Recording()
    try:
        yield vfs
    finally:
        vfs.unregister()


def test_a_hook_turn_marking_messages_synced_and_a_purge_write_no_temporary_file(tmp_path, recording):
    # long messages: each turn's statements change more than four pages (the spill threshold)
    body = "the migration failed on the staging replica because the lock timeout was too short " * 60
    path = tmp_path / "sess-1.jsonl"
    turns = []
    for n in range(30):
        turns += [lines.user(f"turn {n}: {body}"), lines.assistant(f"answer {n}: {body}")]
    path.write_bytes(lines.encode(*turns))
    conn = db.connect(str(tmp_path / "journal.db"))
    payload = {"session_id": "sess-1", "transcript_path": str(path), "cwd": "/work/proj", "hook_event_name": "Stop"}
    hook.run(payload, conn)
    journal = Journal(conn, str(tmp_path / "journal.db"))
    ids = [row["id"] for row in journal.pending(limit=1000)]
    assert len(ids) == 60
    journal.mark_synced(ids)

    assert recording.opened, "the recording VFS saw no file: it is not the one SQLite used"
    assert conn.execute("SELECT synced, sum(messages) FROM message_counts GROUP BY 1").fetchall() == [(0, 0), (1, 60)]
    assert recording.temporary() == []

    erase.purge_local(conn, erase.Target.of(session="sess-1"))
    assert conn.execute("SELECT count(*) FROM messages").fetchall() == [(0,)]
    assert recording.temporary() == []
