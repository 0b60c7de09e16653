"""Search over the journal: FTS5 and sqlite-vec legs, fusion, filters, degradation, refusal."""

import threading

import pytest

from claude_chats.errors import ProviderUnavailable, SearchError, SpaceMismatchError
from claude_chats.localstore import vectors
from claude_chats.localstore.fts import fts_match
from claude_chats.localstore.search import LocalSearch, _spans
from claude_chats.models import Chunk
from claude_chats.search.core import LEG_WEIGHTS, Candidate, cap_per_session, fuse
from claude_chats.search.searcher import Searcher
from tests.support.fakes import HashEmbedder, OtherEmbedder
from tests.support.journals import local_searcher, sessions_of


class NoModel(HashEmbedder):
    def __init__(self):
        raise ProviderUnavailable("the model file is missing (test)")


@pytest.fixture
def searcher(synced_journal):
    return local_searcher(synced_journal, HashEmbedder)


def test_fulltext_finds_the_message_with_the_words(searcher):
    result = searcher.search("port 5432 already in use", mode="fulltext")
    assert result["source"] == "local" and result["modes_run"] == ["fulltext"]
    top = result["hits"][0]
    assert (top["session_id"], top["seq"], top["role"]) == ("s-docker", 0, "user")
    assert top["project_path"] == "/work/alpha/services" and top["git_branch"] == "main"
    assert top["ranks"] == {"fulltext": 1} and top["scores"]["fulltext"] > 0
    assert top["timestamp"] == "2026-01-02T10:00:00.000Z"
    assert [c["seq"] for c in top["context"]] == [1]


def test_fulltext_matches_any_word_best_first(searcher):
    result = searcher.search("kubernetes OOMKilled", mode="fulltext")
    assert sessions_of(result)[0] == "s-k8s" and not result["notes"]
    both = searcher.search("OOMKilled CrashLoopBackOff memory", mode="fulltext", neighbours=0, per_session=0)
    assert [(h["session_id"], h["seq"]) for h in both["hits"]][:2] == [("s-k8s", 0), ("s-k8s", 1)]
    assert both["hits"][0]["scores"]["fulltext"] > 2 * both["hits"][1]["scores"]["fulltext"]


def test_fulltext_syntax_requires_all_words_then_falls_back_to_any(searcher):
    phrase = searcher.search('"kubernetes" OOMKilled', mode="fulltext")
    assert sessions_of(phrase)[0] == "s-k8s"
    assert any("some of them" in n for n in phrase["notes"])
    excluded = searcher.search("migration -rollback", mode="fulltext", per_session=0, limit=50, max_chars=None)
    assert len(excluded["hits"]) > 30 and all("rollback" not in h["text"] for h in excluded["hits"])


def test_hybrid_fuses_both_legs_with_weighted_rrf(searcher):
    result = searcher.search("flaky migration test sequence", mode="hybrid", per_session=0, limit=3)
    assert result["modes_run"] == ["fulltext", "semantic"]
    top = result["hits"][0]
    assert top["session_id"] == "s-migrate" and set(top["ranks"]) == {"fulltext", "semantic"}
    expected = sum(LEG_WEIGHTS[leg] / (60 + r) for leg, r in top["ranks"].items())
    assert LEG_WEIGHTS["semantic"] < LEG_WEIGHTS["fulltext"]
    assert top["score"] == pytest.approx(expected, abs=1e-6)
    plain = searcher.search("flaky migration test sequence", per_session=0, limit=3,
                            weights={"fulltext": 1, "semantic": 1})["hits"][0]
    assert plain["score"] == pytest.approx(sum(1 / (60 + r) for r in plain["ranks"].values()), abs=1e-6)
    assert top["chunk"] == {"start": 0, "end": top["chars"]}
    scores = [h["score"] for h in result["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_hybrid_matches_any_word_of_a_question(searcher):
    """A question shares few words with its answer: hybrid's full-text leg needs only one of them."""
    question = "why does the migration test fail on CI every other time?"
    hybrid = searcher.search(question, per_session=0, limit=10)
    ranked = [h for h in hybrid["hits"] if "fulltext" in h["ranks"]]
    assert ranked and ranked[0]["session_id"] == "s-migrate" and ranked[0]["seq"] == 0
    alone = searcher.search(question, per_session=0, limit=10, match="all")["hits"]
    assert not any("fulltext" in h["ranks"] for h in alone)


def test_neighbours_lend_their_full_text_score(searcher):
    """A reply that shares no word with the query is found through the question before it."""
    result = searcher.search("CrashLoopBackOff", mode="fulltext", per_session=0)
    found = [(h["session_id"], h["seq"]) for h in result["hits"]]
    assert found[:2] == [("s-k8s", 0), ("s-k8s", 1)]
    asked, answer = result["hits"][0]["scores"]["fulltext"], result["hits"][1]["scores"]["fulltext"]
    assert answer == pytest.approx(0.35 * asked)
    alone = searcher.search("CrashLoopBackOff", mode="fulltext", per_session=0, neighbours=0)
    assert [(h["session_id"], h["seq"]) for h in alone["hits"]] == [("s-k8s", 0)]
    # the filters choose what is ranked, not what lends: the user's question lends to the reply
    replies = searcher.search("CrashLoopBackOff", mode="fulltext", role="assistant", per_session=0)
    assert [(h["session_id"], h["seq"], h["role"]) for h in replies["hits"]] == [("s-k8s", 1, "assistant")]


def test_semantic_only(searcher):
    result = searcher.search("the pod is OOMKilled in CrashLoopBackOff", mode="semantic")
    assert result["modes_run"] == ["semantic"]
    assert result["hits"][0]["session_id"] == "s-k8s"
    assert set(result["hits"][0]["ranks"]) == {"semantic"}
    assert 0 < result["hits"][0]["scores"]["semantic"] <= 1.0001


def test_at_most_n_hits_per_session(searcher):
    capped = searcher.search("schema migration table", mode="fulltext", limit=5)
    counts = {s: sessions_of(capped).count(s) for s in sessions_of(capped)}
    assert counts["s-long"] == 2 and max(counts.values()) == 2
    uncapped = searcher.search("schema migration table", mode="fulltext", limit=5, per_session=0)
    assert sessions_of(uncapped).count("s-long") == 5


@pytest.mark.parametrize("mode", ["fulltext", "semantic", "hybrid"])
def test_filters(searcher, mode):
    def sessions(**filters):
        return set(sessions_of(searcher.search("migration", mode=mode, limit=50, per_session=0,
                                                  max_chars=100_000, **filters)))

    assert sessions(project_path="/work/alpha") >= {"s-migrate", "s-long"}
    assert "s-migrate:agent-a1" in sessions(project_path="/work/alpha/")
    assert sessions(project_path="/work/alpha/services") <= {"s-docker"}
    assert sessions(project_path="/work/alp") == set()
    assert sessions(session_id="s-long") == {"s-long"}
    assert sessions(include_subagents=False) & {"s-migrate:agent-a1"} == set()
    assert sessions(since="2026-01-07", until="2026-01-07") <= {"s-long"}
    assert sessions(until="2026-01-01") <= {"s-migrate", "s-migrate:agent-a1"}
    roles = {h["role"] for h in searcher.search("migration", mode=mode, role="assistant", limit=20)["hits"]}
    assert roles <= {"assistant"}


def test_kinds_filter(searcher):
    assert searcher.search("migration", mode="fulltext", kinds=["compact_summary"])["hits"] == []
    with pytest.raises(SearchError, match="unknown kind"):
        searcher.search("migration", kinds=["nope"])


def test_bad_input_is_a_clear_error(searcher):
    for options, message in (({"mode": "fuzzy"}, "mode must be"), ({"since": "last tuesday"}, "ISO date"),
                             ({"role": "robot"}, "role must be")):
        with pytest.raises(SearchError, match=message):
            searcher.search("x", **options)
    with pytest.raises(SearchError, match="empty"):
        searcher.search("   ")


@pytest.mark.parametrize("text", ['"unbalanced', "NEAR(a b)", "col:value", "* AND OR NOT", "🙂", "-", "a*b^c"])
def test_any_typed_text_is_safe(searcher, text):
    result = searcher.search(text, mode="fulltext")
    assert result["source"] == "local"


def test_websearch_syntax():
    assert fts_match("the flaky test") == '"flaky" AND "test"'
    assert fts_match('"exact phrase" -skip a or b') == '("exact phrase" AND ("a" OR "b")) NOT "skip"'
    assert fts_match("the") == '"the"'
    assert fts_match("!!!") is None
    assert fts_match("flaky migration", "any") == '"flaky" OR "migration"'


def test_no_vectors_degrades_hybrid_and_refuses_semantic(corpus_journal):
    searcher = local_searcher(corpus_journal, HashEmbedder)
    result = searcher.search("flaky migration test", mode="hybrid")
    assert result["modes_run"] == ["fulltext"] and result["hits"]
    assert any("no vectors" in n and "chats sync" in n for n in result["notes"])
    with pytest.raises(SearchError, match="no vectors"):
        searcher.search("flaky migration test", mode="semantic")


def test_no_model_degrades_hybrid(synced_journal):
    searcher = local_searcher(synced_journal, NoModel)
    result = searcher.search("flaky migration test")
    assert result["modes_run"] == ["fulltext"] and result["hits"]
    assert any("embedding model unavailable" in n for n in result["notes"])
    with pytest.raises(SearchError, match="model file is missing"):
        searcher.search("flaky migration test", mode="semantic")


def test_model_mismatch_refuses_semantic_and_hybrid(synced_journal):
    searcher = local_searcher(synced_journal, OtherEmbedder)
    for mode in ("semantic", "hybrid"):
        with pytest.raises(SpaceMismatchError) as info:
            searcher.search("flaky migration test", mode=mode)
        assert "hash-32-other" in str(info.value) and "test-hash hash-32 " in str(info.value)
    assert searcher.search("flaky migration test", mode="fulltext")["hits"]


def test_same_model_other_canary_is_refused(synced_journal):
    synced_journal.conn.execute("UPDATE spaces SET canary = ?", (bytes(4 * 32),))
    with pytest.raises(SpaceMismatchError, match="canary"):
        local_searcher(synced_journal, HashEmbedder).search("flaky migration test", mode="semantic")


def test_result_fits_the_budget(searcher):
    big = searcher.search("migration", mode="fulltext", limit=20, per_session=0, max_chars=100_000)
    small = searcher.search("migration", mode="fulltext", limit=20, per_session=0, max_chars=2_000)
    import json
    assert len(json.dumps(small, ensure_ascii=False)) <= 2_000 and small["truncated"]
    assert not big["truncated"] and len(big["hits"]) > len(small["hits"]) >= 1


def test_nothing_found_says_what_to_do(searcher):
    result = searcher.search("zebra xylophone", mode="fulltext", project_path="/work/beta")
    assert result["hits"] == []
    assert any("nothing found" in n and "project_path" in n for n in result["notes"])


def test_fuse_and_cap():
    def leg(name, *keys):
        return [Candidate(k, k[0], scores={name: 1.0}) for k in keys]

    fused = fuse({"fulltext": leg("fulltext", "a1", "b1", "a2"), "semantic": leg("semantic", "b1", "c1")},
                 {"fulltext": 60, "semantic": 60})
    assert [c.key for c in fused] == ["b1", "a1", "c1", "a2"]
    assert fused[0].ranks == {"fulltext": 2, "semantic": 1}
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert [c.key for c in cap_per_session(fused, 1, 10)] == ["b1", "a1", "c1"]
    weighted = fuse({"fulltext": leg("fulltext", "a1", "b1"), "semantic": leg("semantic", "b1", "a1")},
                    {"fulltext": 1, "semantic": 60})
    assert weighted[0].key == "a1"


def test_conversation_pages_and_recent_sessions(searcher):
    page = searcher.conversation("s-long", start_seq=5, limit=10)
    assert page["source"] == "local" and page["session"]["message_count"] == 30
    assert [m["seq"] for m in page["messages"]] == list(range(5, 15)) and page["next_start_seq"] == 15
    last = searcher.conversation("s-long", start_seq=25, limit=10)
    assert [m["seq"] for m in last["messages"]] == list(range(25, 30)) and last["next_start_seq"] is None
    ranged = searcher.conversation("s-long", start_seq=3, end_seq=4)
    assert [m["seq"] for m in ranged["messages"]] == [3, 4] and ranged["next_start_seq"] is None
    recent = searcher.recent_sessions(limit=3)["sessions"]
    assert [s["session_id"] for s in recent] == ["s-long", "s-async", "s-k8s"]
    assert {"name", "project_path", "git_branch", "started_at", "last_at", "message_count", "machine"} <= set(recent[0])
    alpha = searcher.recent_sessions(project_path="/work/alpha", include_subagents=True)["sessions"]
    assert {s["session_id"] for s in alpha} == {"s-migrate", "s-docker", "s-long", "s-migrate:agent-a1"}


def test_local_search_is_a_backend(corpus_journal):
    backend = LocalSearch(corpus_journal)
    assert backend.source == "local" and backend.spaces() == []
    assert Searcher(backend).search("docker", mode="fulltext")["hits"][0]["session_id"] == "s-docker"


def test_embedding_failure_mid_search_degrades_hybrid(synced_journal):
    failing = HashEmbedder()
    searcher = local_searcher(synced_journal, lambda: failing)
    searcher.search("docker port", mode="semantic")   # model loaded, canary checked
    failing.fail = True
    result = searcher.search("docker port")
    assert result["modes_run"] == ["fulltext"] and any("model failed" in n for n in result["notes"])
    with pytest.raises(SearchError, match="model failed"):
        searcher.search("docker port", mode="semantic")


def test_hybrid_embeds_the_query_while_its_full_text_leg_runs(synced_journal):
    """The query's embedding is begun before the backend runs its legs, not waited for first: this
    provider answers only once the full-text leg has started (or after 2 s, too late)."""
    full_text_started = threading.Event()

    class Watching(LocalSearch):
        def fulltext(self, plan):
            full_text_started.set()
            return super().fulltext(plan)

    class Patient(HashEmbedder):
        waited = []

        def embed_batch(self, texts, kind):
            if kind == "query":
                self.waited.append(full_text_started.wait(2))
            return super().embed_batch(texts, kind)

    provider = Patient()
    searcher = Searcher(Watching(synced_journal), provider_factory=lambda: provider)
    result = searcher.search("docker port")
    assert provider.waited == [True] and result["modes_run"] == ["fulltext", "semantic"]
    assert result["hits"][0]["session_id"] == "s-docker" and result["timings_ms"]["embed"] > 0
    assert not any("model failed" in n for n in result["notes"])


def test_full_text_ranks_the_newest_matches_of_a_common_word(tmp_path):
    """A word in every message: bm25 is computed for the newest ``scored_matches`` matches only (at a
    year of history ranking every match of a common word took a minute), with and without filters."""
    from claude_chats.localstore.journal import Journal
    from tests.support.stand_ins import chats as run_chats
    from tests.support.stand_ins import turns, write

    texts = ["zephyr zephyr zephyr zephyr"] + [f"a zephyr note number {n} about other things" for n in range(119)]
    write(tmp_path / "p" / "sess-common-1.jsonl", turns(texts[:60], "sess-common-1", cwd="/work/common"))
    write(tmp_path / "p" / "sess-common-2.jsonl", turns(texts[60:], "sess-common-2", cwd="/work/other"))
    run_chats("import", str(tmp_path / "p"))
    with Journal.open() as journal:
        ids = [i for (i,) in journal.conn.execute("SELECT id FROM messages ORDER BY id")]
        uuids = dict(journal.conn.execute("SELECT chats_uuid(uuid), id FROM messages").fetchall())
        for scored, oldest_found in ((2000, True), (50, False)):
            searcher = Searcher(LocalSearch(journal, scored_matches=scored), None, None)
            hits = searcher.search("zephyr", mode="fulltext", limit=10, per_session=0, context=0)["hits"]
            found = {uuids[h["uuid"]] for h in hits}
            assert (ids[0] in found) is oldest_found, (scored, hits[:2])   # the best match, and the oldest
            if not oldest_found:
                assert found <= set(ids[-50:])                            # every hit among the newest 50
            # a project whose matches are all older than the newest 50: reached, within 8 x 50 matches
            project = searcher.search("zephyr", mode="fulltext", limit=10, per_session=0, context=0,
                                      project_path="/work/common")["hits"]
            assert len(project) == 10 and all(h["session_id"] == "sess-common-1" for h in project)


def test_hybrid_legs_on_two_connections_find_what_one_connection_finds(synced_journal):
    """A hybrid search runs its vector leg on a second connection while the full-text leg runs: the
    candidates, their ranks and fused scores are those of the legs run one after the other, filters
    or not; a leg that fails raises as it does there; the second connection closes with the search."""
    from claude_chats.errors import ProviderError
    from claude_chats.search.core import Filters, Plan

    search = LocalSearch(synced_journal)
    provider = HashEmbedder()
    space_id = search.space(provider.space.key)["id"]
    queries = [("docker port", {}), ("migration failed on the users table", {}), ("flaky test", {"role": "user"}),
               ("postgres", {"project_path": "/work/alpha"}), ("zebra xylophone", {})]
    for text, filters in queries:
        plan = Plan(text, ("fulltext", "semantic"), Filters.build(**filters), vector=provider.embed_query(text),
                    space_id=space_id, match="any")
        apart = search.candidates(plan)
        helper = search._helper
        assert helper is not None and helper.conn is not search.conn
        search._helper, search._helper_failed = None, "one connection (test)"
        together = search.candidates(plan)
        search._helper, search._helper_failed = helper, None
        assert apart == together
    assert any(search.candidates(Plan("docker", ("fulltext", "semantic"), Filters.build(),
                                      vector=provider.embed_query("docker"), space_id=space_id)))

    class Failed:
        def result(self):
            raise ProviderError("the model died (test)")

    with pytest.raises(ProviderError, match="died"):
        search.candidates(Plan("docker", ("fulltext", "semantic"), Filters.build(), vector=Failed(), space_id=space_id))
    helper = search._helper
    search.close()
    assert search._helper is None
    with pytest.raises(Exception, match="closed|Closed"):
        helper.conn.execute("SELECT 1")


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_vector_leg_looks_chunks_up_a_batch_at_a_time_and_keeps_what_one_read_keeps(synced_journal, monkeypatch, batch):
    """``_preselected`` reads the chunks the index found best first, a batch at a time until enough
    messages pass the filters: the rows (which message, its best chunk, in order) are those of reading
    every chunk at once, filters or not, whether the limit is reached or not."""
    import json

    import numpy as np

    from claude_chats.localstore import search as local
    from claude_chats.search.core import Filters

    monkeypatch.setattr(local, "PRESELECT_BATCH", batch)
    search = LocalSearch(synced_journal)
    ids = np.array([i for (i,) in synced_journal.conn.execute("SELECT id FROM chunks ORDER BY id DESC")])
    assert len(ids) > 8
    similarities = np.linspace(0.9, 0.1, len(ids), dtype=np.float32)
    for filters in (Filters.build(), Filters.build(role="user"), Filters.build(project_path="/work/alpha")):
        where, args = local._filters(filters)
        every = dict((row[0], row[1:]) for row in synced_journal.conn.execute(
            "SELECT c.id, c.message_id, n.session_id, c.start_char, c.end_char FROM chunks c JOIN messages m "
            "ON m.id = c.message_id JOIN session_numbers n ON n.number = m.session JOIN sessions s ON s.id = n.session_id "
            "WHERE c.id IN "
            f"(SELECT value FROM json_each(?)) AND {where}", (json.dumps(ids.tolist()), *args)))
        expected, seen = [], set()
        for chunk_id, similarity in zip(ids.tolist(), similarities.tolist()):
            if chunk_id in every and every[chunk_id][0] not in seen:
                seen.add(every[chunk_id][0])
                expected.append((every[chunk_id][0], every[chunk_id][1], similarity, *every[chunk_id][2:]))
        assert expected   # each filter keeps some
        for limit in (1, 2, len(expected) // 2 or 1, len(expected), len(expected) + 5):
            assert search._preselected(ids, similarities, where, args, limit) == expected[:limit], (filters, limit)


def test_full_text_looks_up_only_the_places_that_can_rank_and_ranks_what_looking_all_up_ranks(tmp_path, monkeypatch):
    """The messages around the lenders are looked up only where what they could borrow reaches the lenders'
    own bar (``LocalSearch._may_rank``): the same candidates, scores and order as looking every place up,
    over sessions where neighbours lend much and little, some messages of kinds the filters leave out and
    sessions a machine made (places that do not pass), for many queries and pool sizes."""
    import random

    from claude_chats.localstore import db, writer
    from claude_chats.localstore.journal import Journal
    from claude_chats.search.core import Filters, Plan

    rng = random.Random(5)
    words = [f"w{n}" for n in range(40)]
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    with conn:
        for s in range(30):
            session = f"s{s}"
            conn.execute("INSERT INTO sessions(id, updated_at, machine_made) VALUES (?, '2026-01-01', ?)",
                         (session, int(s % 7 == 6)))
            for seq in range(rng.randint(5, 60)):
                text = " ".join(rng.choice(words[:rng.choice((8, 40))]) for _ in range(rng.randint(1, 30)))
                kind = "tool_result" if rng.random() < 0.2 else "text"
                conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content) VALUES (?, ?, ?, ?, ?, ?)",
                             (f"{session}-{seq}", writer.session_number(conn, session), seq,
                              rng.choice(("user", "assistant")), kind, text))
    conn.close()
    search = LocalSearch(Journal.open(path))
    pruned = LocalSearch._may_rank
    looked_up, every = [], lambda self, lenders, matched, plan: self._around(_spans(matched), plan.filters)
    try:
        compared = 0
        for q in range(60):
            text = " ".join(rng.sample(words, rng.randint(1, 4)))
            for candidates in (3, 10, 40):
                kinds = None if q % 3 else ["text"]
                plan = Plan(text, ("fulltext",), Filters.build(kinds=kinds), candidates=candidates, match="any")
                monkeypatch.setattr(LocalSearch, "_may_rank", every)
                want = [(c.key, c.session_id, c.scores) for c in search.fulltext(plan)]
                monkeypatch.setattr(LocalSearch, "_may_rank", lambda *a: looked_up.append(1) or pruned(*a))
                got = [(c.key, c.session_id, c.scores) for c in search.fulltext(plan)]
                assert got == want, (text, candidates)
                compared += bool(want)
        assert compared > 150 and len(looked_up) > 150
    finally:
        search.close()
