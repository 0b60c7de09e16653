"""Every real transcript in ../shared/corpus/transcripts, parsed and imported.

The corpus is read in place (never copied into the project); every test skips
cleanly when the folder is absent. What is checked: no crash, every user and
assistant line accounted for (stored, or skipped with a reason), no base64 in
stored text, subagents linked to their parent, compaction flagged, re-import
idempotent, per-session sequence numbers without gaps.
"""

import collections
import json
import pathlib
import re

import pytest

from claude_chats import transcript as t
from claude_chats.localstore import uuids, writer
from claude_chats.localstore.journal import Journal, discover

MESSAGE_TYPES = ("user", "assistant")
# The reasons a user or assistant line may be skipped for; anything else would be a line lost silently.
MESSAGE_SKIPS = {"warmup subagent", "empty user", "empty assistant", "no uuid", "no message", "malformed record"}
BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{300,}")
DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+[^,\s]{0,80};base64,")
WRAPPED = re.compile(r"^(?:[A-Za-z0-9+/]{60,}\r?\n){4,}", re.M)     # base64 wrapped at 64/76 columns
NOT_TYPED = ("<command-", "<local-command-", "<bash-input>", "<bash-stdout>", "<system-reminder>",
             "<ide_opened_file>", "<ide_selection>", "<task-notification>", "[Request interrupted by user",
             "Caveat: The messages below were generated", "This session is being continued from a previous")


def files_of(corpus):
    return [pathlib.Path(p) for p in discover([str(corpus)])]


def json_lines(path):
    """(raw bytes, object) of each non-blank line, decoded independently of the parser."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            out.append((raw, json.loads(raw)))
    return out


_imported = {}


@pytest.fixture
def imported_corpus(corpus, tmp_path_factory):
    """The whole corpus imported once into a journal of its own (read-only tests share it)."""
    if "journal" not in _imported:
        path = tmp_path_factory.mktemp("corpus-journal") / "journal.db"
        journal = Journal.open(str(path))
        _imported["stats"] = journal.import_files([str(p) for p in files_of(corpus)])
        _imported["journal"] = journal
    return _imported["journal"], _imported["stats"]


def file_id(journal, path):
    rows = journal.conn.execute("SELECT id, warmup FROM transcripts WHERE path = ?", (str(path),)).fetchall()
    return rows[0] if rows else (None, None)


# -- parsing -------------------------------------------------------------------------------------------

def test_corpus_is_the_one_described_in_format_md(corpus):
    files = files_of(corpus)
    assert len(files) > 50
    assert any(f.stat().st_size == 0 for f in files)
    assert any(f.name.startswith("agent-") and f.parent.name == "subagents" for f in files)
    assert any(f.name.startswith("agent-") and f.parent.name != "subagents" for f in files)


def test_every_file_parses_and_every_message_line_is_accounted_for(corpus):
    problems = []
    for path in files_of(corpus):
        lines = json_lines(path)
        result = t.parse_lines(path.read_bytes(), t.FileContext.for_path(str(path)))
        assert result.consumed == path.stat().st_size, path
        assert result.lines == len(lines), path
        message_uuids = [obj.get("uuid") for _, obj in lines if obj.get("type") in MESSAGE_TYPES]
        stored_lines = {r.uuid.split("#")[0] for r in result.records} & set(message_uuids)
        skipped = sum(n for reason, n in result.skipped.items() if reason in MESSAGE_SKIPS)
        if len(stored_lines) + skipped != len(message_uuids):
            problems.append(f"{path}: {len(message_uuids)} user/assistant lines, {len(stored_lines)} stored, "
                            f"{skipped} skipped ({result.skipped})")
        # Every line, of any type, gave records, a title or one counted skip.
        line_uuids = {r.uuid.split("#")[0] for r in result.records}
        if len(line_uuids) + len(result.titles) + sum(result.skipped.values()) != result.lines:
            problems.append(f"{path}: lines not accounted for")
    assert problems == []


def test_each_message_line_alone_gives_records_or_one_skip_with_a_reason(corpus):
    problems, reasons = [], collections.Counter()
    for path in files_of(corpus):
        ctx = t.FileContext.for_path(str(path))      # one context per file: the warmup decision carries over
        for raw, obj in json_lines(path):
            result = t.parse_lines(raw + b"\n", ctx)
            if obj.get("type") not in MESSAGE_TYPES:
                continue
            lines_stored = {r.uuid.split("#")[0] for r in result.records}
            if lines_stored:
                ok = lines_stored == {obj["uuid"]} and not result.skipped
            else:
                ok = sum(result.skipped.values()) == 1 and set(result.skipped) <= MESSAGE_SKIPS
            reasons.update(result.skipped)
            if not ok:
                problems.append(f"{path.name} {obj.get('uuid')}: {result.records} {result.skipped}")
    assert problems == []
    assert reasons["warmup subagent"] > 0     # the corpus has Warmup sidechains; they are counted, not lost


def test_records_are_well_formed(corpus):
    for path in files_of(corpus):
        for r in t.parse_lines(path.read_bytes(), t.FileContext.for_path(str(path))).records:
            assert r.kind in t.KINDS and r.role in ("user", "assistant", "system"), r
            assert r.uuid and r.session_id and r.text == r.text.strip() and r.text, r
            assert "\x00" not in r.text and "\x1b" not in r.text, r
            assert isinstance(r.is_sidechain, bool)
            if r.kind == t.TEXT and r.role == "user":
                assert not r.text.startswith(NOT_TYPED), (path, r.text[:200])


# -- the journal ---------------------------------------------------------------------------------------

def test_import_has_no_errors(imported_corpus):
    journal, stats = imported_corpus
    assert stats.errors == []
    assert stats.messages == journal.counts()["messages"] > 1000


def test_no_base64_in_stored_text(imported_corpus, corpus):
    journal, _ = imported_corpus
    assert any(b'"base64"' in p.read_bytes() for p in files_of(corpus))   # there is base64 to drop
    leaks = [(uuid, kind, m.group(0)[:60])
             for uuid, kind, content in journal.conn.execute("SELECT uuid, kind, content FROM messages")
             for m in (BASE64_RUN.search(content) or DATA_URI.search(content) or WRAPPED.search(content),)
             if m and not set(m.group(0).split()[0]) <= set("0123456789abcdefABCDEF")]
    assert leaks == []


def test_subagents_are_linked_to_their_parent(imported_corpus, corpus):
    journal, _ = imported_corpus
    checked = parents_found = 0
    for path in files_of(corpus):
        if not path.name.startswith("agent-"):
            continue
        agent = path.name[len("agent-"):-len(".jsonl")]
        fid, warmup = file_id(journal, path)
        rows = journal.conn.execute(
            "SELECT DISTINCT s.id, s.parent_session_id, s.agent_id FROM messages m JOIN session_numbers n ON n.number = m.session JOIN sessions s ON s.id = n.session_id "
            "WHERE m.file_id = ?", (fid,)).fetchall()
        if not rows:
            assert path.stat().st_size == 0 or warmup == 1, f"{path}: nothing stored and not a Warmup"
            continue
        for session_id, parent, agent_id in rows:
            assert parent and agent_id == agent and session_id == t.subagent_session_id(parent, agent), path
            if path.parent.name == "subagents":
                assert parent == path.parent.parent.name, path
                parent_file = path.parent.parent.parent / f"{parent}.jsonl"
            else:
                parent_file = path.parent / f"{parent}.jsonl"
            if parent_file.exists() and parent_file.stat().st_size:
                journal.session(parent)                 # raises SessionNotFound if the parent is missing
                parents_found += 1
        assert all(m["is_sidechain"] for s, _, _ in rows for m in journal.messages(s)), path
        checked += 1
    assert checked > 0 and parents_found > 0


def test_compaction_is_flagged_and_stays_in_its_session(imported_corpus, corpus):
    journal, _ = imported_corpus
    summaries = boundaries = 0
    for path in files_of(corpus):
        for _, obj in json_lines(path):
            if obj.get("type") == "user" and obj.get("isCompactSummary"):
                kind, session = journal.conn.execute(
                    "SELECT kind, session_id FROM messages JOIN session_numbers ON number = session WHERE uuid = ?", (uuids.pack(obj["uuid"]),)).fetchall()[0]
                assert (kind, session) == (t.COMPACT_SUMMARY, obj["sessionId"])
                summaries += 1
            elif obj.get("type") == "system" and obj.get("subtype") == "compact_boundary":
                kind, session = journal.conn.execute(
                    "SELECT kind, session_id FROM messages JOIN session_numbers ON number = session WHERE uuid = ?", (uuids.pack(obj["uuid"]),)).fetchall()[0]
                assert (kind, session) == (t.COMPACT_BOUNDARY, obj["sessionId"])
                boundaries += 1
    assert summaries > 0 and boundaries > 0


def test_summaries_name_a_session_only_when_their_leaf_is_in_the_same_file(imported_corpus, corpus):
    journal, _ = imported_corpus
    allowed = set()
    for path in files_of(corpus):
        lines = json_lines(path)
        uuids = {obj.get("uuid") for _, obj in lines}
        allowed.update(obj["summary"].strip() for _, obj in lines
                       if obj.get("type") == "summary" and obj.get("leafUuid") in uuids)
    used = {row[0] for row in journal.conn.execute("SELECT summary FROM sessions WHERE summary IS NOT NULL")}
    assert used <= allowed


def test_sequence_numbers_are_0_to_n_without_gaps(imported_corpus):
    journal, _ = imported_corpus
    by_session = collections.defaultdict(list)
    for session_id, seq in journal.conn.execute("SELECT session_id, seq FROM messages JOIN session_numbers ON number = session ORDER BY session_id, seq"):
        by_session[session_id].append(seq)
    next_seq = dict(journal.conn.execute("SELECT id, next_seq FROM sessions").fetchall())
    for session_id, seqs in by_session.items():
        assert seqs == list(range(len(seqs))), session_id
        assert next_seq[session_id] == len(seqs), session_id


def test_reimport_is_idempotent(corpus):
    files = [str(p) for p in files_of(corpus)]
    with Journal.open() as journal:
        first = journal.import_files(files)
        counts = journal.counts()
        again = journal.import_files(files)
        assert (again.messages, again.errors) == (0, [])
        assert journal.counts() == counts
        # Read everything again from offset 0 (as after a replaced file): uuids make it a no-op.
        journal.conn.execute("UPDATE transcripts SET inode = -1")
        reread = journal.import_files(files)
        assert (reread.messages, reread.errors) == (0, [])
        assert reread.duplicates == first.messages + first.duplicates
        assert journal.counts() == counts


def test_reading_in_small_pieces_stores_what_one_read_stores(corpus, imported_corpus, tmp_path):
    """The hook reads a few lines at a time; the result must not depend on where reads stop."""
    whole, _ = imported_corpus
    with Journal.open(str(tmp_path / "pieces.db")) as pieces:
        for path in files_of(corpus):
            writer.ingest_file(pieces.conn, str(path), chunk_bytes=4096)
        query = "SELECT uuid, session_id, seq, role, kind, content, message_id FROM messages JOIN session_numbers ON number = session ORDER BY uuid"
        assert pieces.conn.execute(query).fetchall() == whole.conn.execute(query).fetchall()
