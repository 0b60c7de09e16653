"""Each sealed full-text part's message lengths kept beside it (``localstore.ftslengths``, issue 22): a
search ranks with them exactly as with FTS5's own, a part changed since they were kept is ranked by FTS5
until ``chats sync`` keeps them again, a purge leaves none of what it erased, and what the table holds is
never trusted beyond its bounds."""

import random

from click.testing import CliRunner

from claude_chats.cli import main
from claude_chats.localstore import bm25, erase, ftslengths, ftsparts
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from tests.localstore.test_ftsparts import QUERIES, import_sessions, split_into_parts
from tests.support.stand_ins import chats, line, write

EXPRESSIONS = ['"retry"', '"step3" OR "rollback" OR "item7"', '"deploy pipeline" AND "step2"', '"cache"']


def varied_sessions(tmp_path, sizes):
    """Sessions of messages of many lengths (a word of their own, common words, filler), imported."""
    rng = random.Random(7)
    names = []
    for k, n in enumerate(sizes):
        session = f"sess-len-{k:02d}"
        texts = [f"zq{k} step{i % 7} deploy pipeline cache {'retry' if i % 3 == 0 else 'rollback'} item{i} "
                 + " ".join(f"filler{rng.randrange(50)}" for _ in range(rng.choice([0, 1, 5, 40, 300])))
                 for i in range(n)]
        write(tmp_path / "claude" / "projects" / "-work-proj" / f"{session}.jsonl",
              [line("user" if i % 2 == 0 else "assistant", t, session, i) for i, t in enumerate(texts)])
        names.append(session)
    chats("import")
    return names


def rankings(journal, lengths=True):
    """Each query's ranking [(message id, score)], best first, by a search whose ranker reads kept lengths
    (``lengths``) or asks FTS5 for every row."""
    search = LocalSearch(journal, scored_matches=10_000)
    if not lengths:
        search._ranker = bm25.Ranker(journal.conn)
    return [[(i, score) for i, _s, _q, score in search._ranked(match, f, 10_000)] for match, f in QUERIES] + \
        [[(i, score) for i, _s, _q, score in search._ranked(m, QUERIES[0][1], 10_000)] for m in EXPRESSIONS]


def parts_kept(conn, size=40):
    """The head split into parts of ``size`` messages, each part's lengths kept; the parts' names."""
    parts = split_into_parts(conn, size)
    assert ftslengths.write(conn) == len(parts)
    return parts


def kept(conn):
    return {part: (rows, tokens, first, blob) for part, rows, tokens, first, blob in
            conn.execute("SELECT part, rows, tokens, first, lengths FROM fulltext_lengths")}


def sizes_asked_of_fts5(conn, part):
    """{message id: its length in tokens} as FTS5's ``xColumnSize`` gives it, for every message of ``part``."""
    conn.register_fts5_function("test_size", lambda api: api.column_size(-1))
    return dict(conn.execute(f"SELECT rowid, test_size({part}) FROM {part} WHERE {part} MATCH '\"deploy\"'"))


def doubled(blob):
    from array import array
    lengths = array("H")
    lengths.frombytes(blob)
    return array("H", [min(v * 2, 60_000) for v in lengths]).tobytes()


def test_kept_lengths_are_fts5s_own_and_rank_every_message_as_fts5_does(tmp_path):
    varied_sessions(tmp_path, [70, 45, 90, 30])
    with Journal.open() as journal:
        conn = journal.conn
        parts = split_into_parts(conn, 40)
        write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-late.jsonl",
              [line("user", f"deploy pipeline cache retry late{i}", "sess-late", i) for i in range(6)])
        chats("import")   # a head beside the parts: always asked of FTS5
        assert ftsparts.rows(conn, ftsparts.HEAD) == 6
        asked = rankings(journal, lengths=False)
        assert rankings(journal) == asked and kept(conn) == {}    # nothing kept yet: FTS5 asked
        assert ftslengths.write(conn) == len(parts) == 6
        stored = kept(conn)
        for part in parts:
            rows, tokens, first, blob = stored[part]
            assert (rows, tokens) == ftsparts.totals(conn, part)
            lengths = ftslengths.Lengths(conn).of(part, (rows, tokens))
            truth = sizes_asked_of_fts5(conn, part)
            assert len(truth) == rows and {first + at: v for at, v in enumerate(lengths[1]) if v} == truth
        assert rankings(journal) == asked       # the same floats, message by message
        once = LocalSearch(journal, scored_matches=10_000)
        once._ranked('"retry"', QUERIES[0][1], 10)
        assert once._ranker._lengths._kept == {}     # a process searching once reads none of them
        once._ranked('"cache"', QUERIES[0][1], 10)
        assert set(once._ranker._lengths._kept) <= set(parts) and once._ranker._lengths._kept
        assert ftslengths.write(conn) == 0      # kept: nothing to write again
        # the kept lengths are what a search reads: made wrong (with the part's very totals), they rank wrong
        part = parts[0]
        conn.execute("UPDATE fulltext_lengths SET lengths = ? WHERE part = ?", (doubled(stored[part][3]), part))
        assert rankings(journal) != asked
        assert rankings(journal, lengths=False) == asked


def test_a_part_changed_since_is_ranked_by_fts5_until_sync_keeps_its_lengths_again(tmp_path):
    varied_sessions(tmp_path, [60, 50])
    with Journal.open() as journal:
        conn = journal.conn
        parts = parts_kept(conn)
        target_part = parts[0]
        blob = kept(conn)[target_part][3]
        conn.execute("UPDATE fulltext_lengths SET lengths = ? WHERE part = ?", (doubled(blob), target_part))
        # a message of that part redacted in place moves to the head: the part's totals change
        target = conn.execute(f"SELECT id FROM {target_part}_docsize LIMIT 1").fetchall()[0][0]
        conn.execute("UPDATE messages SET content = 'deploy pipeline cache retry redacted' WHERE id = ?", (target,))
        assert ftsparts.holding(conn, "SELECT ?", (target,)) == {ftsparts.HEAD: 1}
        assert rankings(journal) == rankings(journal, lengths=False)    # the wrong lengths are not of it now
    out = CliRunner().invoke(main, ["sync"]).stdout
    assert "error" not in out, out
    with Journal.open() as journal:
        rows, tokens, _first, again = kept(journal.conn)[target_part]
        assert (rows, tokens) == ftsparts.totals(journal.conn, target_part) and again != doubled(blob)
        assert rankings(journal) == rankings(journal, lengths=False)


def test_a_purge_keeps_no_length_of_the_parts_it_erased_from_and_a_dropped_parts_row_goes(tmp_path):
    first, second = import_sessions(tmp_path, [40, 30])   # the second's ids are 1-30
    with Journal.open() as journal:
        parts = split_into_parts(journal.conn, 30)
        ftslengths.write(journal.conn)
        assert set(kept(journal.conn)) == set(parts)
        erased_from = set(ftsparts.holding(journal.conn, "SELECT id FROM messages WHERE session = (SELECT number "
                                           "FROM session_numbers WHERE session_id = ?)", (first,)))
    chats("purge", "--session", first, "--yes")
    with Journal.open() as journal:
        assert erased_from and not erased_from & set(kept(journal.conn))
        assert set(kept(journal.conn)) == set(parts) - erased_from
    chats("purge", "--session", second, "--yes")   # the oldest part emptied and dropped
    with Journal.open() as journal:
        assert kept(journal.conn) == {}
        ftslengths.write(journal.conn)
        assert set(kept(journal.conn)) == set(ftsparts.tables(journal.conn)[1:]) == set()


def test_what_the_table_holds_is_used_only_within_its_bounds(tmp_path):
    varied_sessions(tmp_path, [60, 40])
    with Journal.open() as journal:
        conn = journal.conn
        parts = split_into_parts(conn, 50)
        asked = rankings(journal, lengths=False)
        ftslengths.write(conn)
        part = parts[0]
        rows, tokens, first, blob = kept(conn)[part]
        hostile = [
            ("lengths = ?", (blob[:-1],)),                         # an odd number of bytes
            ("lengths = ?", (b"\x01\x00" * (10 ** 6),)),           # far more ids than the part could span
            ("first = ?", ("1",)),                                  # not an integer
            ("first = ?", (-(2 ** 62),)),                           # every row's id out of its range
            ("first = ?", (first + 10 ** 6,)),
            ("lengths = ?", (b"",)),
            ("lengths = ?", ("text, not bytes",)),
            ("rows = ?", (rows + 1,)),                              # not of the part's totals
        ]
        for change, args in hostile:
            conn.execute("DELETE FROM fulltext_lengths WHERE part = ?", (part,))
            conn.execute("INSERT INTO fulltext_lengths (part, rows, tokens, first, lengths) VALUES (?, ?, ?, ?, ?)",
                         (part, rows, tokens, first, blob))
            conn.execute(f"UPDATE fulltext_lengths SET {change} WHERE part = ?", (*args, part))
            assert rankings(journal) == asked, change
        conn.execute("INSERT INTO fulltext_lengths VALUES ('messages_fts_x; DROP TABLE messages', 1, 1, 1, x'0100')")
        assert ftslengths.write(conn) >= 1      # a row naming no part goes; nothing is built from its name
        assert set(kept(conn)) == set(parts)
        assert rankings(journal) == asked


def test_a_journal_redaction_keeps_no_length_of_the_texts_it_rewrote(tmp_path):
    varied_sessions(tmp_path, [60, 50])
    with Journal.open() as journal:
        conn = journal.conn
        parts = parts_kept(conn)
        secret = conn.execute(f"SELECT id FROM {parts[1]}_docsize LIMIT 1").fetchall()[0][0]
        conn.execute("UPDATE messages SET content = content || ' sk-ant-api03-' || hex(randomblob(40)) WHERE id = ?",
                     (secret,))   # (the update moved it to the head; a real secret arrives with the message)
        conn.execute("DELETE FROM fulltext_lengths")
        assert ftsparts.seal(conn, at_least=1) is not None   # the head sealed, every part's lengths kept
        ftslengths.write(conn)
        holder = list(ftsparts.holding(conn, "SELECT ?", (secret,)))
        assert len(holder) == 1 and holder[0] in kept(conn)
        kept_before = set(kept(conn))
        counts = erase.redact_stored(conn, lambda text: text.split(" sk-ant-api03-")[0])
        assert counts["messages"] == 1
        assert not set(holder) & set(kept(conn)) and set(kept(conn)) == kept_before - set(holder)
        assert rankings(journal) == rankings(journal, lengths=False)
