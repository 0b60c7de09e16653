"""The journal's counters (migration 0006) stay what counting every message gives, through every writer:
the hook (fresh processes), `chats import`, a fork's copies, a purge, sync marking messages synced,
vectors written and dropped in two spaces, a redaction rewrite, and a journal upgraded from schema 5.
`chats status` and search's coverage read them."""

import json
import os
import subprocess

import apsw

from claude_chats import config, paths
from claude_chats.localstore import counts, db, vectors
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.models import recipe
from claude_chats.models.base import Space
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.cli import chats
from tests.support.counts import assert_exact, old_backlog
from tests.support.fakes import HashEmbedder
from tests.support.journals import store_session
from tests.support.hooks import CHATS, Transcripts, hook_payload, run_hook

SPACE = Space("test", "counts", 4)


def kinds_session(session, project="/work/app"):
    """A session of every kind the recipes treat apart: text, thinking, a tool call and its long result."""
    think = [{"type": "thinking", "thinking": f"{session} thinks it over " * 5, "signature": "s"}]
    call = [{"type": "tool_use", "id": f"t-{session}", "name": "Bash", "input": {"command": "ls -la"}}]
    result = [{"type": "tool_result", "tool_use_id": f"t-{session}", "content": f"{session} file listing " * 40}]
    out = [lines.user(f"{session}: list the files please", session=session, cwd=project),
           lines.assistant(think + [{"type": "text", "text": f"{session}: listing them"}], session=session),
           lines.assistant(call, session=session),
           lines.user(result, session=session, cwd=project),
           lines.assistant(f"{session}: here they are, " + "with a long explanation " * 30, session=session)]
    return out


def write(session, objs, project="-work-app"):
    folder = os.path.join(paths.claude_projects_dir(), project)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{session}.jsonl")
    with open(path, "ab") as fh:
        fh.write(lines.encode(*objs))
    return path


def status_json():
    proc = subprocess.run([*CHATS, "status", "--json", "--offline"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def store_vectors(conn, space, ids):
    space_id = vectors.ensure_space(conn, space, [1.0] * space.dimensions)
    for message_id in ids:
        vectors.write_message_vectors(conn, space_id, message_id, [(0, 0, 5, [1.0, 0, 0, 0]),
                                                                    (1, 5, 9, [0, 1.0, 0, 0])])
    return space_id


def test_hook_runs_in_fresh_processes_keep_the_counters_exact(tmp_path):
    transcripts = Transcripts(tmp_path / "projects" / "-work-hook", sessions=2, agents=1)
    for _turn in range(3):
        transcripts.grow(3)
        for session in transcripts.sessions():
            run_hook(hook_payload(transcripts, session))
    groups = assert_exact(paths.journal_path())
    assert sum(g[4] for g in groups[0]) == len(transcripts.uuids()) == 36
    report = status_json()["journal"]
    assert (report["messages"], report["pending"], report["synced"]) == (36, 36, 0)


def test_import_forks_blank_and_kinds_counted_and_the_backlog_as_before(tmp_path):
    original = kinds_session("s-a")
    write("s-a", original)
    write("s-b", kinds_session("s-b"))
    # a fork: the same lines (uuids included) at the start of another session, then its own turn
    fork = [{**line, "sessionId": "s-fork"} for line in original] + [lines.user("the fork goes on", session="s-fork")]
    write("s-fork", fork)
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    store_session("s-blank", [("user", "text", " \n\t "), ("assistant", "tool_result", "")])   # as an older door did
    assert_exact(paths.journal_path())
    conn = db.connect(paths.journal_path())
    stored = conn.execute("SELECT count(*) FILTER (WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's-a')), sum(copy), "
                          "sum(trim(content, ' \t\n') = '') FROM messages").fetchall()[0]
    assert stored[1] == stored[0] and stored[2] == 2    # every line of s-a copied; the blank prompt and its copy
    for limits in ((), recipe.LEAN.limits, recipe.recipe_for("context,tool_result=20,thinking=0").limits):
        messages, chars, exact = counts.backlog(conn, None, limits)
        before = old_backlog(conn, None, limits)
        assert messages == before[0]
        capped = [k for k, c in limits if c]
        if not capped:
            assert (chars, exact) == (before[1], True)
        else:      # a limited kind counted per kind: never below the message-by-message count, said inexact
            assert chars >= before[1] and exact is False
    # the recipe's skipped kinds are not in the backlog; copies and blanks never are
    assert counts.backlog(conn, None, recipe.LEAN.limits)[0] == \
        conn.execute("SELECT count(*) FROM messages WHERE copy = 0 AND trim(content, ' \t\n') != '' "
                     "AND kind NOT IN ('thinking', 'command', 'meta', 'interrupt', 'compact_boundary')").fetchall()[0][0]
    conn.close()


def test_vectors_in_two_spaces_a_rewrite_and_a_purge(tmp_path):
    for session in ("s-keep", "s-gone"):
        write(session, kinds_session(session), project=f"-work-{session}")
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    conn = db.connect(paths.journal_path())
    vectors.load_extension(conn)
    ids = [r[0] for r in conn.execute("SELECT id FROM messages ORDER BY id")]
    first = store_vectors(conn, SPACE, ids[::2])
    other = store_vectors(conn, Space("test", "other", 4), ids[:3])
    store_vectors(conn, SPACE, ids[:1])              # written again: replaced, counted once
    assert_exact(paths.journal_path())
    total = conn.execute("SELECT count(*) FROM messages").fetchall()[0][0]
    assert counts.coverage(conn, first) == (len(ids[::2]), total)
    assert counts.backlog(conn, other)[0] == total - 3 and counts.backlog(conn, first)[0] == total - len(ids[::2])
    vectors.write_message_vectors(conn, first, ids[0], [])      # a message's vectors removed
    assert counts.coverage(conn, first)[0] == len(ids[::2]) - 1
    # a redaction rewrite: new content, pending again, vectors dropped (localstore.erase)
    with db.Immediate(conn):
        conn.execute("DELETE FROM chunks WHERE message_id = ?", (ids[2],))
        conn.execute("UPDATE messages SET content = content || ' [REDACTED]', synced = 0 WHERE id = ?", (ids[2],))
    conn.execute("UPDATE messages SET synced = 1 WHERE id IN (?, ?)", (ids[4], ids[5]))
    assert_exact(paths.journal_path())
    conn.close()
    assert chats("purge", "--session", "s-gone", "--yes").exit_code == 0
    held = assert_exact(paths.journal_path())
    conn = db.connect(paths.journal_path())
    left = conn.execute("SELECT count(*) FROM messages").fetchall()[0][0]
    assert 0 < left < total and sum(g[4] for g in held[0]) == left
    assert counts.coverage(conn, first) == (
        conn.execute("SELECT count(DISTINCT message_id) FROM chunks WHERE space_id = ?", (first,)).fetchall()[0][0], left)
    vectors.load_extension(conn)
    conn.execute("DELETE FROM spaces WHERE id = ?", (other,))     # a space removed: its counts go with it
    assert conn.execute("SELECT (SELECT count(*) FROM vector_counts WHERE space_id = ?), "
                        "(SELECT count(*) FROM space_chunks WHERE space_id = ?)", (other, other)).fetchall()[0] == (0, 0)
    conn.close()
    assert_exact(paths.journal_path())


def test_sync_marks_synced_and_embeds_and_the_counts_follow(pg_db_url, monkeypatch):
    for session in ("s-1", "s-2"):
        write(session, kinds_session(session), project=f"-work-{session}")
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    provider = recipe.with_text(HashEmbedder())
    with Journal.open() as journal:
        report = run_sync(config.load(), journal=journal, provider=provider, lock=False)
        assert report.ok, report.errors
        conn = journal.conn
        space_id = db.find_space(conn, provider.space.key)
        assert counts.messages(conn) == (report.pushed, 0)
        assert counts.backlog(conn, space_id, recipe.LEAN.limits) == (0, 0, True)
        assert counts.unembedded(conn, space_id, recipe.LEAN.skipped) == 0
        embedded = conn.execute("SELECT count(DISTINCT message_id) FROM chunks WHERE space_id = ?",
                                (space_id,)).fetchall()[0][0]
        assert LocalSearch(journal).coverage(space_id, recipe.LEAN.skipped)[0] == embedded
    assert_exact(paths.journal_path())
    # a new space (another embedded text): every pushed message it embeds is to backfill, as before
    with Journal.open() as journal:
        other = vectors.ensure_space(journal.conn, Space("test", "another", 4), [1.0] * 4)
        expected = len(vectors.unembedded(journal.conn, other, 0, 10_000, recipe.LEAN.skipped))
        assert counts.unembedded(journal.conn, other, recipe.LEAN.skipped) == expected > 0
    report = status_json()
    assert (report["journal"]["synced"], report["journal"]["pending"]) == (report["journal"]["messages"], 0)


def test_a_journal_of_the_previous_schema_gets_its_counters_from_the_migration(tmp_path):
    path = str(tmp_path / "old.db")
    conn = apsw.Connection(path)
    conn.execute("PRAGMA foreign_keys = ON")
    for index, name in enumerate(db.migration_files()[:5]):
        with open(os.path.join(db.MIGRATIONS_DIR, name), encoding="utf-8") as fh:
            conn.execute(fh.read())
        conn.execute(f"PRAGMA user_version = {index + 1}")
    conn.execute("INSERT INTO sessions (id, updated_at) VALUES ('s', 'now')")
    for seq, (kind, text, synced, copy) in enumerate([("text", "hello there", 1, 0), ("thinking", "hmm " * 9, 0, 0),
                                                      ("text", " \n", 0, 0), ("tool_result", "x" * 500, 1, 1)]):
        conn.execute("INSERT INTO messages (uuid, session_id, seq, role, kind, content, synced, copy) "
                     "VALUES (?, 's', ?, 'user', ?, ?, ?, ?)", (f"u{seq}", seq, kind, text, synced, copy))
    vectors.load_extension(conn)
    space_id = store_vectors(conn, SPACE, [1])
    # read-only before any writer migrated it: counted from the messages, the same figures
    reader = Journal.open(path, readonly=True)
    assert counts.has_counters(reader.conn) is False
    before = (reader.counts(), counts.backlog(reader.conn, space_id), counts.coverage(reader.conn, space_id),
              counts.space_vectors(reader.conn))
    reader.close()
    conn.close()
    held = assert_exact(path)            # opening it read-write migrates it
    assert held[1] == [(space_id, "text", 1, 0, 0, 1, len("hello there"))]
    with Journal.open(path) as journal:
        assert counts.has_counters(journal.conn)
        assert journal.counts() == before[0] == {"sessions": 1, "messages": 4, "pending": 2, "synced": 2}
        assert counts.backlog(journal.conn, space_id) == before[1] == (1, len("hmm " * 9), True)
        assert counts.coverage(journal.conn, space_id) == before[2] == (1, 3)
        assert counts.space_vectors(journal.conn) == before[3] == {space_id: 2}


def test_a_journal_only_sync_with_every_vector_there_reads_no_message(tmp_path):
    write("s-1", kinds_session("s-1"))
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    provider = recipe.with_text(HashEmbedder())
    with Journal.open() as journal:
        first = run_sync(config.load(), journal=journal, provider=provider, lock=False)
        again = run_sync(config.load(), journal=journal, provider=provider, lock=False)
        assert first.embedded > 0 and first.batches == 1
        assert (again.embedded, again.batches, again.pending_before) == (0, 0, first.pending_before)
    write("s-1", [lines.user("one more prompt", session="s-1")])
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    with Journal.open() as journal:
        third = run_sync(config.load(), journal=journal, provider=provider, lock=False)
        assert third.batches == 1 and third.embedded >= 1
        assert journal.conn.execute("SELECT count(*) FROM chunks c JOIN messages m ON m.id = c.message_id "
                                    "WHERE m.content = 'one more prompt'").fetchall()[0][0] == 1
        assert counts.backlog(journal.conn, db.find_space(journal.conn, provider.space.key),
                              recipe.LEAN.limits)[0] == 0
    assert_exact(paths.journal_path())
    # two tool results to embed, capped by the lean recipe: the characters are a bound, said "about"
    for session in ("s-2", "s-3"):
        write(session, kinds_session(session))
    assert chats("import", paths.claude_projects_dir()).exit_code == 0
    backlog = status_json()["sync"]["backlog"]
    assert backlog["messages"] == 2 * 5 and backlog["chars_exact"] is False   # each session: 5 it embeds
    proc = subprocess.run([*CHATS, "status", "--offline"], capture_output=True, text=True, timeout=120)
    assert f"backlog: 10 messages to embed (about {backlog['chars']:,} characters)" in proc.stdout
