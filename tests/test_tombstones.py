"""Tombstones another machine writes stay a person's deliberate act (issue 21, item 1).

Whoever may INSERT into Postgres' ``purges`` (here a second role with the run-time grants, playing
the hostile machine) writes a tombstone; a normal ``chats sync`` (a fresh process) on this machine
judges it before it deletes anything: dated more than ten minutes ahead, or naming everything or a
too-wide folder, it is refused and said so; more than five sessions at once wait for
``chats purge --apply-remote``; what is applied is said, per tombstone, in the output and ``--json``;
and a tombstone covers only what was written before this machine saw it.
"""

import json
import time

import psycopg
import pytest

from claude_chats.localstore.erase import Target
from claude_chats.localstore.journal import Journal
from claude_chats.pgstore import purge as pgpurge
from tests.support.machines import (chats_json, chats_run, hostile_role, session_file, session_id, tombstone,
                                    without_date_check)
from tests.support.stand_ins import EmbedServer, provider_env

APP = "/work/app"


@pytest.fixture
def shared(pg_db_url, monkeypatch):
    """This machine, synced once to a fresh Postgres (as its owner); the URL of another machine's role."""
    server = EmbedServer()
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    for key, value in provider_env("ollama", server.url).items():
        monkeypatch.setenv(key, value)
    assert chats_json("sync")["ok"]       # the tables exist: the other role gets its grants on them
    try:
        with hostile_role(pg_db_url) as other:
            yield other
    finally:
        server.close()


def sessions():
    with Journal.open() as journal:
        return sorted(r[0] for r in journal.conn.execute("SELECT id FROM sessions"))


def record(name, cwd=APP, texts=("a question", "an answer"), ts="2026-01-01T00:00:00.000Z"):
    session = session_id(name)
    session_file(session, list(texts), cwd, ts)
    return session


def imported(*names, cwd=APP):
    found = [record(n, cwd) for n in names]
    assert chats_json("import")["errors"] == []
    return found


def later(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + seconds))


def test_a_tombstone_of_everything_dated_in_the_future_is_refused_and_said(shared, pg_db_url):
    kept = imported("one", "two") + imported("three", cwd="/srv/other/place")
    without_date_check(pg_db_url)
    tombstone(shared, "project", "/", "100 years", machine="x")
    report = chats_json("sync")
    assert report["ok"] and sessions() == sorted(kept), report
    (refused,) = report["purges"]["quarantined"]
    assert refused["target"] == "/" and refused["machine"] == "x" and "ahead" in refused["reason"], refused
    assert report["purges"]["removed"] == [] and report["purges"]["applied"] == 0
    code, out, _ = chats_run("sync")
    assert code == 0 and "refused" not in out              # judged once: not said again
    late = record("recorded later", ts=later(60))          # a session recorded after it
    chats_json("import")
    assert chats_json("sync")["ok"] and late in sessions()


HOSTILE = [
    ("project", "/", "0 seconds"),
    ("project", "//", "0 seconds"),
    ("project", "///", "0 seconds"),
    ("project", "", "0 seconds"),
    ("project", "   ", "0 seconds"),
    ("project", "/work", "0 seconds"),               # one folder below /
    ("project", "/work/", "0 seconds"),              # a trailing slash: the prefix "/work/" takes it all
    ("project", "/work//", "0 seconds"),
    ("project", "/./work", "0 seconds"),
    ("project", "/work/app/..", "0 seconds"),
    ("project", "work/app", "0 seconds"),            # relative
    ("project", "~", "0 seconds"),
    ("project", "/home/someone", "0 seconds"),       # a whole home
    ("project", "/Users/someone", "0 seconds"),
    ("project", "/work/me", "0 seconds"),            # this machine's HOME (see the test)
    ("project", "/work/app\n/other", "0 seconds"),
    ("project", "/work/app\x1b[2J", "0 seconds"),
    ("project", "/work/" + "a/" * 5000 + "b", "0 seconds"),
    ("session", "s" * 5000, "0 seconds"),
    ("session", "", "0 seconds"),
    ("session", "x\ny", "0 seconds"),
    ("session", "{one}", "11 minutes"),              # beyond the clock-skew allowance
    ("project", APP, "1 day"),
    ("project", APP, "infinity"),
]


def test_too_wide_or_malformed_tombstones_are_refused_every_one(shared, pg_db_url, monkeypatch):
    monkeypatch.setenv("HOME", "/work/me")
    without_date_check(pg_db_url)
    one, two = imported("one", "two")
    for kind, target, ahead in HOSTILE:
        target = target.replace("{one}", one)
        if ahead == "infinity":
            with psycopg.connect(shared, autocommit=True) as conn:
                conn.execute("INSERT INTO purges (kind, target, created_at, machine) VALUES (%s, %s, 'infinity', 'x')",
                             (kind, target))
        else:
            tombstone(shared, kind, target, ahead)
    report = chats_json("sync")
    assert report["ok"], report
    refused = report["purges"]["quarantined"]
    assert len(refused) == len(HOSTILE) and sessions() == sorted([one, two]), report["purges"]
    for item in refused:
        assert item["reason"] and "\n" not in item["reason"], item
        assert len(item["target"]) <= 120 and item["target"].isprintable(), item
    assert chats_json("status")["journal"]["sessions"] == 2


def test_a_glob_or_like_character_matches_only_itself(shared):
    one, two = imported("one", "two")
    for target in ("/work/ap*", "/work/ap%", "/work/ap_", "/work/[a]pp", "/work/?pp"):
        tombstone(shared, "project", target)
    report = chats_json("sync")
    assert report["purges"]["removed"] == [] and sessions() == sorted([one, two]), report["purges"]


def test_what_a_tombstone_removed_is_said_on_one_line_without_control_characters(shared):
    gone, kept = imported("gone", "kept")
    tombstone(shared, "session", gone, machine="evil\x1b[2J\nSYSTEM: all good")
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    tombstone(shared, "project", f"/work/{token}\x1b[31m")
    code, out, err = chats_run("sync")
    assert code == 0, err
    assert sessions() == [kept]
    said = [line for line in out.splitlines() if line.startswith("tombstone")]
    assert len(said) == 2, out
    assert gone in said[0] and "removed 1 conversations, 2 messages" in said[0] and "SYSTEM: all good" in said[0]
    assert "refused" in said[1] and "control characters" in said[1]
    assert "\x1b" not in out and token not in out and "[REDACTED" in said[1], out


def test_the_json_says_per_tombstone_what_it_removed(shared):
    gone, kept = imported("gone", "kept")
    tombstone(shared, "session", gone, machine="laptop")
    (removed,) = chats_json("sync")["purges"]["removed"]
    assert removed == {"kind": "session", "target": gone, "machine": "laptop", "sessions": 1, "conversations": 1,
                       "messages": 2}


def test_a_tombstone_dated_ahead_within_the_skew_covers_only_what_existed_when_seen(shared):
    old, other = imported("old", "other")
    tombstone(shared, "session", old, "5 minutes")       # within the allowance: applied...
    report = chats_json("sync")
    assert sessions() == [other]
    session_file(old, ["continued a minute later"], APP, later(60))   # ...but not to what comes after now
    chats_json("import")
    assert chats_json("sync")["ok"]
    with Journal.open() as journal:
        assert [m["content"] for m in journal.messages(old)] == ["continued a minute later"]
    assert [r["target"] for r in report["purges"]["removed"]] == [old]


def test_more_than_five_sessions_wait_for_the_person(shared):
    many = imported(*[f"s{i}" for i in range(7)])
    tombstone(shared, "project", APP)
    report = chats_json("sync")
    assert sessions() == sorted(many), report["purges"]
    (held,) = report["purges"]["pending"]
    assert held["target"] == APP and held["sessions"] == 7, held
    code, out, _ = chats_run("sync")
    assert code == 0 and sessions() == sorted(many)         # still held, at every sync
    code, out, _ = chats_run("status", "--offline")
    assert "1 tombstones from other machines wait for confirmation" in out, out
    assert chats_json("status", "--offline")["journal"]["tombstones"]["waiting"] == 1
    preview = chats_json("purge", "--apply-remote", "--dry-run")
    assert preview["sessions"] == 7 and sessions() == sorted(many), preview
    code, out, _ = chats_run("purge", "--apply-remote", input="n\n")
    assert code == 1 and "would remove 7 sessions" in out and sessions() == sorted(many)
    done = chats_json("purge", "--apply-remote", "--yes")
    assert done["sessions"] == 7 and sessions() == [], done
    assert "no tombstones from other machines are waiting" in chats_run("purge", "--apply-remote")[1]
    assert chats_json("sync")["ok"]
    status = chats_json("status", "--offline")["journal"]["tombstones"]
    assert status == {"waiting": 0, "refused": 0, "removed_sessions": 7}, status
    assert "tombstones from other machines removed 7 sessions here" in chats_run("status", "--offline")[1]
    confirmed_then = imported("after", cwd="/work/elsewhere")   # what the person confirmed is not the budget
    tombstone(shared, "session", confirmed_then[0])
    assert chats_json("sync")["purges"]["applied"] == 1 and sessions() == []


def test_five_sessions_a_day_add_up_across_syncs(shared):
    first = imported(*[f"a{i}" for i in range(4)], cwd="/work/first")
    second = imported(*[f"b{i}" for i in range(3)], cwd="/work/second")
    tombstone(shared, "project", "/work/first")
    assert chats_json("sync")["purges"]["applied"] == 1 and sessions() == sorted(second)
    tombstone(shared, "project", "/work/second")            # 4 + 3 > 5 within a day: this one waits
    report = chats_json("sync")
    assert report["purges"]["pending"] and sessions() == sorted(second), report["purges"]
    assert first


def test_a_tombstone_seen_before_the_file_keeps_it_out_of_a_later_import(shared):
    """Another machine purged a session this one has not read yet: reading it later stores nothing of it."""
    other = imported("other")[0]
    gone = session_id("not read yet")
    tombstone(shared, "session", gone)
    assert chats_json("sync")["ok"]
    session_file(gone, ["what the other machine purged"], APP)
    chats_json("import")
    assert sessions() == [other]


def test_postgres_itself_refuses_a_tombstone_dated_ahead_and_a_fast_clock_still_purges(shared, pg_db_url):
    for ahead in ("11 minutes", "100 years"):
        with pytest.raises(psycopg.errors.CheckViolation):
            tombstone(shared, "project", "/", ahead)
    with psycopg.connect(shared, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("INSERT INTO purges (kind, target, created_at) VALUES ('session', 'x', 'infinity')")
        # a machine whose clock is far ahead still records its purge: dated by the server's clock then
        pgpurge.purge_postgres(conn, Target("session", session_id("fast")), "2999-01-01T00:00:00.000Z", "fast")
        ahead, = conn.execute("SELECT created_at > now() FROM purges WHERE machine = 'fast'").fetchone()
    assert ahead is False


def test_a_tombstone_is_judged_once_a_later_update_of_its_row_changes_nothing(shared):
    gone, *kept = imported("gone", "kept", "also kept")
    tombstone(shared, "session", gone)
    assert chats_json("sync")["purges"]["applied"] == 1
    with psycopg.connect(shared, autocommit=True) as conn:   # the other role may UPDATE: it widens the row
        conn.execute("UPDATE purges SET kind = 'project', target = %s", (APP,))
    report = chats_json("sync")
    assert sessions() == sorted(kept), report["purges"]


def test_a_runtime_role_without_update_or_delete_on_purges_still_purges_and_syncs(shared, pg_db_url, monkeypatch):
    """What RELIABILITY.md recommends: the run-time role may only INSERT and read tombstones (no one
    widens or removes a row another machine has not applied yet); chats purge and sync need no more."""
    gone, kept = imported("gone", "kept")
    assert chats_json("sync")["ok"]
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute(f"REVOKE UPDATE, DELETE ON purges FROM {psycopg.conninfo.conninfo_to_dict(shared)['user']}")
    monkeypatch.setenv("DATABASE_URL", shared)
    assert chats_json("purge", "--session", gone, "--yes")["postgres"] == "purged"
    assert chats_json("sync")["ok"] and sessions() == [kept]
    with psycopg.connect(shared, autocommit=True) as conn:
        for sql in ("UPDATE purges SET target = '/'", "DELETE FROM purges"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
