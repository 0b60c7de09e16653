"""``chats redact --postgres``: the kept lines earlier versions pushed in clear, redacted in place.

Before issue 21 a kept line's values named as secrets only by their JSON keys (``"password":
...`` in a tool call's input) reached Postgres' ``raw_lines`` as written, and the push never
rewrites a row it finds there (``ON CONFLICT DO NOTHING``). Here Postgres holds such rows (the
journal's lines, zlib-packed, as an earlier version pushed them), then ``chats redact --postgres``
runs as a process with the run-time role's grants (RELIABILITY.md, "The Postgres roles"): every
secret is gone from every row, the other rows keep their exact bytes, ``--dry-run`` changes
nothing, a second run rewrites nothing, and ``chats restore`` on another machine writes no secret.
"""

import json
import signal
import zlib

import psycopg

from claude_chats import paths, rawlines
from claude_chats.faults import ENV as SYNC_DIE_AT
from claude_chats.localstore import keptlines
from claude_chats.localstore.journal import Journal
from tests.support.keyed_secrets import leaks, restored_elsewhere, run_chats, synced
from tests.support.machines import hostile_role
from tests.support.on_disk import holding


def _rows(url):
    """``{line_key: packed bytes}`` of Postgres' kept lines."""
    with psycopg.connect(url) as conn:
        return {key: bytes(line) for key, line in conn.execute(
            "SELECT line_key, line FROM raw_lines WHERE line IS NOT NULL")}


def _pushed_in_clear(url):
    """Postgres' kept lines replaced by the journal's, as written (nothing redacted), each packed with
    zlib: what a version before issue 21 pushed for a line whose secrets only their keys name."""
    with Journal.open(paths.journal_path()) as journal:
        raw = {key: keptlines.read_line(journal.conn, session, key, created, line, packed)
               for key, session, created, line, packed in journal.conn.execute(
                   "SELECT chats_uuid(key), n.session_id, chats_time(created_at), line, packed FROM raw_lines "
                   "JOIN session_numbers n ON n.number = raw_lines.session WHERE line IS NOT NULL")}
    with psycopg.connect(url) as conn:
        for key, line in raw.items():
            assert conn.execute("UPDATE raw_lines SET line = %s WHERE line_key = %s",
                                (zlib.compress(line, 6), key)).rowcount == 1
    return raw


def _unpacked(rows):
    return {key: rawlines.unpack(line) for key, line in rows.items()}


def test_redact_postgres_rewrites_the_lines_earlier_versions_pushed(pg_db_url, test_model_path, tmp_path,
                                                                   monkeypatch):
    synced(tmp_path, monkeypatch, pg_db_url, test_model_path)
    written = _pushed_in_clear(pg_db_url)
    before = _rows(pg_db_url)
    assert len(before) == 4 and leaks(b"".join(_unpacked(before).values())), "Postgres holds the secrets"
    clear = {key for key, line in written.items() if not leaks(line)}
    assert len(clear) == 2   # the first and the last line hold none

    with hostile_role(pg_db_url) as runtime_url:   # the run-time role: SELECT, INSERT, UPDATE, DELETE only
        monkeypatch.setenv("DATABASE_URL", runtime_url)
        dry = json.loads(run_chats(["redact", "--postgres", "--dry-run", "--json"]).stdout)
        assert (dry["read"], dry["rewritten"], dry["dry_run"]) == (4, 2, True), dry
        assert _rows(pg_db_url) == before, "--dry-run changed Postgres"

        done = json.loads(run_chats(["redact", "--postgres", "--yes", "--json"]).stdout)
        assert (done["read"], done["rewritten"], done["linked"], done["unreadable"]) == (4, 2, 0, 0), done
        assert done["placeholders"]["password"] == 2 and done["placeholders"]["aws-secret-key"] == 1, done
        assert any("VACUUM FULL raw_lines" in left for left in done["scrub"]["left"]), done["scrub"]

        text = run_chats(["redact", "--postgres", "--yes"]).stdout   # a second run, as a person reads it
        assert "read 4 kept transcript lines, rewrote 0" in text, text

    after = _rows(pg_db_url)
    assert after.keys() == before.keys()
    assert {key: after[key] for key in clear} == {key: before[key] for key in clear}, "a clean line was rewritten"
    lines = _unpacked(after)
    assert leaks(b"".join(lines.values())) == []
    calls = [json.loads(lines[key]) for key in lines if key not in clear]
    inputs = [c["message"]["content"][0]["input"] for c in calls if c["type"] == "assistant"]
    assert inputs and inputs[0]["password"] == "[REDACTED:password]" and inputs[0]["host"] == "db.internal"

    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    owner = json.loads(run_chats(["redact", "--postgres", "--yes", "--json"]).stdout)   # the tables' owner
    assert owner["rewritten"] == 0 and "VACUUM FULL raw_lines" in owner["scrub"]["done"], owner
    assert _rows(pg_db_url) == after

    restored = restored_elsewhere(tmp_path / "machine-b")
    assert leaks(b"".join(restored)) == []
    assert [json.loads(x)["type"] for x in restored[0].splitlines()] == ["user", "assistant", "user", "assistant"]


def test_redact_postgres_without_a_database_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    proc = run_chats(["redact", "--postgres", "--yes"], check=False)
    assert proc.returncode == 1 and "Postgres is not configured" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _as_an_earlier_version_left_the_journal():
    """The journal's lines pushed, but no sync of this version has looked at them yet (the state an
    earlier version leaves: it knew no such state)."""
    with Journal.open(paths.journal_path()) as journal:
        journal.conn.execute("DELETE FROM state WHERE key = 'raw_lines_keyed_redaction'")


NOTE = "`chats redact --postgres` rewrites them"


def test_the_first_sync_after_an_upgrade_says_so_once_and_status_until_redacted(pg_db_url, test_model_path,
                                                                                 tmp_path, monkeypatch):
    synced(tmp_path, monkeypatch, pg_db_url, test_model_path)
    _pushed_in_clear(pg_db_url)
    assert NOTE not in run_chats(["status", "--offline"]).stdout, "this version pushed them: nothing to say"
    _as_an_earlier_version_left_the_journal()

    first = run_chats(["sync"]).stdout
    assert NOTE in first, first
    assert NOTE not in run_chats(["sync"]).stdout, "said once"
    assert NOTE in run_chats(["status", "--offline"]).stdout
    assert json.loads(run_chats(["status", "--offline", "--json"]).stdout)["journal"]["kept_lines_to_redact"]

    run_chats(["redact", "--postgres", "--dry-run"])
    assert NOTE in run_chats(["status", "--offline"]).stdout, "a dry run cleans nothing"
    assert json.loads(run_chats(["redact", "--postgres", "--yes", "--json"]).stdout)["rewritten"] == 2
    assert NOTE not in run_chats(["status", "--offline"]).stdout


def test_the_owners_run_leaves_no_old_line_in_postgres_data_directory(pg_on_disk, test_model_path, tmp_path,
                                                                      monkeypatch):
    url, data_dir = pg_on_disk
    synced(tmp_path, monkeypatch, url, test_model_path)
    _pushed_in_clear(url)
    old = {line[16:80]: key for key, line in _rows(url).items() if leaks(rawlines.unpack(line))}
    assert len(old) == 2
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
    assert holding([data_dir], old), "the old lines never reached the data directory: the test proves nothing"

    done = json.loads(run_chats(["redact", "--postgres", "--yes", "--json"]).stdout)   # the owner, a superuser
    assert done["rewritten"] == 2 and done["scrub"]["left"] == [], done
    assert "VACUUM FULL raw_lines" in done["scrub"]["done"], done
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")   # what the server still holds in memory, written to its files
    assert holding([data_dir], old) == {}


def test_killed_midway_it_loses_nothing_and_the_next_run_finishes(pg_db_url, test_model_path, tmp_path,
                                                                  monkeypatch):
    synced(tmp_path, monkeypatch, pg_db_url, test_model_path)
    _pushed_in_clear(pg_db_url)
    before = _rows(pg_db_url)

    monkeypatch.setenv(SYNC_DIE_AT, "mid-rewrite")   # SIGKILL with the batch's updates not committed
    assert run_chats(["redact", "--postgres", "--yes"], check=False).returncode == -signal.SIGKILL
    assert _rows(pg_db_url) == before

    monkeypatch.setenv(SYNC_DIE_AT, "after-rewrite")   # committed; the scrub never ran
    assert run_chats(["redact", "--postgres", "--yes"], check=False).returncode == -signal.SIGKILL
    rewritten = _rows(pg_db_url)
    assert leaks(b"".join(_unpacked(rewritten).values())) == []

    monkeypatch.delenv(SYNC_DIE_AT)
    again = json.loads(run_chats(["redact", "--postgres", "--yes", "--json"]).stdout)
    assert again["rewritten"] == 0 and "VACUUM FULL raw_lines" in again["scrub"]["done"], again
    assert _rows(pg_db_url) == rewritten
