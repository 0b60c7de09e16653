"""A purged session does not come back when its transcript file is replaced (issue 21, item 6).

Editors, file-sync tools, backups and ``chats restore`` replace a file (``cp f f.tmp && mv f.tmp
f``: a new inode), so the next hook run (a fresh process) or ``chats import`` reads it from the
start. The journal keeps the purge's tombstone and the write path consults it: what the purge
covered stays out, without Postgres; a turn written after the purge is recorded.
"""

import os
import shutil
import time

from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.hooks import hook_event
from tests.support.machines import chats_json, chats_run, session_file, session_id

APP = "/work/app"


def replaced(path):
    """``cp f f.tmp && mv f.tmp f``: the same bytes under a new inode."""
    before = os.stat(path).st_ino
    shutil.copyfile(path, path + ".tmp")
    os.replace(path + ".tmp", path)
    assert os.stat(path).st_ino != before
    return path


def stored(session):
    """The text of ``session`` and its subagents in the journal, in order."""
    with Journal.open() as journal:
        return [r[0] for r in journal.conn.execute(
            "SELECT m.content FROM messages m JOIN session_numbers n ON n.number = m.session JOIN sessions s ON s.id = n.session_id "
            "WHERE s.id = ? OR s.parent_session_id = ? ORDER BY s.id, m.seq", (session, session))]


def subagent(path, session, text):
    folder = os.path.join(path[:-len(".jsonl")], "subagents")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "agent-a1.jsonl"), "ab") as fh:
        fh.write(lines.encode(lines.user(text, session=session, cwd=APP, isSidechain=True, agentId="a1")))


def later(seconds=60):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + seconds))


def test_a_purged_session_stays_out_when_its_file_is_replaced_and_the_hook_runs(monkeypatch):
    session, other = session_id("purged"), session_id("kept")
    path = session_file(session, ["the secret plan", "more of it"], APP)
    subagent(path, session, "the subagent saw the plan")
    kept = session_file(other, ["an ordinary line"], APP)
    hook_event(path, "Stop", session=session)
    hook_event(kept, "Stop", session=other)
    assert len(stored(session)) == 3
    code, out, err = chats_run("purge", "--session", session, "--yes")
    assert code == 0 and "removed 2 sessions, 3 messages" in out, (out, err)
    replaced(path)
    replaced(os.path.join(path[:-len(".jsonl")], "subagents", "agent-a1.jsonl"))
    hook_event(path, "Stop", session=session)             # a fresh hook process reads both from the start
    assert stored(session) == [] and stored(other) == ["an ordinary line"]
    with Journal.open() as journal:
        assert journal.skipped_lines().get("purged") == 3
        assert journal.conn.execute("SELECT count(*) FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session WHERE n.session_id LIKE ?",
                                    (session + "%",)).fetchall()[0][0] == 0
    assert chats_json("import")["errors"] == []           # chats import of the replaced files: the same
    assert stored(session) == []
    session_file(session, ["a new turn after the purge"], APP, later())
    hook_event(path, "Stop", session=session)
    assert stored(session) == ["a new turn after the purge"]


def test_a_purged_project_stays_out_of_chats_import_of_a_replaced_file():
    inside, below, outside = session_id("in"), session_id("below"), session_id("out")
    files = [session_file(inside, ["inside the project"], APP),
             session_file(below, ["below the project"], APP + "/sub"),
             session_file(outside, ["next door"], APP + "lication")]
    assert chats_json("import")["messages"] == 3
    code, out, _ = chats_run("purge", "--project", APP, "--yes")
    assert code == 0 and "removed 2 sessions" in out, out
    for path in files:
        replaced(path)
    report = chats_json("import")
    assert stored(inside) == stored(below) == [] and stored(outside) == ["next door"]
    assert report["skipped_by_reason"].get("purged") == 2, report     # and the import says why
