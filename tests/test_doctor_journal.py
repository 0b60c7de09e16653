"""`chats doctor` (a process) on the journal: the cheap default check and `--full` (issue 22).

The default opens the journal, takes the write lock, checks the schema's version and tables, reads through
the WAL, counts the full-text index against the messages and runs ``PRAGMA quick_check`` on a small
journal; it says in one line that the full checks were skipped. ``--full`` adds SQLite's
``integrity_check`` and FTS5's ``integrity-check``.
"""

import json
import os
import subprocess

import apsw

from claude_chats import paths
from claude_chats.localstore.journal import Journal
from tests.support.hooks import CHATS
from tests.support.lines import conversation, encode


def journal_of(n=6):
    folder = os.path.join(paths.claude_projects_dir(), "-work-app")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "s-1.jsonl")
    with open(path, "wb") as fh:
        fh.write(encode(*conversation(n, session="s-1")))
    with Journal.open() as journal:
        assert journal.import_files([path]).errors == []
    return paths.journal_path()


def doctor(*args):
    out = subprocess.run(CHATS + ["doctor", *args], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    return out


def checks(*args):
    out = doctor("--json", *args)
    return {c["name"]: c for c in json.loads(out.stdout)}


def line_of(out, name):
    """The check's line and the line after it (its fix, when it has one)."""
    rows = out.stdout.splitlines()
    at = next(i for i, row in enumerate(rows) if row.split()[1:2] == [name])
    return rows[at], (rows[at + 1] if at + 1 < len(rows) else "")


def failing(name, in_row, in_fix, *args):
    """``chats doctor ARGS`` exits 1 with the check's FAIL line naming ``in_row`` and its fix line ``in_fix``."""
    out = doctor(*args)
    row, fix = line_of(out, name)
    assert out.returncode == 1 and row.startswith("FAIL") and in_row in row, (args, out.stdout)
    assert fix.split()[0] == "fix:" and in_fix in fix, fix
    return fix


def sql(statements):
    conn = apsw.Connection(paths.journal_path())
    conn.execute(statements)
    conn.close()


def test_default_passes_a_healthy_journal_and_says_the_full_checks_were_skipped():
    journal_of()
    out = doctor()
    assert line_of(out, "journal")[0].startswith("PASS") and "quick_check ok" in line_of(out, "journal")[0]
    assert line_of(out, "fts")[0].startswith("PASS")
    skipped = [row for row in out.stdout.splitlines() if "full checks skipped" in row]
    assert len(skipped) == 1 and "run `chats doctor --full`" in skipped[0], out.stdout
    ran = checks()
    assert "quick_check" in ran["journal"]["ran"] and "integrity_check" not in ran["journal"]["ran"]
    assert ran["fts"]["ran"] == ["present", "row count"]
    full = doctor("--full")
    assert "full checks skipped" not in full.stdout
    assert "integrity_check ok" in line_of(full, "journal")[0] and line_of(full, "fts")[0].startswith("PASS")
    ran = checks("--full")
    assert ran["journal"]["status"] == ran["fts"]["status"] == "pass"
    assert "integrity_check" in ran["journal"]["ran"] and "integrity-check" in ran["fts"]["ran"]


def test_full_finds_an_index_corrupted_behind_equal_counts():
    """One message indexed under other words: the counts agree, so only FTS5's integrity-check sees it."""
    journal_of()
    with Journal.open() as journal:
        rowid, content = journal.conn.execute("SELECT id, content FROM messages LIMIT 1").fetchall()[0]
    sql(f"INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', {rowid}, '{content}');"
        f"INSERT INTO messages_fts(rowid, content) VALUES ({rowid}, 'zebra words nobody wrote')")
    assert checks()["fts"]["status"] == "pass"                       # the cheap check's known limit
    failing("fts", "does not match the messages", "rebuild", "--full")


def test_both_fail_on_a_damaged_file():
    path = journal_of(40)
    sql("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(path, "r+b") as fh:                                     # every page but the header's
        for offset in range(4096, os.path.getsize(path), 4096):
            fh.seek(offset + 8)
            fh.write(b"\xff" * 64)
    for args in ((), ("--full",)):
        failing("journal", path, "move a damaged journal aside", *args)


def test_default_fails_on_a_file_that_is_not_sqlite():
    os.makedirs(os.path.dirname(paths.journal_path()), exist_ok=True)
    with open(paths.journal_path(), "wb") as fh:
        fh.write(b"these are my notes, not a database\n" * 200)
    failing("journal", "not a database", "move a damaged journal aside")


def test_default_fails_on_a_journal_of_a_newer_schema():
    journal_of()
    sql("PRAGMA user_version = 99")
    failing("journal", "newer claude-chats (schema 99", "upgrade claude-chats")


def test_default_fails_without_the_fts_index_and_its_fix_remakes_it():
    journal_of()
    sql("DROP TABLE messages_fts")
    fix = failing("fts", "full-text index is missing", "chats doctor --rebuild-fts")
    assert fix.split(": ", 1)[1] == "rebuild it from the messages: chats doctor --rebuild-fts"
    fts = checks("--rebuild-fts", "--full")["fts"]                     # the fix, as the person would run it
    assert fts["status"] == "pass", fts
    with Journal.open() as journal:
        assert journal.conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'fox'").fetchall()[0][0] == 6
