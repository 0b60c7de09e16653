"""After ``chats purge``, no byte of the purged conversation on disk (issue 16, item 4).

A session with unique words in its text (typed text, an assistant answer, a
long tool result), its ``/rename`` name, its git branch, its project folder,
and a ``summary`` line still waiting for its leaf (``pending_summaries``) is
imported, synced to a real Postgres, then purged with ``chats purge``. Then
the journal file, its WAL, the log folder and the Postgres data directory
(the embedded test server's) are read byte by byte for each unique string, as
written and lower-cased (what FTS5 and ``to_tsvector`` index): none is found.

What is kept on purpose, and so not looked for: the session id (the tombstone
every machine applies, and the transcript's cursor, so Claude Code's file is
not imported again) and the transcript's path in that cursor.

The server is set to ``wal_recycle = off`` for this test, as a person who needs
the guarantee on disk sets it (RELIABILITY.md): with the default, a checkpoint
renames old WAL segments for reuse and their old bytes stay until overwritten.
"""

import json
import os
import pathlib
import secrets
import uuid as uuidlib

import psycopg
from click.testing import CliRunner

from claude_chats import paths
from claude_chats.cli import main
from claude_chats.localstore.journal import Journal
from tests.support.machines import RUNTIME_GRANTS
from tests.support.on_disk import holding
from tests.support.stand_ins import chats, line, write

SESSION, KEPT = "sess-purge-on-disk", "sess-kept-on-disk"
MARKS = {
    "typed": "Quillwortpurgetyped",
    "answer": "Saxifragepurgeanswer",
    "tool": "Bryophytepurgetool",
    "name": "Gossamerpurgename",
    "branch": "feature/Larkspurpurgebranch",
    "cwd": "/work/Marigoldpurgecwd",
    "summary": "Heliotropepurgesummary",
}


def base(kind, session, cwd, branch, index, message):
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.0", "gitBranch": branch, "type": kind, "message": message,
            "uuid": str(uuidlib.uuid4()), "timestamp": f"2026-01-01T00:00:{index:02d}.000Z"}


def purged_history():
    cwd, branch = MARKS["cwd"], MARKS["branch"]
    noise = secrets.token_hex(1500)   # incompressible: the tool result is stored out of line (TOAST) as is
    tool_id = "toolu_" + uuidlib.uuid4().hex[:20]
    return [
        base("user", SESSION, cwd, branch, 0, {"role": "user", "content": f"please look at {MARKS['typed']} now"}),
        base("assistant", SESSION, cwd, branch, 1, {
            "id": "msg_a1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"I found {MARKS['answer']} in the logs"},
                        {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "cat big.log"}}]}),
        base("user", SESSION, cwd, branch, 2, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": f"{noise} {MARKS['tool']} {noise}"}]}),
        {"type": "custom-title", "customTitle": MARKS["name"], "sessionId": SESSION},
        {"type": "summary", "summary": f"{MARKS['summary']} of a session", "leafUuid": str(uuidlib.uuid4())},
    ]


def kept_history():
    return [line("user" if i % 2 == 0 else "assistant", f"an ordinary kept {'line' if i % 2 == 0 else 'answer'} {i}",
                 KEPT, i, cwd="/work/kept") for i in range(4)]


def needles():
    out = set()
    for mark in MARKS.values():
        out.update({mark.encode(), mark.lower().encode()})
    return out


def found(*roots, packed=()):
    """{file: [unique strings it holds]} (``packed``: byte strings looked for too, shown as hex)."""
    return holding(roots, {**{n: n.decode() for n in needles()}, **{p: p.hex()[:16] for p in packed}})


def test_a_purged_session_leaves_no_byte_in_the_journal_logs_or_postgres_data_dir(pg_on_disk, test_model_path,
                                                                                   monkeypatch):
    url, data_dir = pg_on_disk
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    projects = pathlib.Path(paths.claude_projects_dir())
    write(projects / MARKS["cwd"].replace("/", "-") / f"{SESSION}.jsonl", purged_history())   # Claude Code's folder
    write(projects / "-work-kept" / f"{KEPT}.jsonl", kept_history())
    chats("import")
    report = json.loads(chats("sync", "--json"))
    assert report["ok"] and report["pushed"] >= 7, report
    journal = paths.journal_path()
    assert found(journal, journal + "-wal"), "the marks never reached the journal: the test proves nothing"
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM conversations WHERE name = %s", (MARKS["name"],)).fetchone()[0] == 1
        packed = [bytes(line)[16:80] for (line,) in conn.execute(   # the kept lines, zlib: the marks are not seen
            "SELECT r.line FROM raw_lines r JOIN conversations c ON c.id = r.conversation_id "
            "WHERE c.session_id = %s AND r.line IS NOT NULL", (SESSION,))]
    assert len(packed) >= 3
    with Journal.open(journal) as stored:   # the messages' uuids and the lines' keys as the journal holds them: 16 bytes
        ids = [bytes(v) for (v,) in stored.conn.execute(
            "SELECT uuid FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) AND typeof(uuid) = 'blob' UNION ALL SELECT r.key "
            "FROM raw_lines r JOIN session_numbers n ON n.number = r.session WHERE n.session_id = ? "
            "AND typeof(r.key) = 'blob'", (SESSION, SESSION))]
    assert len(ids) >= 5, ids
    before = found(journal, journal + "-wal", packed=ids)
    assert {label for held in before.values() for label in held} >= {v.hex()[:16] for v in ids}
    packed += ids

    purged = json.loads(chats("purge", "--session", SESSION, "--yes", "--json"))
    assert purged["postgres"] == "purged" and purged["scrubbed"], purged

    left = found(journal, journal + "-wal", journal + "-shm", paths.log_dir(), data_dir, packed=packed)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")   # what the server still holds in memory, written to its files
    left.update(found(os.path.join(data_dir, "base"), os.path.join(data_dir, "global"), packed=packed))
    assert left == {}, f"the purged session's text is still on disk: {left}; purge said {purged}"
    kept = json.loads(chats("search", "--json", "--mode", "fulltext", "ordinary kept answer"))
    assert kept["hits"] and kept["source"] == "postgres"


def test_a_purge_as_the_least_privilege_role_deletes_and_says_what_stays_on_disk(pg_db_url, test_model_path,
                                                                                  monkeypatch):
    """The run-time role (RELIABILITY.md) may DELETE but not VACUUM FULL, CHECKPOINT or switch the
    WAL: the purge succeeds, and its report names what stays in Postgres' files and how to remove it."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    projects = pathlib.Path(paths.claude_projects_dir())
    write(projects / MARKS["cwd"].replace("/", "-") / f"{SESSION}.jsonl", purged_history())
    chats("import")
    assert json.loads(chats("sync", "--json"))["ok"]          # the owner: migrations, the space, its table
    role = f"chats_rt_{uuidlib.uuid4().hex[:8]}"
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(RUNTIME_GRANTS.format(db=conninfo_to_dict(pg_db_url)["dbname"], role=role))
    try:
        monkeypatch.setenv("DATABASE_URL", make_conninfo(pg_db_url, user=role))
        purged = json.loads(chats("purge", "--session", SESSION, "--yes", "--json"))
        assert purged["postgres"] == "purged" and purged["postgres_counts"]["messages"] == 4, purged
        left = " ".join(purged["postgres_scrub"]["left"])
        assert "VACUUM FULL messages, conversations" in left and "pg_statistic" in left, purged
        assert "CHECKPOINT" in left and "pg_checkpoint" in left, purged
        text = CliRunner().invoke(main, ["purge", "--session", SESSION, "--yes"], catch_exceptions=False)
        assert text.exit_code == 0
        with psycopg.connect(pg_db_url) as conn:
            assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    finally:
        with psycopg.connect(pg_db_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
