"""The journal's full-text index in parts (``localstore.ftsparts``, issue 22): full text over the parts
finds what one table finds, a purge erases from the parts its session is in (on disk, both of its ways),
a part left empty goes, a kill -9 mid-split keeps every message in exactly one table, `chats sync` splits
a journal's whole index from before the parts, and doctor checks and rebuilds the parts."""

import json
import math
import os
import subprocess
import sys
import uuid as uuidlib

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats import paths
from claude_chats.cli import main
from claude_chats.faults import ENV
from claude_chats.localstore import bm25, fts, ftsparts
from claude_chats.localstore import hints as hintsmod
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.core import Filters, Plan
from tests.support import ROOT
from tests.support.stand_ins import chats, line, write

COMMON = "deploy pipeline cache"


def session_rows(session, n, project="/work/proj", mark=None):
    """``n`` alternating lines of ``session``; each names the session's own word and its place, some words
    are common to every session, and ``mark`` (a word found nowhere else) is in its first line."""
    word = "zq" + session.replace("-", "")
    texts = [f"{word} step{i % 7} {COMMON} {'retry' if i % 3 == 0 else 'rollback'} item{i}" for i in range(n)]
    if mark:
        texts[0] += f" {mark}"
    return [line("user" if i % 2 == 0 else "assistant", t, session, i, cwd=project) for i, t in enumerate(texts)]


def import_sessions(tmp_path, sizes, marks=None):
    """Sessions ``s0``, ``s1`` ... of ``sizes`` messages, two projects, imported with `chats import`."""
    marks = marks or {}
    names = []
    for k, n in enumerate(sizes):
        session = f"sess-{k:02d}-{uuidlib.uuid4().hex[:6]}"
        project = "/work/proj" if k % 2 == 0 else "/work/other"
        write(tmp_path / "claude" / "projects" / project.replace("/", "-") / f"{session}.jsonl",
              session_rows(session, n, project, marks.get(k)))
        names.append(session)
    chats("import")
    return names


def split_into_parts(conn, size):
    """The head sealed and split into parts of ``size`` messages; the parts' names."""
    part = ftsparts.seal(conn, at_least=1)
    assert part is not None
    ftsparts.split(conn, part, size=size)
    return ftsparts.tables(conn)[1:]


QUERIES = [('"retry"', Filters()), ('"step3" OR "rollback"', Filters()), ('"item7"', Filters()),
           ('"retry"', Filters.build(project_path="/work/other")), ('"pipeline"', Filters.build(role="user"))]


def ranked_sets(journal, scored):
    search = LocalSearch(journal, scored_matches=scored)
    return [sorted(i for i, *_ in search._ranked(match, f, 10_000)) for match, f in QUERIES]


def ranked(journal, scored=10_000, limit=10_000):
    """Each query's ranking: [(message id, score)], best first."""
    search = LocalSearch(journal, scored_matches=scored)
    return [[(i, score) for i, _s, _q, score in search._ranked(match, f, limit)] for match, f in QUERIES]


EXPRESSIONS = ['"retry"', '"step3" OR "rollback" OR "item7"', '"deploy pipeline" AND "step2"',
               '("retry" OR "step5") NOT "item12"', '"cache" OR "nowhereword"']


def test_over_parts_every_message_scores_what_bm25_gives_it_in_one_table(tmp_path):
    import_sessions(tmp_path, [70, 45, 90, 30])
    with Journal.open() as journal:
        conn = journal.conn
        one = {m: dict(conn.execute("SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?",
                                    (m,)).fetchall()) for m in EXPRESSIONS}
        assert all(len(v) for m, v in one.items() if "nowhere" not in m)
        names = split_into_parts(conn, 40)
        ranker = bm25.Ranker(conn)
        for m in EXPRESSIONS:
            ranker.prepare(m, ftsparts.tables(conn))
            parts = {}
            for n in names:
                parts.update(conn.execute(f"SELECT rowid, {ranker.score(n)} FROM {n} WHERE {n} MATCH ?", (m,)))
                native = dict(conn.execute(f"SELECT rowid, bm25({n}) FROM {n} WHERE {n} MATCH ?", (m,)).fetchall())
                assert set(native) <= set(one[m])
            assert parts == one[m], m      # the same floats, message by message


def test_an_any_word_search_over_parts_scores_with_the_counts_it_chose_its_words_by(tmp_path):
    """The words' counts ``selective`` chooses by are the ranker's too (not counted twice): below the cap
    they read every table, so the scores are still one table's; a word over the cap is left out."""
    import_sessions(tmp_path, [70, 45, 90, 30])
    with Journal.open() as journal:
        conn = journal.conn
        chosen = '"step3" OR "item7"'   # "retry" (a third of the lines) is over a cap of 60
        one = dict(conn.execute("SELECT rowid, -bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ?",
                                (chosen,)).fetchall())
        assert 10 < len(one) < 60
        split_into_parts(conn, 40)
        search = LocalSearch(journal, match_rows=60)
        plan = Plan("retry step3 item7", ("fulltext",), Filters(), match="any", candidates=10_000, neighbours=0)
        found = {c.key: c.scores["fulltext"] for c in search.fulltext(plan)}
        assert found == one        # the same messages and floats as one table ranks the chosen words
        names = ftsparts.tables(conn)
        assert search._ranker._in_state(names) == {
            '"step3"': conn.execute("SELECT count(*) FROM messages WHERE content || ' ' LIKE '% step3 %'").fetchall()[0][0],
            '"item7"': conn.execute("SELECT count(*) FROM messages WHERE content || ' ' LIKE '% item7 %'").fetchall()[0][0]}


def test_phrase_counts_given_for_one_state_of_the_journal_are_forgotten_when_it_changes(tmp_path):
    import_sessions(tmp_path, [70, 45])
    with Journal.open() as journal:
        conn = journal.conn
        names = split_into_parts(conn, 40)
        ranker = bm25.Ranker(conn)
        ranker.counted({'"retry"': 1}, ftsparts.tables(conn))
        ranker.prepare('"retry"', ftsparts.tables(conn))
        taken = ranker.idf
        write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-late.jsonl", session_rows("sess-late", 3))
        chats("import")   # another process's commit
        ranker.prepare('"retry"', ftsparts.tables(conn))
        rows = sum(ftsparts.rows(conn, n) for n in ftsparts.tables(conn))
        hits = conn.execute("SELECT count(*) FROM messages WHERE content LIKE '% retry %'").fetchall()[0][0]
        assert taken != ranker.idf and hits > 1 and len(names) == 3
        assert ranker.idf == [math.log((rows - hits + 0.5) / (hits + 0.5))]


def test_a_sealed_parts_counts_are_kept_across_turns_and_counted_again_when_a_purge_changes_it(tmp_path):
    """A hook's turn (another process's commit to the head) makes the ranker count the head again, not the
    sealed parts; a purge that takes messages out of a part makes it count that part again. The statistics
    are always those of the journal as it is."""
    sessions = import_sessions(tmp_path, [70, 45, 60])
    with Journal.open() as journal:
        conn = journal.conn
        split_into_parts(conn, 40)
        counted = []

        class Watched(bm25.Ranker):
            def _count_in(self, name, phrase, token):
                counted.append(name)
                return super()._count_in(name, phrase, token)

        ranker = Watched(conn)

        def exact(word):
            names = ftsparts.tables(conn)
            rows = sum(ftsparts.rows(conn, n) for n in names)
            hits = conn.execute("SELECT count(*) FROM messages WHERE content LIKE ?", (f"% {word} %",)).fetchall()[0][0]
            return [math.log((rows - hits + 0.5) / (hits + 0.5))], names

        for step in ("first", "a turn", "a purge", "unchanged"):
            if step == "a turn":
                write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-late.jsonl", session_rows("sess-late", 3))
                chats("import")   # another process's commit, to the head
            if step == "a purge":
                chats("purge", "--session", sessions[0], "--yes")
            counted.clear()
            expected, names = exact("retry")
            ranker.prepare('"retry"', names)
            assert ranker.idf == expected, step
            parts = [n for n in names if n != ftsparts.HEAD]
            if step == "first":
                assert sorted(counted) == sorted(names)
            elif step == "a turn":
                assert counted == [ftsparts.HEAD]
            elif step == "a purge":   # the parts that held its messages changed: those, and the head
                assert ftsparts.HEAD in counted and 0 < len(set(counted) & set(parts)) < len(parts), counted
            else:
                assert counted == []   # the same state: nothing counted


def test_the_searchs_word_counts_take_the_kept_part_counts_and_count_as_count_matches_does(tmp_path):
    """``Ranker.matches`` counts a word as ``ftsparts.count_matches`` does, up to its limit, whatever the
    journal went through; a part it read whole is not read again for that word after a turn."""
    sessions = import_sessions(tmp_path, [70, 45, 60])
    with Journal.open() as journal:
        conn = journal.conn
        split_into_parts(conn, 40)
        ranker = bm25.Ranker(conn)
        read, names = [], []

        def trace(cursor, sql, bindings):
            read.extend(n for n in names if f"FROM {n} WHERE" in sql)
            return True

        words = ['"retry"', '"rollback"', '"step3"', '"zq' + sessions[1].replace("-", "") + '"', '"nowhereword"']
        for step in ("first", "again", "a turn", "a purge"):
            if step == "a turn":
                write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-late.jsonl", session_rows("sess-late", 3))
                chats("import")
            if step == "a purge":
                chats("purge", "--session", sessions[0], "--yes")
            names[:] = ftsparts.tables(conn)
            for word in words:
                for limit in (1, 5, 30, 10_000):
                    expected = ftsparts.count_matches(conn, word, limit)
                    read.clear()
                    conn.exec_trace = trace
                    try:
                        assert ranker.matches(word, names, limit) == expected, (step, word, limit)
                    finally:
                        conn.exec_trace = None
                    if step in ("again", "a turn") and limit == 10_000:
                        assert set(read) <= {ftsparts.HEAD}, (step, word, read)   # the parts' counts kept


WORDS = ["retry", "Retrying", "café", "CAFE", "naïve", "parse_config", "step3", "zz", "x\"y", "don't",
         "über", "日本語", "deploy pipeline", "", "-", "item1", "nowhereword"]


def test_a_phrase_counted_from_the_vocabularies_is_counted_as_matching_counts_it(tmp_path):
    """One token: from each table's fts5vocab; more or none: matched. The same count either way, before and
    after a seal renames the head (a vocabulary names its table, not what it was)."""
    import random
    rng = random.Random(7)
    alphabet = "aeiouxyzCAFÉéïü_-'\" 日本0123"
    words = WORDS + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(150)]
    texts = ["retry café naïve parse_config step3", "Retrying CAFE über x\"y don't aé", "日本語 item1 deploy pipeline"]
    write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-vocab.jsonl",
          [line("user", f"{texts[i % 3]} {words[i + len(WORDS)]} n{i}", "sess-vocab", i) for i in range(60)])
    chats("import")
    with Journal.open() as journal:
        conn = journal.conn
        split_into_parts(conn, 25)
        for round_ in range(2):
            names = ftsparts.tables(conn)
            ranker = bm25.Ranker(conn)
            found = 0
            for w in words:
                phrase = fts.quote(w)
                matched = sum(conn.execute(f"SELECT count(*) FROM {n} WHERE {n} MATCH ?", (phrase,)).fetchall()[0][0]
                              for n in names)
                assert ranker._count(phrase, names) == matched, phrase
                found += matched > 0
            assert found > 40 and len(ranker._vocabularies) == len(names)
            write(tmp_path / "claude" / "projects" / "-work-proj" / f"sess-late{round_}.jsonl",
                  [line("user", f"retry café über {i}", f"sess-late{round_}", i) for i in range(5)])
            chats("import")
            assert ftsparts.seal(conn, at_least=1) is not None


def test_the_hooks_hints_over_parts_score_as_over_one_table(tmp_path):
    """The prompt's words are counted once (``selective``'s counts reach the ranker): every hint scores what
    one table gives its message."""
    sessions = import_sessions(tmp_path, [40, 35, 50, 30], marks={1: "quokka", 3: "quokka"})
    prompt = "quokka retry step3 deploy"
    with Journal.open() as journal:
        conn = journal.conn
        one = {(s, q): round(-score, 2) for s, q, score in conn.execute(
            "SELECT n.session_id, m.seq, bm25(messages_fts) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
            "JOIN session_numbers n ON n.number = m.session "
            "WHERE messages_fts MATCH ?", ('"quokka" OR "retry" OR "step3" OR "deploy"',))}
        split_into_parts(conn, 30)
        assert len(ftsparts.tables(conn)) > 3
        hints = hintsmod.recall_hints(conn, prompt, "sess-now", strength=0.01)
        assert len(hints) >= 2 and {h["session_id"] for h in hints} <= set(sessions)
        assert hints[0]["score"] == max(one.values())
        assert all(h["score"] == one[(h["session_id"], h["seq"])] for h in hints)
        # without a current session (a library call) the same hints: none of them is left out
        assert hintsmod.recall_hints(conn, prompt, None, strength=0.01) == hints
        assert sessions[1] not in {h["session_id"] for h in hintsmod.recall_hints(conn, prompt, sessions[1], strength=0.01)}


@pytest.mark.parametrize("lookups", [0, 10_000], ids=["filtered", "looked-up"])
@pytest.mark.parametrize("parts", [0, 30], ids=["one-table", "in-parts"])
def test_the_hooks_hints_rank_only_messages_able_to_reach_the_bar_and_find_what_ranking_every_match_finds(
        tmp_path, monkeypatch, parts, lookups):
    """A prompt's hints rank only the messages whose words could add up to the bar (each word at most
    idf x (k1 + 1); a word no message holds, nothing), in the tables holding them, filtered from a table's
    matches or looked up one by one (``ABLE_LOOKUPS``): the hints are those of ranking every match, at any
    strength, and at the default strength far fewer messages are ranked."""
    monkeypatch.setattr(hintsmod, "ABLE_LOOKUPS", lookups)
    sessions = import_sessions(tmp_path, [40, 35, 50, 30, 45], marks={1: "quokka", 3: "quokka numbat"})
    own = ["zq" + s.replace("-", "") for s in sessions]
    prompts = [f"{own[0]} step3 rollback", f"quokka numbat {own[3]} retry", f"{own[1]} {own[2]} item7 xylophonic",
               "quokka retry step3 deploy", f"{own[4]} rollback cache item12", "xylophonic marimba quokka retry",
               f"{own[0]} {own[1]} {own[2]} {own[3]}", "deploy pipeline cache retry rollback"]
    ranked, able = [0], []
    score = bm25.Ranker._score

    def counted(self, api):
        ranked[0] += 1
        return score(self, api)

    monkeypatch.setattr(bm25.Ranker, "_score", counted)
    real_able = hintsmod._able

    def watched(*args):
        found = real_able(*args)
        able.append(found)
        return found

    with Journal.open() as journal:
        conn = journal.conn
        if parts:
            split_into_parts(conn, parts)
        ranked_with = ranked_every = 0
        for strength in (0.01, 0.3, 0.6, 1.0, 1.9):
            for prompt in prompts:
                monkeypatch.setattr(hintsmod, "_able", watched)
                ranked[0] = 0
                hints = hintsmod.recall_hints(conn, prompt, None, strength=strength)
                ranked_with += ranked[0] if strength == 1.9 else 0
                monkeypatch.setattr(hintsmod, "_able", lambda *args: None)   # every match ranked, as before
                ranked[0] = 0
                assert hintsmod.recall_hints(conn, prompt, None, strength=strength) == hints, (prompt, strength)
                ranked_every += ranked[0] if strength == 1.9 else 0
        assert any(a for a in able) and any(a == {} for a in able) and None in able   # each way taken
        if parts:   # at the default strength (the Python ranker scores each ranked message; one table: FTS5's)
            assert ranked_with * 3 < ranked_every, (ranked_with, ranked_every)


def test_the_most_an_expression_can_match_bounds_what_it_matches(tmp_path):
    """``Ranker.most``: the sum of its phrases' counts joined by OR, the least joined by AND (or nothing), else
    None; never fewer than the expression matches (a search then skips counting each table's matches)."""
    import_sessions(tmp_path, [70, 45, 90])
    with Journal.open() as journal:
        conn = journal.conn
        assert bm25.Ranker(conn).most('"retry"', ftsparts.tables(conn)) is None   # one table: bm25() counts
        names = split_into_parts(conn, 40)
        ranker = bm25.Ranker(conn)

        def matched(m):
            return sum(conn.execute(f"SELECT count(*) FROM {n} WHERE {n} MATCH ?", (m,)).fetchall()[0][0]
                       for n in ftsparts.tables(conn))
        retry, step3, item7 = matched('"retry"'), matched('"step3"'), matched('"item7"')
        assert len(names) > 3 and 0 < item7 < step3 < retry
        expected = {'"retry"': retry, '"step3" OR "item7"': step3 + item7, '"retry" AND "step3"': step3,
                    '"retry" "item7"': item7, '"step3" OR "nowhereword"': step3, '"nowhereword"': 0,
                    '"a ""OR"" b" OR "retry"': retry + matched('"a ""OR"" b"'),
                    '"retry" NOT "step3"': None, '("retry" OR "step3") AND "item7"': None,
                    '"retry" OR "step3" AND "item7"': None, 'NEAR("retry" "step3")': None, '"retr" *': None}
        for m, most in expected.items():
            assert ranker.most(m, ftsparts.tables(conn)) == most, m
            assert most is None or most >= matched(m), m


def test_full_text_over_parts_ranks_the_matches_one_table_ranks(tmp_path):
    import_sessions(tmp_path, [60, 45, 80, 30, 55])
    with Journal.open() as journal:
        whole = {scored: ranked_sets(journal, scored) for scored in (25, 10_000)}
        order = ranked(journal, 25, 10)
        assert ftsparts.tables(journal.conn) == ["messages_fts"]
        parts = split_into_parts(journal.conn, 70)
        assert len(parts) == 4 and ftsparts.rows(journal.conn, "messages_fts") == 0
        assert sum(ftsparts.rows(journal.conn, p) for p in parts) == 270
        assert ranked(journal, 25, 10) == order     # the same messages, scores and order as one table
        chats("import")    # nothing new: the parts stay as they are
        write(tmp_path / "claude" / "projects" / "-work-proj" / "sess-late.jsonl", session_rows("sess-late", 12))
        chats("import")    # a new session goes to the head
        assert ftsparts.rows(journal.conn, "messages_fts") == 12
        late = {i for (i,) in journal.conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 'sess-late')")}
        for scored in (25, 10_000):
            # the newest ``scored`` matches are the same messages, whichever table holds them
            got = [sorted(set(ids) - late) if scored == 10_000 else ids for ids in ranked_sets(journal, scored)]
            if scored == 10_000:
                assert got == whole[scored]
            else:   # the late session's matches are the newest now: the window moved by them, not by the parts
                for ids, before in zip(got, whole[scored]):
                    assert set(ids) - late <= set(before) and len(ids) == min(25, len(before) + len(set(ids) & late))
        every = journal.conn.execute("SELECT count(*) FROM messages WHERE content LIKE '% retry %'").fetchall()[0][0]
        assert ftsparts.count_matches(journal.conn, '"retry"', 10**6) == every
        # counted up to a limit, across the parts: exactly the limit when there are more
        assert [ftsparts.count_matches(journal.conn, '"retry"', n) for n in (1, 7, every - 1, every, every + 1)] == \
            [1, 7, every - 1, every, every]
        n, found = ftsparts.matching_rows(journal.conn, '"retry"', every - 1)
        assert n == every - 1 == sum(len(ids.split(",")) for ids in found.values()) and len(found) > 1


def test_a_small_purge_erases_in_place_and_a_large_one_merges_its_part_both_leave_nothing_on_disk(tmp_path):
    marks = {0: "Quillwortpartsmall", 1: "Saxifragepartlarge", 2: "Heliotropekept"}
    small, large, kept, *_ = import_sessions(tmp_path, [2, 150, 1100, 700], marks)
    with Journal.open() as journal:
        split_into_parts(journal.conn, 1000)
        where = {n: ftsparts.holding(journal.conn, "SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?)", (s,))
                 for n, s in (("small", small), ("large", large))}
    # 2 messages of a 1,000-message part: FTS5's secure-delete; 150: plain deletes, then that part merged
    assert set(where["small"]) == {"messages_fts_00000001"} and set(where["large"]) == {"messages_fts_00000001"}
    for session in (small, large):
        chats("purge", "--session", session, "--yes")
    data = b"".join(open(p, "rb").read() for p in (paths.journal_path(), paths.journal_path() + "-wal")
                    if os.path.exists(p))
    for word in ("Quillwortpartsmall", "Saxifragepartlarge", "zq" + small.replace("-", ""),
                 "zq" + large.replace("-", "")):
        assert word.encode() not in data and word.lower().encode() not in data, word
    assert b"heliotropekept" in data      # what is kept is still there: the search is meaningful
    result = json.loads(chats("search", "Heliotropekept", "--mode", "fulltext", "--json"))
    assert result["hits"] and result["hits"][0]["session_id"] == kept
    with Journal.open() as journal:
        assert ftsparts.coverage(journal.conn) == (0, 0, 0)
        assert sum(ftsparts.rows(journal.conn, n) for n in ftsparts.tables(journal.conn)) == 1800


def test_a_part_a_purge_empties_is_dropped(tmp_path):
    first, second = import_sessions(tmp_path, [40, 30])   # /work/other sorts first: the second's ids are 1-30
    with Journal.open() as journal:
        parts = split_into_parts(journal.conn, 30)
        assert len(parts) == 3
    chats("purge", "--session", second, "--yes")
    with Journal.open() as journal:
        left = ftsparts.tables(journal.conn)
        assert len(left) == 3 and parts[-1] not in left   # the oldest part held the second session alone
        names = {r[0] for r in journal.conn.execute("SELECT name FROM sqlite_master")}
        assert not [n for n in names if n.startswith(parts[-1])]          # its shadow tables with it
        triggers = " ".join(r[0] for r in journal.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'"))
        assert parts[-1] not in triggers
    chats("purge", "--session", first, "--yes")   # the triggers still work: the other parts go too
    with Journal.open() as journal:
        assert ftsparts.tables(journal.conn) == ["messages_fts"]
        assert journal.conn.execute("SELECT count(*) FROM messages").fetchall()[0][0] == 0


def test_a_message_redacted_in_place_moves_to_the_head(tmp_path):
    (session,) = import_sessions(tmp_path, [20])
    with Journal.open() as journal:
        split_into_parts(journal.conn, 8)
        target = journal.conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) AND seq = 3", (session,)
                                      ).fetchall()[0][0]
        journal.conn.execute("UPDATE messages SET content = 'redacted Marigoldupdated' WHERE id = ?", (target,))
        assert ftsparts.holding(journal.conn, "SELECT ?", (target,)) == {"messages_fts": 1}
        assert ftsparts.count_matches(journal.conn, '"Marigoldupdated"', 10) == 1
        assert ftsparts.coverage(journal.conn) == (0, 0, 0)


KILLER = """
import sys
from claude_chats.localstore import db, ftsparts
conn = db.connect(sys.argv[1])
ftsparts.split(conn, sys.argv[2], size=int(sys.argv[3]))
"""


@pytest.mark.parametrize("point", ["mid-split@2", "after-split-step@3"])
def test_killed_mid_split_every_message_stays_in_exactly_one_table(tmp_path, point):
    import_sessions(tmp_path, [90, 70, 60])
    with Journal.open() as journal:
        whole = ranked_sets(journal, 10_000)
        part = ftsparts.seal(journal.conn, at_least=1)
    env = {**os.environ, ENV: point, "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", KILLER, paths.journal_path(), part, "50"], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open() as journal:
        tables = ftsparts.tables(journal.conn)
        assert part in tables and len(tables) > 2            # cut off midway: the old part and some new ones
        assert ftsparts.coverage(journal.conn) == (0, 0, 0)
        assert ranked_sets(journal, 10_000) == whole           # searches meanwhile find every match once
    out = chats("import")                                      # the journal is written to as usual meanwhile
    assert "; 0 errors" in out
    with Journal.open() as journal:
        ftsparts.split(journal.conn, part, size=50)            # and the split goes on from where it was cut
        tables = ftsparts.tables(journal.conn)
        assert part not in tables and len(tables) == 1 + 5
        assert ftsparts.coverage(journal.conn) == (0, 0, 0) and ranked_sets(journal, 10_000) == whole


def test_maintain_combines_neighbouring_parts_small_enough_to_be_one(tmp_path, monkeypatch):
    """Parts of an older, smaller size (or thinned by purges) become one, neighbours only, newest first,
    up to the part size and a quarter; every message stays in exactly one table and scores as before."""
    import_sessions(tmp_path, [90, 70, 60])
    with Journal.open() as journal:
        conn = journal.conn
        whole = ranked_sets(journal, 10_000)
        parts = split_into_parts(conn, 20)
        assert [ftsparts.rows(conn, n) for n in parts] == [20] * 11
        monkeypatch.setattr(ftsparts, "PART_ROWS", 64)
        monkeypatch.setattr(ftsparts, "SPLIT_ABOVE", 128)
        monkeypatch.setattr(ftsparts, "COMBINE_STEP", 7)
        expected = ftsparts.to_move(conn)
        assert ftsparts.maintain(conn) == expected == 8 * 20
        tables = ftsparts.tables(conn)
        assert [ftsparts.rows(conn, n) for n in tables] == [0, 80, 80, 60]
        assert tables[1:] == [parts[0], parts[4], parts[8]]        # each keeps its newest part's place
        assert ftsparts.coverage(conn) == (0, 0, 0) and ranked_sets(journal, 10_000) == whole
        assert ftsparts.maintain(conn) == 0 and ftsparts.to_move(conn) == 0
        with pytest.raises(ValueError):
            ftsparts.combine(conn, tables[1], tables[3])            # not neighbours


COMBINE_KILLER = """
import sys
from claude_chats.localstore import db, ftsparts
ftsparts.COMBINE_STEP = 9
conn = db.connect(sys.argv[1])
ftsparts.combine(conn, sys.argv[2], sys.argv[3])
"""


@pytest.mark.parametrize("point", ["mid-combine@2", "after-combine-step@3"])
def test_killed_mid_combine_every_message_stays_in_exactly_one_table(tmp_path, point):
    import_sessions(tmp_path, [90, 70, 60])
    with Journal.open() as journal:
        whole = ranked_sets(journal, 10_000)
        newer, older = split_into_parts(journal.conn, 110)
    env = {**os.environ, ENV: point, "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", COMBINE_KILLER, paths.journal_path(), newer, older], env=env,
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open() as journal:
        conn = journal.conn
        assert ftsparts.tables(conn)[1:] == [newer, older] and 110 < ftsparts.rows(conn, newer) < 220
        assert ftsparts.coverage(conn) == (0, 0, 0)
        assert ranked_sets(journal, 10_000) == whole               # searches meanwhile find every match once
        ftsparts.combine(conn, newer, older)                        # and the combine goes on from where it was cut
        assert ftsparts.tables(conn)[1:] == [newer] and ftsparts.rows(conn, newer) == 220
        assert ftsparts.coverage(conn) == (0, 0, 0) and ranked_sets(journal, 10_000) == whole


def a_sealed_part_in_segments(tmp_path, sessions=12):
    """A journal whose head was written by many transactions (a `chats import` of ``sessions`` files, one
    each) and then sealed: the part, in more than one segment."""
    import_sessions(tmp_path, [30 + 7 * k for k in range(sessions)])
    with Journal.open() as journal:
        part = ftsparts.seal(journal.conn, at_least=1)
        assert ftsparts.segments(journal.conn, part) > 1
    return part


def word_counts(conn):
    return [ftsparts.count_matches(conn, w, 10_000) for w in ('"retry"', '"step3"', '"item7"', '"absentword"')]


def test_a_sealed_part_is_merged_into_one_segment_a_bounded_step_at_a_time(tmp_path):
    part = a_sealed_part_in_segments(tmp_path)
    with Journal.open() as journal:
        conn = journal.conn
        whole, counts, before = ranked_sets(journal, 10_000), word_counts(conn), ftsparts.segments(conn, part)
        seen = []
        steps = ftsparts.merge(conn, part, pages=1, on_step=seen.append)
        assert ftsparts.segments(conn, part) == 1 and before > 1
        assert steps == len(seen) >= 2 and set(seen) == {part}      # small steps, each committed
        assert ranked_sets(journal, 10_000) == whole and word_counts(conn) == counts
        conn.execute(f"INSERT INTO {part}({part}, rank) VALUES ('integrity-check', 1)")
        assert ftsparts.coverage(conn) == (0, 0, 0)
        assert ftsparts.merge(conn, part) == 0                       # merged: nothing more to do


MERGE_KILLER = """
import sys
from claude_chats.localstore import db, ftsparts
conn = db.connect(sys.argv[1])
ftsparts.merge(conn, sys.argv[2], pages=1)
"""


def test_killed_mid_merge_the_part_finds_every_match_and_the_next_merge_finishes(tmp_path):
    part = a_sealed_part_in_segments(tmp_path)
    with Journal.open() as journal:
        whole, counts = ranked_sets(journal, 10_000), word_counts(journal.conn)
    env = {**os.environ, ENV: "mid-merge@2", "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", MERGE_KILLER, paths.journal_path(), part], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    with Journal.open() as journal:
        conn = journal.conn
        assert ftsparts.segments(conn, part) > 1                     # cut off midway
        assert ranked_sets(journal, 10_000) == whole and word_counts(conn) == counts
        ftsparts.merge(conn, part, pages=2)
        assert ftsparts.segments(conn, part) == 1
        assert ranked_sets(journal, 10_000) == whole and word_counts(conn) == counts
        conn.execute(f"INSERT INTO {part}({part}, rank) VALUES ('integrity-check', 1)")


def test_sync_merges_every_sealed_part_into_one_segment_once(tmp_path):
    part = a_sealed_part_in_segments(tmp_path)
    with Journal.open() as journal:
        whole = ranked_sets(journal, 10_000)
    out = CliRunner().invoke(main, ["sync"]).stdout
    assert "full-text index: 1 sealed part merged into one segment (" in out and "error" not in out, out
    with Journal.open() as journal:
        assert ftsparts.segments(journal.conn, part) == 1 and ranked_sets(journal, 10_000) == whole
    assert json.loads(CliRunner().invoke(main, ["sync", "--json"]).stdout)["fts_merged"] == 0   # once


def test_sync_splits_the_whole_index_of_a_journal_from_before_the_parts(tmp_path, monkeypatch):
    import_sessions(tmp_path, [120, 100])
    with Journal.open() as journal:
        whole = ranked_sets(journal, 10_000)
        ftsparts.seal(journal.conn, at_least=1)              # one big part, as migration 0008 leaves an old index
    monkeypatch.setattr(ftsparts, "PART_ROWS", 64)
    monkeypatch.setattr(ftsparts, "SPLIT_ABOVE", 128)
    # no model here: the sync embeds nothing, and still keeps the index in parts
    report = json.loads(CliRunner().invoke(main, ["sync", "--json"]).stdout)
    assert report["fts_moved"] == 220 and not [e for e in report["errors"] if "full-text" in e]
    with Journal.open() as journal:
        tables = ftsparts.tables(journal.conn)
        assert [ftsparts.rows(journal.conn, n) for n in tables] == [0, 28, 64, 64, 64]   # newest first
        assert ranked_sets(journal, 10_000) == whole
    assert json.loads(CliRunner().invoke(main, ["sync", "--json"]).stdout)["fts_moved"] == 0   # once


def test_a_sync_that_splits_says_so_as_it_goes(tmp_path, monkeypatch):
    """The split (106 s at 1M, once) is shown by the progress of `chats sync` and kept for `chats status`."""
    from claude_chats.sync.runner import run_sync
    from tests.support.fakes import HashEmbedder

    import_sessions(tmp_path, [120, 100])
    with Journal.open() as journal:
        ftsparts.seal(journal.conn, at_least=1)
    monkeypatch.setattr(ftsparts, "PART_ROWS", 64)
    monkeypatch.setattr(ftsparts, "SPLIT_ABOVE", 128)
    steps = []
    report = run_sync(provider=HashEmbedder(), progress=lambda p: steps.append(p.step) if p.step else None)
    assert report.fts_moved == 220
    assert steps[-1] == "full-text index into parts: 220/220 messages (once)" and len(set(steps)) == 4, steps
    with Journal.open() as journal:
        kept = json.loads(journal.conn.execute("SELECT value FROM state WHERE key = 'sync_progress'").fetchall()[0][0])
    assert kept["step"] == steps[-1]


def test_doctor_checks_every_part_and_rebuilds_an_index_out_of_step(tmp_path):
    first, _ = import_sessions(tmp_path, [50, 40])
    with Journal.open() as journal:
        split_into_parts(journal.conn, 30)
        whole = ranked_sets(journal, 10_000)
    checks = {c["name"]: c for c in json.loads(CliRunner().invoke(main, ["doctor", "--full", "--json"]).stdout)}
    assert checks["fts"]["status"] == "pass" and "4 tables" in checks["fts"]["detail"]
    with Journal.open() as journal:   # a message the index lost (written with the triggers off, say)
        conn = journal.conn
        lost = conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) AND seq = 5", (first,)).fetchall()[0][0]
        table = next(iter(ftsparts.holding(conn, "SELECT ?", (lost,))))
        conn.execute(f"INSERT INTO {table}({table}, rowid, content) SELECT 'delete', id, content FROM messages "
                     f"WHERE id = ?", (lost,))
    result = CliRunner().invoke(main, ["doctor", "--json"])
    fts = next(c for c in json.loads(result.stdout) if c["name"] == "fts")
    assert fts["status"] == "fail" and "out of step" in fts["detail"] and "--rebuild-fts" in fts["fix"]
    result = CliRunner().invoke(main, ["doctor", "--rebuild-fts", "--full", "--json"])
    fts = next(c for c in json.loads(result.stdout) if c["name"] == "fts")
    assert fts["status"] == "pass" and "one table" in fts["detail"]
    with Journal.open() as journal:
        assert ftsparts.tables(journal.conn) == ["messages_fts"] and ranked_sets(journal, 10_000) == whole


@pytest.mark.parametrize("name", ["messages", "messages_fts_1", "messages_fts_00000001; DROP TABLE messages",
                                  "messages_fts_0000000a", "sqlite_master"])
def test_a_name_that_is_not_a_part_is_never_built_into_sql(name):
    with Journal.open() as journal:
        with pytest.raises(ValueError):
            ftsparts.optimize(journal.conn, name)
        journal.conn.execute("CREATE TABLE messages_fts_00000007(x)")    # a plain table named as a part
        assert ftsparts.tables(journal.conn) == ["messages_fts"]


def test_a_part_missing_its_shadow_table_fails_doctor_and_the_rebuild_mends_it(tmp_path):
    import_sessions(tmp_path, [30, 30])
    with Journal.open() as journal:
        parts = split_into_parts(journal.conn, 20)
        whole = ranked_sets(journal, 10_000)
        journal.conn.execute(f"DROP TABLE {parts[0]}_idx")
    fts = next(c for c in json.loads(CliRunner().invoke(main, ["doctor", "--json"]).stdout) if c["name"] == "fts")
    assert fts["status"] == "fail" and f"{parts[0]}_idx" in fts["detail"] and "--rebuild-fts" in fts["fix"]
    result = CliRunner().invoke(main, ["doctor", "--rebuild-fts", "--full", "--json"])
    fts = next(c for c in json.loads(result.stdout) if c["name"] == "fts")
    assert fts["status"] == "pass", fts
    with Journal.open() as journal:
        assert ranked_sets(journal, 10_000) == whole
        assert not [r for r in journal.conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'messages_fts_0%'")]
    chats("import")     # the journal takes writes again


@settings(max_examples=400, derandomize=True)
@given(st.lists(st.text(alphabet='"ab ()', min_size=1, max_size=8), min_size=1, max_size=6),
       st.sampled_from([" OR ", " AND ", " NOT "]))
def test_the_phrase_scanner_reads_every_phrase_the_search_writes(words, joiner):
    """``bm25.phrases`` (no ``re`` on the hook's path) over the expressions ``fts`` writes: every quoted
    word, quotes inside included, in order; as the regular expression it replaces reads them."""
    import re

    quoted = [fts.quote(w) for w in words]
    expression = "(" + joiner.join(quoted) + ")" if len(quoted) > 1 else quoted[0]
    assert bm25.phrases(expression) == quoted == re.findall(r'"(?:[^"]|"")*"', expression)


def test_a_seal_committed_during_a_search_hides_no_part(tmp_path, monkeypatch):
    """Another process seals the head (a rename) right after full text read the index's tables to choose
    where the newest matches are: the search still asks what it read (one snapshot, ``db.Snapshot``), so
    it misses no match."""
    from claude_chats.localstore import db
    from claude_chats.search.searcher import Searcher

    import_sessions(tmp_path, [40, 30])
    with Journal.open() as journal:
        searcher = Searcher(LocalSearch(journal), None, None)

        def hits():
            result = searcher.search("retry pipeline", mode="fulltext", limit=50, per_session=0, neighbours=0)
            return [(h["session_id"], h["seq"]) for h in result["hits"]]
        expected = hits()
        assert len(expected) >= 20
        other, real, sealed = db.connect(paths.journal_path()), ftsparts.tables, []

        def racing(conn):
            names = real(conn)
            if conn is journal.conn and not sealed and sys._getframe(1).f_code.co_name == "_newest":
                sealed.append(ftsparts.seal(other, at_least=1))   # committed by another connection, mid-search
            return names
        monkeypatch.setattr(ftsparts, "tables", racing)
        assert hits() == expected and sealed[0] is not None
        monkeypatch.setattr(ftsparts, "tables", real)
        assert ftsparts.tables(journal.conn)[1:] == [sealed[0]] and hits() == expected
        other.close()


def test_a_filtered_search_ranks_only_the_matches_that_pass_and_finds_what_ranking_every_match_finds(tmp_path):
    """Under a filter (a project, a role) each table's matches are filtered before they are ranked
    (``LocalSearch._fulltext(filtered=True)``): the same messages, scores and order as ranking every match
    and filtering after, over parts and the head, with every part's kept lengths or FTS5's own."""
    from claude_chats.localstore import db as journal_db
    from claude_chats.localstore import ftslengths
    from claude_chats.localstore.search import _filters

    import_sessions(tmp_path, [60, 45, 80, 30, 55])
    with Journal.open() as journal:
        split_into_parts(journal.conn, 70)
        write(tmp_path / "claude" / "projects" / "-work-other" / "sess-late.jsonl",
              session_rows("sess-late", 12, "/work/other"))
        chats("import")
        assert ftsparts.rows(journal.conn, "messages_fts") == 12
        ftslengths.write(journal.conn)
        filters = [Filters.build(project_path="/work/other"), Filters.build(role="user"),
                   Filters.build(project_path="/work/proj", role="assistant")]
        for lengths in (False, True):
            search = LocalSearch(journal)
            search._ranker = bm25.Ranker(journal.conn, lengths=lengths)
            for match in EXPRESSIONS:
                for f in filters:
                    where, args = _filters(f)
                    with journal_db.Snapshot(journal.conn):
                        cut = search._cut(match, where, args, False)
                        inside = search._fulltext(match, where, args, 10_000, cut, filtered=True)
                        after = search._fulltext(match, where, args, 10_000, cut, filtered=False)
                    assert inside == after, (match, f)
                    if "nowhere" not in match and match != '"deploy pipeline" AND "step2"':
                        assert inside, (match, f)
