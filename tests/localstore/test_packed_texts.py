"""Issue 22: a message's text kept packed once it is a day old (``localstore.texts``, ``outbox.pack_old_texts``). Every reader gives
back the text as written; the full-text index, the counts, a redaction and a purge stay exact; the hook
(a fresh process) reads packed texts; a damaged or hostile packed value is a one-line error, never
another text."""

import json
import os
import random
import subprocess
import sys
import time
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats import paths
from claude_chats.errors import JournalError
from claude_chats.localstore import db, erase, ftsparts, outbox, texts, writer
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.counts import assert_exact
from tests.support.fakes import HashEmbedder
from tests.support.fuzzing import index_matches_texts
from tests.support.hooks import CHATS
from tests.support.journals import kept_line_bytes

OLD, NOW = "2026-01-01T00:00:00.000Z", time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
TEXTS = [
    "the flaky migration test fails because the id sequence is not reset between runs, said the quokka",
    "Unicode too: naïve café, 東京 and an emoji 🦘, with quotes \" and a back\\slash; " * 3 + "packed",
    "short one",                                      # stays as written: shorter than texts.PACK_MIN
    "the deploy key was " + SECRET + " and it must not stay in the journal once redacted, numbat; " * 2 + "end",
]


def _write(folder, session, texts_, ts):
    path = os.path.join(folder, f"{session}.jsonl")
    objs = []
    for n, text in enumerate(texts_):
        objs.append(lines.user(text, session=session, uid=f"{session}-u{n}", ts=ts) if n % 2 == 0 else
                    lines.assistant([{"type": "text", "text": text}], session=session, uid=f"{session}-a{n}", ts=ts))
    with open(path, "wb") as fh:
        fh.write(lines.encode(*objs))
    return path


@pytest.fixture
def packed_journal():
    """A journal of an old session (packed by a sync) and a session of today (left as written)."""
    folder = os.path.join(paths.claude_projects_dir(), "-work-proj")
    os.makedirs(folder, exist_ok=True)
    old = _write(folder, "sess-old", TEXTS, OLD)
    new = _write(folder, "sess-new", [t.replace("quokka", "wombat") for t in TEXTS[:2]], NOW)
    with Journal.open() as journal:
        assert not journal.import_files([old, new]).errors
    report = run_sync(provider=HashEmbedder())
    assert not report.errors, report.errors
    return report


def _stored(conn):
    return {uuid: (typeof, text) for uuid, typeof, text in conn.execute(
        "SELECT uuid, typeof(content), chats_text(content) FROM messages")}


def test_a_sync_packs_old_texts_and_leaves_short_and_recent_ones(packed_journal):
    with Journal.open() as journal:
        stored = _stored(journal.conn)
        assert stored["sess-old-u0"] == ("blob", TEXTS[0]) and stored["sess-old-a1"] == ("blob", TEXTS[1])
        assert stored["sess-old-u2"] == ("text", "short one")
        assert stored["sess-new-u0"][0] == "text" and stored["sess-new-a1"][0] == "text"   # today's
        packed = journal.conn.execute("SELECT content FROM messages WHERE uuid = 'sess-old-u0'").fetchall()[0][0]
        assert len(packed) < len(TEXTS[0].encode()) and packed[:1] == texts.PACKED
    with Journal.open() as journal:
        assert index_matches_texts(journal.conn)
    assert packed_journal.texts_packed == 3 and stored["sess-old-a3"][0] == "blob" and packed_journal.texts_saved > 0


def test_every_reader_gives_the_text_back(packed_journal, tmp_path):
    with Journal.open() as journal:
        assert [m["content"] for m in journal.messages("sess-old")] == TEXTS
        assert [row[5] for row in journal.in_session_order() if row[1] == "sess-old"] == TEXTS
        searcher = Searcher(LocalSearch(journal))
        found = searcher.search("quokka", mode="fulltext", limit=3)
        assert {h["session_id"] for h in found["hits"]} == {"sess-old"}, found
        assert "quokka" in json.dumps(found["hits"][0])
        page = searcher.conversation("sess-old", limit=10, max_chars=100_000)
        assert [m["text"] for m in page["messages"]] == TEXTS
        # the kept lines refer to the packed texts: restore reads the transcript back byte for byte
        original = [ln for ln in open(os.path.join(paths.claude_projects_dir(), "-work-proj", "sess-old.jsonl"),
                                      "rb").read().splitlines()]
        assert [ln for ln in kept_line_bytes(journal.conn) if b"sess-old" in ln] == original
    assert_exact(paths.journal_path())   # the counts: the texts' lengths, packed or not


def test_the_full_text_index_stays_exact_through_a_redaction_and_a_purge(packed_journal):
    with Journal.open() as journal:
        conn = journal.conn
        counts = erase.redact_stored(conn, lambda text: text.replace(SECRET, "[REDACTED]"))
        assert counts["messages"] == 1
        stored = _stored(conn)
        assert stored["sess-old-a3"] == ("text", TEXTS[3].replace(SECRET, "[REDACTED]"))
        searcher = Searcher(LocalSearch(journal))
        assert searcher.search(SECRET, mode="fulltext")["hits"] == []
        assert {h["session_id"] for h in searcher.search("numbat", mode="fulltext")["hits"]} == {"sess-old"}
        for name in ftsparts.tables(conn):
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 0)")
        assert ftsparts.coverage(conn) == (0, 0, 0) and index_matches_texts(conn)
    assert_exact(paths.journal_path())
    with Journal.open() as journal:
        erase.purge_local(journal.conn, erase.Target.of(session="sess-old"))
        conn = journal.conn
        for name in ftsparts.tables(conn):
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 0)")
        assert ftsparts.coverage(conn) == (0, 0, 0) and index_matches_texts(conn)
        assert Searcher(LocalSearch(journal)).search("quokka", mode="fulltext")["hits"] == []
    assert_exact(paths.journal_path())


def test_doctor_full_passes_a_packed_journal_and_rebuilding_the_index_reads_the_texts(packed_journal):
    out = subprocess.run([*CHATS, "doctor", "--full", "--json"], capture_output=True, text=True, timeout=300)
    fts = {c["name"]: c for c in json.loads(out.stdout)}["fts"]
    assert fts["status"] == "pass", fts
    with Journal.open() as journal:
        ftsparts.rebuild(journal.conn)
        found = Searcher(LocalSearch(journal)).search("quokka", mode="fulltext")["hits"]
        assert {h["session_id"] for h in found} == {"sess-old"}
        journal.conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 0)")


def test_the_hook_reads_packed_texts_as_a_fresh_process(packed_journal, tmp_path):
    transcript = tmp_path / "now.jsonl"
    transcript.write_bytes(lines.encode(lines.user("why does the flaky migration test fail", session="sess-now",
                                                   uid="now-1", ts=NOW)))
    payload = {"session_id": "sess-now", "transcript_path": str(transcript), "cwd": "/work/proj",
               "hook_event_name": "UserPromptSubmit", "prompt": "flaky migration test quokka sequence reset"}
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, cwd=tmp_path, env=dict(os.environ))
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "sess-old" in context and "quokka" in context, context   # the packed text, unpacked
    payload["hook_event_name"] = "Stop"
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, cwd=tmp_path, env=dict(os.environ))
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    with Journal.open() as journal:
        assert [m["content"] for m in journal.messages("sess-now")] == ["why does the flaky migration test fail"]


def test_packing_goes_on_where_a_stopped_run_left_and_waits_for_a_recent_message(tmp_path):
    folder = os.path.join(paths.claude_projects_dir(), "-work-proj")
    os.makedirs(folder, exist_ok=True)
    long = [f"message {n}: the quick brown fox jumps over the lazy dog, again and again and again" for n in range(9)]
    paths_ = [_write(folder, "s-a", long[:3], OLD), _write(folder, "s-b", long[3:6], NOW),
              _write(folder, "s-c", long[6:], OLD)]
    with Journal.open() as journal:
        assert not journal.import_files(paths_).errors
        conn = journal.conn

        def stop(packed, seen):
            raise KeyboardInterrupt   # after the first transaction: committed, the run cut there
        with pytest.raises(KeyboardInterrupt):
            outbox.pack_old_texts(conn, batch=2, on_step=stop)
        assert [t for _u, (t, _x) in sorted(_stored(conn).items())][:2] == ["blob", "blob"]
        assert outbox.pack_old_texts(conn, batch=2)[0] == 4   # s-a's last, s-c's three; s-b is today's
        kinds = {u: t for u, (t, _x) in _stored(conn).items()}
        assert {u for u, t in kinds.items() if t == "text"} == {"s-b-u0", "s-b-a1", "s-b-u2"}
        held = int(db.get_state(conn, outbox.TEXTS_UPTO))
        assert held < conn.execute("SELECT min(id) FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's-b')").fetchall()[0][0]
        assert outbox.pack_old_texts(conn, now=time.time() + 2 * 86_400)[0] == 3   # two days on: packed too
        assert all(t == "blob" for t, _x in _stored(conn).values())
        assert [m["content"] for s in ("s-a", "s-b", "s-c") for m in journal.messages(s)] == long
    assert_exact(paths.journal_path())


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=400),
                 st.text(alphabet="ab \x00\n", min_size=60, max_size=400)))
def test_a_text_packs_and_unpacks_exactly(text):
    packed = texts.pack(text)
    if packed is None:   # short, blank, holding a NUL, or no smaller packed
        raw = text.encode()
        assert len(text) < texts.PACK_MIN or not text.strip(" \t\n") or "\x00" in text \
            or len(zlib.compress(raw)) + 5 >= len(raw)
        return
    assert texts.unpack(packed) == text and texts.length_of(packed) == len(text)
    assert len(packed) < len(text.encode())


@pytest.mark.parametrize("value, says", [
    (b"\x01" + (10).to_bytes(4, "little") + b"not zlib at all", "is damaged"),
    (b"\x01" + (10).to_bytes(4, "little") + zlib.compress(b"0123456789")[:-3], "cut short"),
    (b"\x01" + (11).to_bytes(4, "little") + zlib.compress(b"0123456789"), "not the length"),
    (b"\x02" + (10).to_bytes(4, "little") + zlib.compress(b"0123456789"), "did not write"),
    (b"\x01", "did not write"),
    (b"\x01" + (2).to_bytes(4, "little") + zlib.compress(b"\xff\xfe"), "not UTF-8"),
])
def test_a_damaged_packed_text_is_an_error_naming_it_never_another_text(value, says):
    with pytest.raises(JournalError, match=says):
        texts.unpack(value)


def test_a_packed_bomb_stops_at_the_bound_and_a_hand_made_blob_fails_a_search_in_one_line(packed_journal):
    bomb = b"\x01" + (1 << 30).to_bytes(4, "little") + zlib.compress(b"a" * (8 << 20), 9)
    with pytest.raises(JournalError, match="more than 1048576 bytes"):
        texts.unpack(bomb, limit=1 << 20)
    with Journal.open() as journal:   # bytes of a packed text damaged in place (no trigger sees it)
        (rowid, size), = journal.conn.execute("SELECT id, length(content) FROM messages WHERE uuid = 'sess-old-u0'")
        with journal.conn.blob_open("main", "messages", "content", rowid, True) as blob:
            blob.seek(8)
            blob.write(b"\xff" * (size - 12))
    out = subprocess.run([*CHATS, "show", "sess-old"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "packed text" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_packing_gives_the_pages_back_and_keeps_every_vector(tmp_path):
    """The rows are written again, full: the messages take fewer pages (a row made smaller in place would
    leave every page as it was), and their vectors, kept lines and index entries are still theirs."""
    folder = os.path.join(paths.claude_projects_dir(), "-work-proj")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(22)
    words = [f"{a}{b}" for a in ("de", "re", "mi", "se", "to", "we", "ba", "qu") for b in ("ploy", "try", "grate", "quence",
                                                                                       "ken", "bsocket", "ckoff", "okka")]
    long = [" ".join(rng.choice(words) for _ in range(150)) + f" message {n}" for n in range(1200)]
    long[7] = ("the quick brown fox jumps over the lazy dog " * 8).strip()
    path = _write(folder, "s-big", long, OLD)
    with Journal.open() as journal:
        assert not journal.import_files([path]).errors
    report = run_sync(provider=HashEmbedder())   # embeds, then packs
    assert report.texts_packed == 1200 and not report.errors, report.errors
    with Journal.open() as journal:
        conn = journal.conn
        chunks = conn.execute("SELECT count(*) FROM chunks c JOIN messages m ON m.id = c.message_id "
                              "WHERE typeof(m.content) = 'blob'").fetchall()[0][0]
        assert chunks >= 1200
        pages = conn.execute("SELECT sum(pgsize), sum(payload) FROM dbstat WHERE name = 'messages'").fetchall()[0]
        text_bytes = sum(len(t.encode()) for t in long)
        assert pages[0] < 0.6 * text_bytes and pages[1] > 0.8 * pages[0], (pages, text_bytes)
        found = Searcher(LocalSearch(journal), provider_factory=HashEmbedder).search("quick brown fox jumps over the lazy dog", mode="semantic")
        assert found["hits"] and found["hits"][0]["seq"] == 7, found["hits"][:1]
        assert [m["content"] for m in journal.messages("s-big")] == long
        assert kept_line_bytes(conn) == open(path, "rb").read().splitlines()
    assert_exact(paths.journal_path())


def test_chats_sync_says_what_it_packed(monkeypatch):
    from claude_chats import models
    from tests.support.cli import chats

    class Provider(HashEmbedder):
        default_model = "hash-32"

        def __init__(self, **_settings):
            super().__init__()
    monkeypatch.setitem(models.PROVIDERS, "test-hash", Provider)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "test-hash")
    folder = os.path.join(paths.claude_projects_dir(), "-work-proj")
    os.makedirs(folder, exist_ok=True)
    path = _write(folder, "sess-old", TEXTS, OLD)
    assert chats("import", path).exit_code == 0
    out = chats("sync")
    assert out.exit_code == 0 and "journal: 3 old messages' text packed (" in out.stdout, out.stdout
    assert "text packed" not in chats("sync").stdout   # nothing left to pack: nothing said


def test_a_text_with_a_nul_character_stays_as_written_and_the_counts_stay_exact(tmp_path):
    """The reader strips NULs from transcript text; a row holding one all the same (another writer, a
    journal edited by hand) is not packed: SQL's length of it, which the counts hold, stops at the NUL."""
    folder = os.path.join(paths.claude_projects_dir(), "-work-proj")
    os.makedirs(folder, exist_ok=True)
    nul = "before the NUL \u0000 after it, long enough to be packed otherwise: " * 3
    path = _write(folder, "s-nul", [TEXTS[0]], OLD)
    with Journal.open() as journal:
        assert not journal.import_files([path]).errors
        journal.conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at) "
                             "VALUES ('s-nul-x', ?, 1, 'user', 'text', ?, ?)",
                             (writer.session_number(journal.conn, "s-nul"), nul, OLD))
        assert outbox.pack_old_texts(journal.conn)[0] == 1
        assert _stored(journal.conn)["s-nul-x"] == ("text", nul)
        assert texts.length_of(nul) == journal.conn.execute("SELECT length(?)", (nul,)).fetchall()[0][0] < len(nul)
    assert_exact(paths.journal_path())
