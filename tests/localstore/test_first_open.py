"""Opening a journal another process is writing while it is still new (not yet in WAL mode): what hooks
racing on the first turn of a new machine meet. SQLite answers BUSY there without waiting."""

import threading
import time

import apsw

from claude_chats.localstore import db


def test_a_new_journal_another_process_is_writing_opens_once_it_is_done(tmp_path):
    path = str(tmp_path / "journal.db")
    writer = apsw.Connection(path)          # the file in rollback mode, a write transaction held
    writer.set_busy_timeout(10_000)         # (as every journal connection: its COMMIT waits out the opener's reads;
    #                                         without it, it failed once in CI under load, and the opener waited 15 s)
    writer.execute("CREATE TABLE early (x)")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO early VALUES (1)")
    done = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    done.start()
    started = time.monotonic()
    try:
        conn = db.connect(path)             # before: "database is locked" at once
    finally:
        done.join()
    assert time.monotonic() - started >= 0.25
    assert db.user_version(conn) == len(db.migration_files())
    assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
    assert conn.execute("SELECT count(*) FROM messages").fetchall() == [(0,)]
    writer.close()
