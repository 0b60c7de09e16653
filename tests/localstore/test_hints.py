"""A prompt's recall hints remember the words they found common (``hints.word_counts``, the
``common_words`` table): the hints are the same with the memo or without it, a purge or a redaction
forgets every word, remembering never waits for another writer, and what is kept is bounded."""

import json
import os
import subprocess
import sys
import threading

import pytest

from claude_chats import paths
from claude_chats.localstore import db, ftsparts
from claude_chats.localstore import hints as hintsmod
from claude_chats.localstore.journal import Journal
from claude_chats.words import MATCH_ROWS
from tests.localstore.test_ftsparts import import_sessions, split_into_parts
from tests.support.stand_ins import chats

PROMPTS = ["deploy pipeline cache retry rollback", "quokka numbat retry step3 pipeline",
           "why does the deploy pipeline cache fail on step3", "rollback the cache item7 deploy quokka",
           "Deploy PIPELINE Cache retry", "xylophonic marimba retry deploy"]


def memo(conn):
    return {w: n for w, n in conn.execute("SELECT word, at_least FROM common_words")}


def counted_calls(monkeypatch):
    calls = []
    real = ftsparts.count_matches

    def counting(conn, match, limit, names=None):
        calls.append(match)
        return real(conn, match, limit, names)

    monkeypatch.setattr(ftsparts, "count_matches", counting)
    return calls


@pytest.mark.parametrize("parts", [0, 30], ids=["one-table", "in-parts"])
def test_hints_with_the_memo_are_the_hints_without_it(tmp_path, monkeypatch, parts):
    """With the cap at 20 messages (the journal's 200 hold the common words ~200 times), every prompt at
    every strength gives the same hints and the same counts from a memo it filled as from none, and
    the memo spares the counts of the words it knows."""
    monkeypatch.setattr(hintsmod, "MATCH_ROWS", 20)
    import_sessions(tmp_path, [40, 35, 50, 30, 45], marks={1: "quokka", 3: "quokka numbat"})
    calls = counted_calls(monkeypatch)
    with Journal.open() as journal:
        conn = journal.conn
        if parts:
            split_into_parts(conn, parts)
        names = ftsparts.tables(conn)
        for strength in (0.01, 0.3, 1.0, 1.9):
            for prompt in PROMPTS:
                conn.execute("DELETE FROM common_words")
                terms = hintsmod.prompt_terms(prompt)
                exact = [ftsparts.count_matches(conn, hintsmod._quote(t), 21, names) for t in terms]
                del calls[:]
                without = hintsmod.recall_hints(conn, prompt, None, strength=strength)
                assert len(calls) == len(terms)
                learned = memo(conn)
                assert set(learned) == {t.lower() for t, n in zip(terms, exact) if n == 21}
                assert set(learned.values()) <= {21}
                del calls[:]
                assert hintsmod.recall_hints(conn, prompt, None, strength=strength) == without, (prompt, strength)
                assert len(calls) == len(terms) - len(learned)   # the known words were not counted again
                assert hintsmod.word_counts(conn, terms, names) == exact
        assert any(hintsmod.recall_hints(conn, p, None, strength=0.01) for p in PROMPTS)   # some hints at all


def test_a_memo_made_under_a_lower_cap_is_not_taken(tmp_path, monkeypatch):
    """A word remembered as held by at least 21 messages says nothing to a version that counts to 2,001."""
    import_sessions(tmp_path, [40, 35])
    with Journal.open() as journal:
        conn = journal.conn
        conn.execute("INSERT INTO common_words VALUES ('retry', 21)")
        calls = counted_calls(monkeypatch)
        assert hintsmod.word_counts(conn, ["retry", "deploy"], ftsparts.tables(conn)) == [26, 75]
        assert len(calls) == 2


def test_a_purge_and_a_redaction_forget_every_word(tmp_path, monkeypatch):
    monkeypatch.setattr(hintsmod, "MATCH_ROWS", 20)
    sessions = import_sessions(tmp_path, [40, 35, 50])
    with Journal.open() as journal:
        hintsmod.recall_hints(journal.conn, PROMPTS[0], None)
        assert memo(journal.conn)
    chats("purge", "--session", sessions[1], "--yes")
    with Journal.open() as journal:
        assert memo(journal.conn) == {}
        hintsmod.recall_hints(journal.conn, PROMPTS[0], None)
        assert memo(journal.conn)
        target = journal.conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) AND seq = 3", (sessions[0],)
                                      ).fetchall()[0][0]
        journal.conn.execute("UPDATE messages SET content = 'password: hunter2hunter2' WHERE id = ?", (target,))
        assert memo(journal.conn) == {}
        hintsmod.recall_hints(journal.conn, PROMPTS[0], None)
        assert memo(journal.conn)
        journal.conn.execute("UPDATE messages SET synced = 1 WHERE id = ?", (target,))   # not the text: kept
        assert memo(journal.conn)
    chats("redact", "--journal", "--yes")
    with Journal.open() as journal:
        assert "hunter2hunter2" not in journal.conn.execute("SELECT content FROM messages WHERE id = ?",
                                                            (target,)).fetchall()[0][0]
        assert memo(journal.conn) == {}


def test_remembering_waits_for_no_other_writer_and_never_raises(tmp_path):
    """Another process holding the write lock (a sync's batch): the memo is skipped at once, although the
    connection's busy timeout would wait 15 s; a read-only connection and a caller's transaction skip too."""
    import_sessions(tmp_path, [10])
    path = paths.journal_path()
    holder, conn = db.connect(path), db.connect(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = threading.Event()
        worker = threading.Thread(target=lambda: (hintsmod.remember_common(conn, ["retry"]), done.set()))
        worker.start()
        worker.join(5)
        assert done.is_set(), "remember_common waited for the write lock"
    finally:
        holder.execute("ROLLBACK")
    assert memo(conn) == {}
    conn.execute("BEGIN")
    hintsmod.remember_common(conn, ["retry"])
    conn.execute("COMMIT")
    assert memo(conn) == {}
    readonly = db.connect(path, readonly=True)
    hintsmod.remember_common(readonly, ["retry"])
    hintsmod.remember_common(conn, ["retry"])
    assert memo(conn) == {"retry": MATCH_ROWS + 1}


def test_what_is_remembered_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(hintsmod, "COMMON_WORDS", 3)
    import_sessions(tmp_path, [10])
    with Journal.open() as journal:
        conn = journal.conn
        hintsmod.remember_common(conn, ["a1", "b2", "c3", "d4", "e5"])
        assert len(memo(conn)) == 3
        assert hintsmod._common_key("x" * 65) is None and hintsmod._common_key("Ünïcode") == "Ünïcode"
        assert hintsmod._common_key("PostgreS") == "postgres"
        hostile = "'); DROP TABLE messages; --"
        monkeypatch.setattr(hintsmod, "COMMON_WORDS", 10)
        hintsmod.remember_common(conn, [hostile])
        assert hostile in memo(conn)
        assert hintsmod.known_common(conn, [hostile, "a1", "zz"], MATCH_ROWS + 1) == {hostile, "a1"}
        assert conn.execute("SELECT count(*) FROM messages").fetchall()[0][0] == 10


def test_the_hook_remembers_a_prompts_common_words_and_hints_the_same(tmp_path):
    """Whole processes: a journal of 2,150 messages, where the common words pass the real cap (2,000).
    The first prompt's hook counts them and remembers them; the next gives the same answer from the memo."""
    sessions = import_sessions(tmp_path, [600, 550, 500, 500], marks={1: "quokka numbat marimba"})
    transcript = tmp_path / "now.jsonl"
    transcript.write_text("")
    prompt = "quokka numbat marimba deploy pipeline retry"
    payload = json.dumps({"session_id": "sess-now", "transcript_path": str(transcript), "cwd": "/work/proj",
                          "hook_event_name": "UserPromptSubmit", "prompt": prompt}).encode()
    answers = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=payload, capture_output=True,
                              timeout=60, cwd=tmp_path, env=dict(os.environ))
        assert proc.returncode == 0 and proc.stderr == b""
        answers.append(proc.stdout)
        with Journal.open() as journal:
            assert set(memo(journal.conn)) == {"deploy", "pipeline"}   # retry: in a third of the lines
    assert answers[0] == answers[1] and sessions[1].encode() in answers[0]
