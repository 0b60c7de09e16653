"""Times kept as integers in the journal (``localstore.stamps``, journal migration 0015).

Only Claude Code's own form (``2026-01-16T07:41:27.935Z``) of a moment that exists is packed, and it comes
back exactly; anything else a transcript may hold stays as it came. What reads times reads the text; a
time filter over a journal holding both forms selects what it selected when every time was text.
"""

import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claude_chats.errors import JournalError
from claude_chats.localstore import stamps, writer
from claude_chats.localstore.search import UTC_CREATED
from tests.support.journals import fulltext, store_session, write_corpus

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def js_iso(moment):
    """What JavaScript's ``toISOString`` writes (Claude Code's timestamps)."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999000)))
def test_every_moment_in_claude_codes_form_is_packed_and_comes_back_exactly(moment):
    text = js_iso(moment.replace(microsecond=moment.microsecond // 1000 * 1000, tzinfo=timezone.utc))
    packed = stamps.pack(text)
    assert type(packed) is int and stamps.unpack(packed) == text
    assert packed == (datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH) // timedelta(milliseconds=1)


@given(st.text(max_size=30))
def test_any_other_text_stays_as_it_came_and_unpack_gives_it_back(text):
    packed = stamps.pack(text)
    assert stamps.unpack(packed) == text
    if type(packed) is int:   # then it was exactly the form, and the order of times is the order of texts
        assert len(text) == 24 and text.endswith("Z")


@pytest.mark.parametrize("text", [
    "2026-01-16T07:41:27.935+00:00", "2026-01-16T07:41:27Z", "2026-01-16T07:41:27.935123Z",
    "2026-01-16 07:41:27.935Z", "2026-01-16T07:41:27.935z", "2023-02-29T12:00:00.000Z", "2026-04-31T00:00:00.000Z",
    "2026-13-01T00:00:00.000Z", "2026-01-16T24:00:00.000Z", "2016-12-31T23:59:60.000Z", "２026-01-16T07:41:27.935Z",
    "+2026-01-16T07:41:27.93Z", "", None, 1768549287935])
def test_what_is_not_claude_codes_form_of_a_real_moment_is_not_packed(text):
    assert stamps.pack(text) is text


def test_the_leap_day_and_both_ends_of_the_years_pack():
    for text in ("2024-02-29T12:00:00.000Z", "2000-02-29T00:00:00.000Z", "0000-01-01T00:00:00.000Z",
                 "9999-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"):
        assert stamps.unpack(stamps.pack(text)) == text
    assert stamps.pack("1900-02-29T00:00:00.000Z") == "1900-02-29T00:00:00.000Z"   # not a leap year


@pytest.mark.parametrize("stored", [stamps.pack("9999-12-31T23:59:59.999Z") + 1, stamps.pack("0000-01-01T00:00:00.000Z") - 1])
def test_a_stored_integer_this_version_could_not_have_written_is_a_journal_error(stored, journal_conn):
    with pytest.raises(JournalError, match="time stored in the journal"):
        stamps.unpack(stored)
    with pytest.raises(JournalError):
        journal_conn.execute("SELECT chats_time(?)", (stored,)).fetchall()


def test_an_import_stores_claude_codes_times_as_integers_and_readers_get_their_text(empty_journal, tmp_path):
    files = write_corpus(tmp_path / "projects")
    assert not empty_journal.import_files(files).errors
    conn = empty_journal.conn
    for table in ("messages", "raw_lines"):
        kinds = dict(conn.execute(f"SELECT typeof(created_at), count(*) FROM {table} GROUP BY 1").fetchall())
        assert set(kinds) <= {"integer", "null"} and kinds.get("integer", 0) > 10, (table, kinds)
    written = {json.loads(line)["uuid"]: json.loads(line)["timestamp"] for path in files
               for line in open(path, encoding="utf-8") if '"uuid"' in line and '"timestamp"' in line}
    read = {m["uuid"]: m["created_at"] for s in empty_journal.sessions(1000, None, True)
            for m in empty_journal.messages(s["session_id"])}
    assert read and all(written[u.split("#")[0].split("@")[0]] == t for u, t in read.items())


def test_a_doors_own_form_stays_text_beside_integers_and_reads_back(empty_journal):
    conn = empty_journal.conn
    store_session("s-mixed", ["first", "second", "third"], last_at="2026-03-01T10:00:00.000Z")
    number = writer.session_number(conn, "s-mixed")
    conn.execute("UPDATE messages SET created_at = ? WHERE session = ? AND seq = 1", ("2026-03-01T11:00:00+01:00", number))
    conn.execute("UPDATE messages SET created_at = NULL WHERE session = ? AND seq = 2", (number,))
    # (store_session binds as a door would: a text, which the untyped column keeps as text)
    conn.execute("UPDATE messages SET created_at = chats_pack_time(created_at) WHERE session = ? AND seq = 0", (number,))
    stored = conn.execute("SELECT typeof(created_at), chats_time(created_at) FROM messages WHERE session = ? "
                          "ORDER BY seq", (number,)).fetchall()
    assert stored == [("integer", "2026-03-01T10:00:00.000Z"), ("text", "2026-03-01T11:00:00+01:00"), ("null", None)]
    messages = empty_journal.messages("s-mixed")
    assert [m["created_at"] for m in messages] == ["2026-03-01T10:00:00.000Z", "2026-03-01T11:00:00+01:00", None]


def test_a_time_filter_over_both_forms_selects_what_it_did_over_texts(empty_journal):
    """Two messages at the same moment, one stored as Claude Code writes it (an integer now), one with its
    own offset (text): both are in a range around that moment and out of one that ends at it."""
    conn = empty_journal.conn
    store_session("s-a", ["quince one", "quince two"], last_at="2026-03-01T10:00:00.000Z")
    conn.execute("UPDATE messages SET created_at = chats_pack_time(created_at)")
    conn.execute("UPDATE messages SET created_at = '2026-03-01T11:00:00.000+01:00' WHERE seq = 1")
    assert [t for (t,) in conn.execute("SELECT typeof(created_at) FROM messages ORDER BY seq")] == ["integer", "text"]
    both = [h["seq"] for h in fulltext(empty_journal, "quince", since="2026-03-01T09:59:59Z",
                                       until="2026-03-01T10:00:00.001Z")]
    assert sorted(both) == [0, 1]
    assert fulltext(empty_journal, "quince", until="2026-03-01T10:00:00Z") == []
    assert fulltext(empty_journal, "quince", since="2026-03-01T10:00:00.001Z") == []
    assert "chats_pack_time" in UTC_CREATED


def test_the_dates_remembered_stay_exact_past_the_bound_of_what_is_remembered():
    """``unpack`` keeps the text of the days it has written (a reader's rows fall on few days), up to a bound:
    every time written after the memory was cleared is still its own."""
    first = datetime(2020, 1, 1, 12, 34, 56, 789000, tzinfo=timezone.utc)
    for n in range(3 * 4096):
        moment = first + timedelta(days=n, milliseconds=n)
        text = js_iso(moment)
        assert stamps.unpack(stamps.pack(text)) == text
    assert len(stamps._DATES) <= 4096
