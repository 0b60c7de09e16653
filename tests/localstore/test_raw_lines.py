"""Issue 17: the journal keeps each session's transcript lines that resuming needs (``rawlines``).

On the real 2.1.332 transcripts of tests/claude_code/fixtures: the request logs and system-prompt
copies are not kept (a link keeps the chain), everything else is, compressed, once.
"""

import json
import shutil

import pytest

from claude_chats import rawlines
from claude_chats.localstore import erase, keptlines, outbox, writer
from claude_chats.localstore.journal import Journal
from claude_chats.redact import redact
from tests.support import ROOT, lines
from tests.support.journals import kept_line_bytes

FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"
SUBAGENT = "21d465c4-7100-437b-b1c4-101f4e63db35"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _kind(obj):
    kind = obj.get("type")
    if kind == "attachment":
        return f"attachment/{obj['attachment']['type']}"
    return kind


def _import(journal, folder):
    stats = journal.import_files(sorted(str(p) for p in folder.rglob("*.jsonl")))
    assert not stats.errors
    return stats


def _rows(journal, session):
    """``(key, parent, line's bytes or None)`` of the session's kept lines, as restore reads them."""
    return [(key, parent, None if line is None else keptlines.read_line(journal.conn, session, key, created, line,
                                                                         packed))
            for key, parent, line, packed, created in journal.conn.execute(
                "SELECT chats_uuid(key), parent, line, packed, chats_time(created_at) FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session WHERE n.session_id = ? "
                "ORDER BY seq",
                (session,))]


def test_lines_resuming_needs_are_kept_and_the_noise_is_not(empty_journal):
    _import(empty_journal, FIXTURES / "print-subagent")
    path = next((FIXTURES / "print-subagent").glob("*.jsonl"))
    original = [json.loads(line) for line in path.read_bytes().splitlines()]
    kinds = {_kind(json.loads(line)) for _k, _p, line in _rows(empty_journal, SUBAGENT) if line}
    assert kinds >= {"user", "assistant", "attachment/environment", "attachment/skill_listing"}
    assert not kinds & {"api-request", "api-request-blob", "api-request-shape",
                        "attachment/prompt_snapshot", "queue-operation", "last-prompt", "cost-state",
                        "atis-latch", "tools-used"}
    snapshots = {o["uuid"]: o["parentUuid"] for o in original if _kind(o) == "attachment/prompt_snapshot"}
    links = {key: parent for key, parent, line in _rows(empty_journal, SUBAGENT) if line is None}
    assert links == snapshots
    # the subagent's lines are its own conversation's
    agent = empty_journal.kept_lines(SUBAGENT)
    assert set(agent) == {SUBAGENT, f"{SUBAGENT}:agent-a2848ca3cd1b3d814"}


def test_restored_lines_are_the_original_bytes_and_compressed(empty_journal):
    stats = writer.IngestStats()   # as the hook stores a line: as it read it (no zlib on its path)
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        writer.ingest_file(empty_journal.conn, str(path), stats)
    assert not stats.errors
    # sync compresses them all
    assert empty_journal.conn.execute("SELECT count(*) FROM raw_lines WHERE packed = 0").fetchall()[0][0] > 0
    assert outbox.pack_raw_lines(empty_journal.conn) > 0
    assert empty_journal.conn.execute("SELECT count(*) FROM raw_lines WHERE packed = 0").fetchall()[0][0] == 0
    total = stored = 0
    for session, key, created, line, packed in empty_journal.conn.execute(
            "SELECT n.session_id, chats_uuid(key), chats_time(created_at), line, packed FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session WHERE line IS NOT NULL"):
        raw = keptlines.read_line(empty_journal.conn, session, key, created, line, packed)
        json.loads(raw)
        total, stored = total + len(raw), stored + len(line)
    assert total / stored > 2, (total, stored)
    path = next((FIXTURES / "print-bash").glob("*.jsonl"))
    wanted = [line for line in path.read_bytes().splitlines() if rawlines.kept(json.loads(line))]
    session = path.stem
    assert rawlines.relink(empty_journal.kept_lines(session)[session]) != []
    assert [line for _k, _p, line in empty_journal.kept_lines(session)[session] if line is not None] == wanted


def test_a_reread_a_restored_copy_and_a_fork_store_no_line_twice(empty_journal, tmp_path):
    folder = tmp_path / "p"
    shutil.copytree(FIXTURES / "interactive-session", folder)
    _import(empty_journal, folder)
    session = "1222c558-d5a7-4e7e-9982-7ad0468e14bf"
    before = _rows(empty_journal, session)
    path = folder / f"{session}.jsonl"
    # the transcript deleted and written back from the journal (a new file, only the kept lines)
    restored = b"".join(line + b"\n" for line in rawlines.relink(empty_journal.kept_lines(session)[session]))
    path.unlink()
    path.write_bytes(restored)
    writer.ingest_file(empty_journal.conn, str(path))
    assert _rows(empty_journal, session) == before
    # the fork (its own session, the parent's lines copied) keeps a copy of its own
    fork = "e651fec6-15d8-4a37-889b-059cf8e8d538"
    fork_lines = [line for line in (folder / f"{fork}.jsonl").read_bytes().splitlines() if rawlines.kept(json.loads(line))]
    assert [line for _k, _p, line in empty_journal.kept_lines(fork)[fork] if line is not None] == fork_lines


def test_a_title_set_back_to_an_earlier_value_is_a_line_of_its_own(empty_journal, tmp_path):
    first, second, third = lines.user("one"), lines.user("two"), lines.user("three")
    title = {"type": "custom-title", "customTitle": "alpha", "sessionId": "sess-1"}
    other = {"type": "custom-title", "customTitle": "beta", "sessionId": "sess-1"}
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(first, title, second, other, third, title))
    writer.ingest_file(empty_journal.conn, str(path))
    writer.ingest_file(empty_journal.conn, str(path))
    kept = [json.loads(line) for line in rawlines.relink(empty_journal.kept_lines("sess-1")["sess-1"])]
    assert [o.get("customTitle") or o["message"]["content"] for o in kept] == \
        ["one", "alpha", "two", "beta", "three", "alpha"]


def test_relink_joins_the_chain_around_left_out_lines():
    a = b'{"type":"user","uuid":"a","parentUuid":null}'
    c = b'{"type":"assistant","uuid":"c","parentUuid":"b2"}'
    rows = [("a", None, a), ("b1", "a", None), ("b2", "b1", None), ("c", None, c)]
    assert [json.loads(x)["parentUuid"] for x in rawlines.relink(rows)] == [None, "a"]
    assert rawlines.relink([("c", None, c)]) == [c]   # an unknown parent is left as it is


def test_journal_redact_redacts_inside_the_json_of_kept_lines(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user(f'my token is {SECRET} and "quoted" \\ text ü')))
    with Journal.open(str(tmp_path / "j.db")) as journal:
        journal.import_files([str(path)], redact=redact)
        (_key, _parent, line), = _rows(journal, "sess-1")
    obj = json.loads(line)
    assert SECRET not in line.decode() and "[REDACTED:" in obj["message"]["content"]
    assert obj["message"]["content"].endswith('"quoted" \\ text ü')


def test_redact_journal_and_purge_reach_the_kept_lines(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user(f"token {SECRET}"), lines.assistant("ok")))
    writer.ingest_file(empty_journal.conn, str(path))
    counts = erase.redact_stored(empty_journal.conn, redact)
    assert counts["lines"] == 1
    assert all(SECRET.encode() not in line for _k, _p, line in _rows(empty_journal, "sess-1"))
    erase.purge_local(empty_journal.conn, erase.Target.of(session="sess-1"))
    assert _rows(empty_journal, "sess-1") == []


@pytest.mark.parametrize("kind, kept", [("user", True), ("system", True), ("ai-title", True), ("pr-link", True),
                                        ("some-future-type", True), ("api-request-blob", False), ("progress", False),
                                        ("queue-operation", False), ("last-prompt", False)])
def test_which_types_are_kept(kind, kept):
    assert rawlines.kept({"type": kind}) is kept


def test_the_hooks_lines_packed_by_sync_take_the_pages_of_imported_ones(tmp_path):
    """The hook stores lines as read; packing them must give their pages back (written again, not made
    smaller in place, which leaves every page as big as it was: 2x on the shared corpus)."""
    rng = __import__("random").Random(17)
    words = ["deploy", "retry", "migration", "sequence", "tokenizer", "websocket", "backoff", "cache", "index"]
    objs = []
    for n in range(600):
        result = " ".join(rng.choice(words) + str(rng.randint(0, 99)) for _ in range(220))
        objs.append(lines.user([{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": result}],
                               uid=f"u-{n}", toolUseResult={"stdout": result[:300], "stderr": ""}))
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*objs))

    def pages(journal):
        return journal.conn.execute("SELECT sum(pgsize), sum(payload) FROM dbstat WHERE name = 'raw_lines'").fetchall()[0]
    with Journal.open(str(tmp_path / "hook.db")) as hooked, Journal.open(str(tmp_path / "import.db")) as imported:
        stats = writer.IngestStats()
        writer.ingest_file(hooked.conn, str(path), stats)
        as_read = pages(hooked)
        assert outbox.pack_raw_lines(hooked.conn, batch=128) == 600
        assert not imported.import_files([str(path)]).errors
        packed, reference = pages(hooked), pages(imported)
        assert packed[1] == reference[1] < as_read[1] / 2, (packed, reference, as_read)
        assert packed[0] <= reference[0] * 1.15, (packed, reference)
        assert kept_line_bytes(hooked.conn) == path.read_bytes().splitlines()
