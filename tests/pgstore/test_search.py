"""Search over a real Postgres: one-statement fusion, parity with the journal, fallback, refusal."""

import time

import pytest

from claude_chats.errors import PostgresUnavailable, SpaceMismatchError
from claude_chats.localstore.codes import FINE_BITS, Codec
from claude_chats.localstore.search import LocalSearch
from claude_chats.pgstore.search import PgLink, open_search
from claude_chats.search.core import Plan, fuse
from claude_chats.search.searcher import Request, Searcher
from tests.support.fakes import HashEmbedder, OtherEmbedder, Proxy, _Fixed
from tests.support.journals import build_journal, sync_corpus


@pytest.fixture
def pg(pg_synced_journal, pg_db_url):
    backend = open_search(pg_db_url)
    yield backend
    backend.close()


def both(journal, pg, provider=HashEmbedder):
    return Searcher(LocalSearch(journal), None, provider), Searcher(None, _Fixed(pg), provider)


def places(result):
    return [(h["session_id"], h["seq"]) for h in result["hits"]]


QUERIES = ["flaky migration test", "port 5432 already in use", "OOMKilled memory limit",
           "borrow checker lifetime", "Event loop is closed", "useEffect infinite loop"]
QUESTIONS = ["why does the migration test fail on CI every other run?", "how do I stop the other postgres container",
             "what limit does the pod's memory have", "memory leak in the cache", "rollback migration index order",
             "what happens when the value does not live long enough", "schema migration table",
             "which hook makes the page freeze"]


# Postgres keeps the float vectors, the journal its codes (``localstore.codes``): a cosine with a unit
# query moves by at most sqrt(d) x max|x| / (127 x 32), max|x| <= 1 (1.4e-3 for these 32 dimensions)
CODES_SLACK = float(Codec(HashEmbedder.dimensions, FINE_BITS).similarity_bound(1 / 127))


@pytest.mark.parametrize("query", QUERIES)
def test_same_top_results_in_both_stores(pg_synced_journal, pg, query):
    local, remote = both(pg_synced_journal, pg)
    for mode in ("fulltext", "semantic", "hybrid"):
        a, b = local.search(query, mode=mode, limit=3), remote.search(query, mode=mode, limit=3)
        assert (a["source"], b["source"]) == ("local", "postgres")
        assert places(a)[:1] == places(b)[:1], mode
        x, y = a["hits"][0], b["hits"][0]
        assert {k: x[k] for k in ("text", "timestamp", "project_path", "git_branch", "role", "kind")} == \
               {k: y[k] for k in ("text", "timestamp", "project_path", "git_branch", "role", "kind")}
        if mode == "semantic":
            assert places(a) == places(b)
            assert [h["scores"]["semantic"] for h in a["hits"]] == pytest.approx(
                [h["scores"]["semantic"] for h in b["hits"]], abs=CODES_SLACK)


def test_both_stores_rank_questions_alike(pg_synced_journal, pg):
    """Any-word full text ranked bm25-like in both stores (FTS5's bm25; Postgres: term frequencies
    from ts_rank, document frequencies through the GIN index): same top hit, nearly the same top 5."""
    local, remote = both(pg_synced_journal, pg)
    shared = total = 0
    for query in QUERIES + QUESTIONS:
        for mode in ("fulltext", "hybrid"):
            a = local.search(query, mode=mode, limit=5, per_session=0)
            b = remote.search(query, mode=mode, limit=5, per_session=0)
            assert places(a)[:1] == places(b)[:1], (query, mode)
            shared += len(set(places(a)) & set(places(b)))
            total += len(places(a))
            if mode == "fulltext":   # the same scale of scores: bm25 with the same idf, k1 and b
                for x, y in zip(a["hits"][:2], b["hits"][:2]):
                    assert x["scores"]["fulltext"] == pytest.approx(y["scores"]["fulltext"], rel=0.25)
    assert total >= 90 and shared >= 0.9 * total


def test_common_words_give_way_to_rare_ones(pg_synced_journal, pg_db_url):
    """Past ``match_rows`` messages, an any-word query matches on its rarest words (both stores alike)."""
    remote = open_search(pg_db_url, match_rows=20)   # the corpus has 49 messages, 37 with "migration"
    try:
        for backend in (LocalSearch(pg_synced_journal, match_rows=20), remote, LocalSearch(pg_synced_journal)):
            result = Searcher(backend, None, HashEmbedder).search("migration rollback", mode="fulltext", match="any",
                                                                  neighbours=0, limit=50, per_session=0, max_chars=None)
            found = {(h["session_id"], h["seq"]) for h in result["hits"]}
            if backend.match_rows == 20:
                assert found == {("s-migrate", 2), ("s-migrate", 3)}, backend.source
            else:
                assert len(found) > 30
        # even the rarest word is in more than 20 messages: every word is required
        for backend in (LocalSearch(pg_synced_journal, match_rows=20), remote):
            result = Searcher(backend, None, HashEmbedder).search("migration table", mode="fulltext", match="any",
                                                                  neighbours=0, limit=50, per_session=0, max_chars=None)
            assert {h["session_id"] for h in result["hits"]} == {"s-long"} and len(result["hits"]) == 30
    finally:
        remote.close()


def test_sql_fusion_is_weighted_rrf_of_its_legs(pg_synced_journal, pg):
    searcher = Searcher(None, _Fixed(pg), HashEmbedder)
    request = Request.build("migration sequence", per_session=0)
    space = pg.space(HashEmbedder().space.key)
    vector = HashEmbedder().embed_query(request.query)
    weights = {"fulltext": 1.0, "semantic": 0.5}

    def plan(*legs, k=60):
        return Plan(request.query, legs, request.filters, vector, space["id"], 40, {"fulltext": k, "semantic": k},
                    "any", weights)

    legs = {leg: pg.candidates(plan(leg)) for leg in ("fulltext", "semantic")}
    assert legs["fulltext"] and legs["semantic"]
    expected = fuse(legs, {"fulltext": 60, "semantic": 60}, weights)
    fused = pg.candidates(plan("fulltext", "semantic"))
    assert [c.score for c in fused] == pytest.approx([c.score for c in expected])
    assert {c.key for c in fused} == {c.key for c in expected}
    top = fused[0]
    assert top.score == pytest.approx(sum(weights[leg] / (60 + r) for leg, r in top.ranks.items()))
    assert searcher.search(request.query)["hits"]


@pytest.mark.parametrize("mode", ["fulltext", "semantic"])
def test_filters_select_the_same_messages(pg_synced_journal, pg, mode):
    local, remote = both(pg_synced_journal, pg)
    for filters in ({"project_path": "/work/alpha"}, {"project_path": "/work/alpha/services"},
                    {"session_id": "s-migrate"}, {"role": "user"}, {"include_subagents": False},
                    {"since": "2026-01-02", "until": "2026-01-06"}, {"kinds": ["tool_result"]}):
        args = dict(mode=mode, limit=100, per_session=0, max_chars=None, **filters)
        a, b = local.search("migration sequence", **args), remote.search("migration sequence", **args)
        assert sorted(places(a)) == sorted(places(b)), filters


def test_conversation_and_sessions_from_postgres(pg_synced_journal, pg):
    local, remote = both(pg_synced_journal, pg)
    a = local.conversation("s-long", start_seq=3, limit=5)
    b = remote.conversation("s-long", start_seq=3, limit=5)
    assert b["source"] == "postgres" and a["messages"] == b["messages"]
    assert a["next_start_seq"] == b["next_start_seq"] == 8
    keys = ("session_id", "name", "project_path", "git_branch", "started_at", "message_count", "is_subagent")
    assert {k: a["session"][k] for k in keys} == {k: b["session"][k] for k in keys}
    listed = remote.recent_sessions(limit=3, project_path="/work/alpha")
    assert [s["session_id"] for s in listed["sessions"]] == \
           [s["session_id"] for s in local.recent_sessions(limit=3, project_path="/work/alpha")["sessions"]]


def test_session_not_yet_in_postgres_is_read_from_the_journal(pg_synced_journal, pg):
    pg_synced_journal.conn.execute("INSERT INTO sessions (id, updated_at, next_seq) VALUES ('s-new', '2026-02-01', 0)")
    searcher = Searcher(LocalSearch(pg_synced_journal), _Fixed(pg), HashEmbedder)
    page = searcher.conversation("s-new")
    assert page["source"] == "local" and "not in Postgres" in page["notes"][0]


def test_mismatch_is_refused_by_postgres(pg_synced_journal, pg):
    remote = Searcher(None, _Fixed(pg), OtherEmbedder)
    with pytest.raises(SpaceMismatchError, match="hash-32-other"):
        remote.search("flaky migration test", mode="semantic")
    assert remote.search("flaky migration test", mode="fulltext")["source"] == "postgres"


def test_unreachable_postgres_answers_from_the_journal_fast(pg_synced_journal):
    for url in ("postgresql://nobody@127.0.0.1:1/none", "postgresql://nobody@10.255.255.1:5432/x?sslmode=require"):
        searcher = Searcher(LocalSearch(pg_synced_journal), PgLink(url), HashEmbedder)
        started = time.monotonic()
        result = searcher.search("flaky migration test")
        assert time.monotonic() - started < 2.0
        assert result["source"] == "local" and result["hits"]
        assert any("Postgres unreachable" in n for n in result["notes"])


def test_postgres_without_tables_falls_back(pg_synced_journal, pg_url):
    result = Searcher(LocalSearch(pg_synced_journal), PgLink(pg_url), HashEmbedder).search("docker", mode="fulltext")
    assert result["source"] == "local"
    assert any("no claude-chats tables" in n for n in result["notes"])


def test_outage_mid_session_and_recovery(pg_synced_journal, pg_db_url):
    proxy = Proxy(pg_db_url).start()
    link = PgLink(proxy.url, retry_after=0.3)
    link.start()
    searcher = Searcher(LocalSearch(pg_synced_journal), link, HashEmbedder)
    try:
        assert searcher.search("flaky migration test")["source"] == "postgres"
        proxy.stop()
        for _ in range(2):
            started = time.monotonic()
            result = searcher.search("flaky migration test")
            assert time.monotonic() - started < 2.0
            assert result["source"] == "local" and result["hits"]
            assert any("Postgres unreachable" in n for n in result["notes"])
        proxy.start()
        time.sleep(0.4)
        assert searcher.search("flaky migration test")["source"] == "postgres"
    finally:
        proxy.stop()
        searcher.close()


def test_a_statement_timeout_answers_from_the_journal_and_keeps_the_link(pg_synced_journal, pg_db_url):
    """A search that runs out of time on Postgres is answered from the journal; the next one asks
    Postgres again at once (a slow statement is not a lost connection)."""
    import psycopg

    link = PgLink(pg_db_url, retry_after=60)
    link.start()
    searcher = Searcher(LocalSearch(pg_synced_journal), link, HashEmbedder)
    locker = psycopg.connect(pg_db_url)
    try:
        backend = link.backend()
        assert searcher.search("flaky migration test", mode="fulltext")["source"] == "postgres"
        backend.conn.execute("SET statement_timeout = 300")
        locker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")   # every search statement waits
        result = searcher.search("flaky migration test", mode="fulltext")
        assert result["source"] == "local" and result["hits"]
        assert any("statement timeout" in n for n in result["notes"])
        locker.rollback()
        assert link.backend() is backend
        assert searcher.search("flaky migration test", mode="fulltext")["source"] == "postgres"
    finally:
        locker.close()
        searcher.close()


def test_insecure_remote_url_is_not_used(pg_synced_journal):
    link = PgLink("postgresql://u@db.example.com/x")
    result = Searcher(LocalSearch(pg_synced_journal), link, HashEmbedder).search("docker", mode="fulltext")
    assert result["source"] == "local" and any("without TLS" in n for n in result["notes"])
    with pytest.raises(PostgresUnavailable, match="without TLS"):
        link.backend()


def test_semantic_parity_with_the_test_model(tmp_path, pg_db_url, minilm):
    journal = build_journal(tmp_path)
    try:
        sync_corpus(journal, minilm, pg_db_url)
        backend = open_search(pg_db_url)
        local = Searcher(LocalSearch(journal), None, lambda: minilm)
        remote = Searcher(None, _Fixed(backend), lambda: minilm)
        for sentence, session in (("the database test fails randomly because ids are not reset", "s-migrate"),
                                  ("another container is already listening on the port", "s-docker"),
                                  ("the component re-renders forever", "s-react"),
                                  ("the process was killed for using too much memory", "s-k8s")):
            a = local.search(sentence, mode="semantic", limit=3, per_session=0)
            b = remote.search(sentence, mode="semantic", limit=3, per_session=0)
            assert places(a) == places(b) and a["hits"][0]["session_id"] == session
            assert a["hits"][0]["scores"]["semantic"] == pytest.approx(b["hits"][0]["scores"]["semantic"], abs=1e-4)
        backend.close()
    finally:
        journal.close()


class WideEmbedder(HashEmbedder):
    """Beyond pgvector's 2,000-dimension index limit: Postgres indexes a halfvec cast."""

    model_id, dimensions = "hash-2048", 2048


def test_wide_vectors_use_the_halfvec_index(tmp_path, pg_db_url):
    journal = build_journal(tmp_path)
    try:
        sync_corpus(journal, WideEmbedder(), pg_db_url)
        backend = open_search(pg_db_url)
        local = Searcher(LocalSearch(journal), None, WideEmbedder)
        remote = Searcher(None, _Fixed(backend), WideEmbedder)
        a = local.search("OOMKilled memory limit", mode="semantic", limit=3, per_session=0)
        b = remote.search("OOMKilled memory limit", mode="semantic", limit=3, per_session=0)
        assert places(a) == places(b) and a["hits"][0]["session_id"] == "s-k8s"
        assert b["hits"][0]["scores"]["semantic"] == pytest.approx(a["hits"][0]["scores"]["semantic"], abs=1e-3)
        backend.close()
    finally:
        journal.close()


def test_a_query_matching_more_than_the_scored_matches_ranks_the_newest(pg_synced_journal, pg_db_url):
    """Full text reads the tsvector of every message it ranks (out of TOAST: most of a search's cost
    at a million messages); past ``scored_matches`` matches it ranks the newest of them, and below
    that every match, as before."""
    from claude_chats.pgstore.search import _filters
    from claude_chats.search.core import Filters

    where, params = _filters(Filters.build())
    query = "migration"
    for scored in (10, 2000):
        backend = open_search(pg_db_url, scored_matches=scored)
        try:
            result = Searcher(None, _Fixed(backend), HashEmbedder).search(
                query, mode="fulltext", neighbours=0, limit=50, per_session=0, max_chars=None)
            matches = backend.conn.execute(
                "SELECT c.session_id, m.sequence_num, m.created_at FROM messages m "
                "JOIN conversations c ON c.id = m.conversation_id "
                f"WHERE m.content_tsv @@ plainto_tsquery('english', %(q)s) AND {where} "
                "ORDER BY m.created_at DESC", {**params, "q": query}).fetchall()
        finally:
            backend.close()
        assert len(matches) > 10
        cut = matches[min(scored, len(matches)) - 1][2]   # the oldest of the newest ``scored``
        assert len(result["hits"]) == min(scored, len(matches)), scored
        assert set(places(result)) <= {(s, seq) for s, seq, at in matches if at >= cut}, scored


def _hybrid_plan(pg, query="migration sequence"):
    request = Request.build(query, per_session=0)
    space = pg.space(HashEmbedder().space.key)
    return Plan(request.query, ("fulltext", "semantic"), request.filters, HashEmbedder().embed_query(request.query),
                space["id"], 40, {"fulltext": 60, "semantic": 60}, "any", {"fulltext": 1.0, "semantic": 0.5})


def _as_rows(candidates):
    return [(c.key, c.session_id, c.ranks, c.scores, c.score, c.chunk) for c in candidates]


def test_a_hybrid_search_on_two_connections_equals_one_statement(pg_synced_journal, pg, pg_db_url):
    """The vector leg on a second connection, fused in Python: the same candidates, ranks, scores and
    order, to the last bit of the fused score, as both legs fused in one statement (a searcher with no
    URL to open a second connection with)."""
    from claude_chats.pgstore import search as pgsearch

    single = pgsearch.PgSearch(pgsearch._configured(pgsearch.pg.connect(pg_db_url), pg_db_url))
    try:
        for query in QUERIES + QUESTIONS:
            plan = _hybrid_plan(pg, query)
            apart, together = pg.candidates(plan), single.candidates(plan)
            assert pg._helper is not None and single._helper is None
            assert together and _as_rows(apart) == _as_rows(together), query
    finally:
        single.close()


def test_a_lost_second_connection_costs_the_search_nothing(pg_synced_journal, pg, pg_db_url):
    import psycopg

    plan = _hybrid_plan(pg)
    before = _as_rows(pg.candidates(plan))
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pg._helper.info.backend_pid,))
    time.sleep(0.2)
    assert _as_rows(pg.candidates(plan)) == before   # its vector leg ran on the first connection
    assert pg._helper is None
    assert not pg.conn.closed and _as_rows(pg.candidates(plan)) == before


def test_a_statement_timeout_on_the_second_connection_is_the_searchs(pg_synced_journal, pg, pg_db_url):
    import psycopg

    plan = _hybrid_plan(pg)
    assert pg.candidates(plan)
    pg._helper.execute("SET statement_timeout = 300")
    table = f"vectors_{plan.space_id}"
    with psycopg.connect(pg_db_url) as locker:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")   # only the vector leg waits
        with pytest.raises(PostgresUnavailable, match="statement timeout"):
            pg.candidates(plan)
        locker.rollback()
    assert pg._helper is not None and pg.candidates(plan)   # both connections kept


def _work_mem_bytes(conn):
    return conn.execute("SELECT pg_size_bytes(current_setting('work_mem'))").fetchone()[0]


def test_a_searchers_session_gets_work_mem_for_an_exact_bitmap(pg_synced_journal, pg_db_url):
    """A searcher's sessions get enough work_mem that a full-text bitmap of the messages stays exact (a
    lossy one checks every row of its pages again: at 1M messages an identifier's search took 1.5x as
    long): at least SEARCH_WORK_MEM_MIN_MB over a server's 64 kB, and a server's larger setting is kept."""
    import psycopg

    from claude_chats.pgstore import search as pgsearch

    name = psycopg.conninfo.conninfo_to_dict(pg_db_url)["dbname"]
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} SET work_mem = '64kB'")
        assert _work_mem_bytes(psycopg.connect(pg_db_url, autocommit=True)) == 64 << 10
    backend = open_search(pg_db_url)
    try:
        assert _work_mem_bytes(backend.conn) == pgsearch.SEARCH_WORK_MEM_MIN_MB << 20
        helper = backend._helper_conn()   # the hybrid search's second connection, set up the same way
        assert helper is not None and _work_mem_bytes(helper) == pgsearch.SEARCH_WORK_MEM_MIN_MB << 20
        assert backend.candidates(_hybrid_plan(backend))   # and a search runs with it
    finally:
        backend.close()
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} SET work_mem = '200MB'")
    backend = open_search(pg_db_url)
    try:
        assert _work_mem_bytes(backend.conn) == 200 << 20
    finally:
        backend.close()


def test_work_mem_grows_with_the_messages_pages(pg_synced_journal, pg_db_url, monkeypatch):
    """The bitmap's share grows with ``messages``' pages (as the last VACUUM or ANALYZE counted them), up to
    SEARCH_WORK_MEM_MAX_MB."""
    import psycopg

    from claude_chats.pgstore import search as pgsearch

    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE messages")
        pages = conn.execute("SELECT relpages FROM pg_class WHERE relname = 'messages'").fetchone()[0]
    assert pages > 0
    monkeypatch.setattr(pgsearch, "SEARCH_WORK_MEM_MIN_MB", 0)
    monkeypatch.setattr(pgsearch, "SEARCH_BITMAP_BYTES_PER_PAGE", (1 << 30) // pages)   # 1 GB: over the most
    backend = open_search(pg_db_url)
    try:
        assert _work_mem_bytes(backend.conn) == pgsearch.SEARCH_WORK_MEM_MAX_MB << 20
    finally:
        backend.close()
    monkeypatch.setattr(pgsearch, "SEARCH_BITMAP_BYTES_PER_PAGE", (40 << 20) // pages)   # between the least and the most
    backend = open_search(pg_db_url)
    try:
        assert _work_mem_bytes(backend.conn) == (pgsearch.SEARCH_BITMAP_BYTES_PER_PAGE * pages) // 1024 * 1024
    finally:
        backend.close()


PHRASES = ["port_5432", "flaky_migration", "rollback_migration schema_migration", "schema_migration",
           "migration_test deadlock", "rollback_migration port_5432 useEffect"]


@pytest.mark.parametrize("match_rows", [2000, 5])
@pytest.mark.parametrize("filtered", [False, True])
def test_a_phrase_is_matched_by_the_ids_its_count_found(pg_synced_journal, pg_db_url, monkeypatch, match_rows,
                                                        filtered):
    """A word the parser splits (an identifier: 'port' <-> '5432') is checked against every message holding
    its words, once to count it and once to rank it; the count lists the ids, and the leg matches on them:
    the same candidates, scores and order as matching the phrase again, and the phrase's order is not
    checked twice. A phrase with more matches than the count lists (``match_rows`` 5: "schema_migration"
    is in 30 messages) is matched as before."""
    from claude_chats.pgstore import search as pgsearch

    backend = open_search(pg_db_url, match_rows=match_rows)
    statements = []
    rows = backend._rows

    def recording(sql, params=None):
        statements.append((sql, params))
        return rows(sql, params)

    monkeypatch.setattr(backend, "_rows", recording)
    real = pgsearch.PgSearch._matches
    try:
        for query in PHRASES:
            request = Request.build(query, per_session=0, **({"project_path": "/work/alpha"} if filtered else {}))
            plan = Plan(request.query, ("fulltext",), request.filters, None, None, 40,
                        {"fulltext": 60, "semantic": 60}, "any", {"fulltext": 1.0, "semantic": 0.5})
            statements.clear()
            found = _as_rows(backend.candidates(plan))
            ranked = statements[-1]
            listed = [ids for _q, _count, ids in backend._terms(plan)[0] if ids is not None]
            complete = [ids for ids in listed if len(ids) <= match_rows]
            assert ("::uuid[]" in ranked[0]) == bool(complete), query
            if complete:
                assert any(p == ids for p in ranked[1].values() for ids in complete)
            monkeypatch.setattr(pgsearch.PgSearch, "_matches",
                                lambda self, terms, match, params: real(self, [(q, c, None) for q, c, _ in terms],
                                                                        match, params))
            again = _as_rows(backend.candidates(plan))
            monkeypatch.setattr(pgsearch.PgSearch, "_matches", real)
            assert found == again and (found or query == "migration_test deadlock"), query
    finally:
        backend.close()


def test_a_web_search_phrase_is_matched_by_its_expression(pg_synced_journal, pg_db_url):
    """A web-search query (``match`` "all": quotes, negations) matches its own expression: its phrases'
    ids are not listed, and a negation still takes messages out."""
    backend = open_search(pg_db_url)
    try:
        request = Request.build('"rollback migration" -index', per_session=0)
        plan = Plan(request.query, ("fulltext",), request.filters, None, None, 40,
                    {"fulltext": 60, "semantic": 60}, "all", {"fulltext": 1.0, "semantic": 0.5}, 0)   # no lending
        assert all(ids is None for _q, _count, ids in backend._terms(plan)[0])
        keys = {c.key for c in backend.candidates(plan)}
        texts = {row["content"] for row in backend.hydrate(list(keys)).values()}
        assert texts == {"great, please also check the rollback migration"}
    finally:
        backend.close()
