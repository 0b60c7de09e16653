"""``chats eval``: query files, session-level metrics, evaluation per mode, and the model bakeoff."""

import json
import pathlib
import re

import pytest

from claude_chats import evaluate, paths
from claude_chats.evaluate import Query, QueryFileError, load_queries
from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.cli import chats
from tests.support.vectors import assert_same_vectors

EVAL_QUERIES = pathlib.Path(__file__).resolve().parents[1] / "data" / "queries" / "eval_queries.jsonl"

# A small history of the person's own kind: session id -> (project, alternating user / assistant texts)
SESSIONS = {
    "s-flaky": ("/work/api", [
        "the migration test is flaky: it fails every other run on CI",
        "The id sequence is not reset between runs; resetting it in the fixture makes the test deterministic.",
    ]),
    "s-port": ("/work/api", [
        "docker compose up fails with port 5432 already in use",
        "Another Postgres container holds the port; stop it or map the service to 5433.",
    ]),
    "s-react": ("/work/web", [
        "my useEffect runs in an infinite loop and the page freezes",
        "The effect depends on an object created on every render; memoize it with useMemo.",
    ]),
    "s-oom": ("/work/infra", [
        "the pod keeps restarting and the events say OOMKilled",
        "The container exceeds its 256Mi memory limit; raise the limit or fix the leak in the cache.",
    ]),
    "s-tls": ("/work/infra", [
        "curl says the certificate has expired for the staging host",
        "Renew it with certbot and reload nginx; the cron job that renews it was disabled.",
    ]),
    "s-css": ("/work/web", [
        "the sidebar overlaps the footer on small screens",
        "Give the layout a grid with the footer in its own row, and drop the absolute positioning.",
    ]),
}

# query, relevant sessions: exact words (full text finds them) and paraphrases (meaning only)
QUERIES = [
    ("port 5432 already in use", ["s-port"]),
    ("OOMKilled pod", ["s-oom"]),
    ("useEffect infinite loop", ["s-react"]),
    ("unreliable unit check in the build pipeline", ["s-flaky"]),
    ("kubernetes workload crashing from RAM exhaustion", ["s-oom"]),
    ("HTTPS cert is out of date", ["s-tls"]),
    ("menu panel hides the page bottom on phones", ["s-css"]),
    ("database container conflicts", ["s-port", "s-flaky"]),
]


def write_history(folder):
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for day, (session, (project, texts)) in enumerate(SESSIONS.items(), 1):
        objs = [(lines.user if i % 2 == 0 else lines.assistant)(
            text, session=session, ts=f"2026-02-{day:02d}T10:00:0{i}.000Z", **({"cwd": project} if i % 2 == 0 else {}))
            for i, text in enumerate(texts)]
        path = folder / f"{session}.jsonl"
        path.write_bytes(lines.encode(*objs))
        files.append(str(path))
    return files


def write_queries(path, queries=QUERIES):
    path.write_text("".join(json.dumps({"id": f"q{i}", "query": q, "relevant_session_ids": rel}) + "\n"
                            for i, (q, rel) in enumerate(queries, 1)))
    return path


@pytest.fixture
def history_journal(tmp_path):
    """The user's journal (at the isolated home), holding the history."""
    journal = Journal.open(paths.journal_path())
    stats = journal.import_files(write_history(tmp_path / "projects"))
    assert not stats.errors
    yield journal
    journal.close()


@pytest.fixture
def use_model(monkeypatch, test_model_path):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "llama")
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "2")
    return test_model_path


@pytest.fixture(scope="session")
def f32_model_path(test_model_dir, test_model_path):
    """The test checkpoint converted at another precision (f32) with the project's converter."""
    from claude_chats.models.convert import convert

    out = test_model_path.parent / "all-MiniLM-L6-v2.f32.gguf"
    if not out.exists():
        convert(str(test_model_dir), str(out), outtype="f32", name="all-MiniLM-L6-v2")
    return out


# -- query files --------------------------------------------------------------------------

def test_load_queries(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"query": "a", "relevant_session_ids": ["s1", "s1", "s2"]}\n\n# a comment\n'
                    '{"id": 7, "query": " b ", "relevant_session_ids": "s3"}\n')
    assert load_queries(path) == [Query("q1", "a", ("s1", "s2")), Query("7", "b", ("s3",))]


@pytest.mark.parametrize("content, message", [
    ("{not json\n", r"q.jsonl:1: not JSON"),
    ('["query"]\n', r"q.jsonl:1: expected a JSON object, got list"),
    ('{"relevant_session_ids": ["s"]}\n', r'q.jsonl:1: "query" must be a non-empty string'),
    ('{"query": "x"}\n', r'q.jsonl:1: "relevant_session_ids" must be a non-empty list'),
    ('{"query": "x", "relevant_session_ids": []}\n', r'"relevant_session_ids" must be a non-empty list'),
    ('{"query": "x", "relevant_session_ids": ["s"], "id": [1]}\n', r'"id" must be a string or a number'),
    ('{"id": "a", "query": "x", "relevant_session_ids": ["s"]}\n' * 2, r"q.jsonl:2: duplicate id 'a'"),
    ("\n# nothing\n", r"holds no query"),
])
def test_bad_query_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "q.jsonl"
    path.write_text(content)
    with pytest.raises(QueryFileError, match=message):
        load_queries(path)


def test_cli_reports_a_bad_query_file_in_one_line(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"query": "x"}\n')
    for target in (tmp_path / "q.jsonl", tmp_path / "missing.jsonl"):
        result = chats("eval", str(target))
        assert result.exit_code == 1
        assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("Error: ")
        assert "Traceback" not in result.output


def test_postgres_store_needs_a_database(tmp_path):
    result = chats("eval", str(write_queries(tmp_path / "q.jsonl")), "--store", "postgres")
    assert result.exit_code == 1 and "no Postgres configured" in result.output


# -- metrics ------------------------------------------------------------------------------

def test_session_metrics():
    ranked = ["a", "b", "c", "d"]
    assert evaluate.recall_at(ranked, {"c"}, 1) == 0 and evaluate.recall_at(ranked, {"c"}, 5) == 1
    assert evaluate.recall_at(ranked, {"a", "z"}, 10) == 0.5
    assert evaluate.reciprocal_rank(ranked, {"c", "d"}) == pytest.approx(1 / 3)
    assert evaluate.reciprocal_rank(ranked, {"z"}) == 0
    assert evaluate.ndcg_at(ranked, {"a"}, 10) == 1
    assert evaluate.ndcg_at(ranked, {"b"}, 10) == pytest.approx(1 / 1.5849625)
    assert evaluate.ndcg_at(["x", "a", "b"], {"a", "b"}, 10) == pytest.approx((1 / 1.5849625 + 0.5) / (1 + 1 / 1.5849625))
    assert evaluate.distinct(["s1", "s2", "s1", "s3"]) == ["s1", "s2", "s3"]


# -- evaluation ---------------------------------------------------------------------------

def test_eval_scores_each_mode_over_the_journal(tmp_path, history_journal, use_model, minilm):
    from claude_chats import config
    from claude_chats.models import with_text

    evaluate.embed_journal(history_journal, with_text(minilm, config.load()))   # as sync embeds: the configured text
    queries = write_queries(tmp_path / "q.jsonl")
    misses = tmp_path / "misses.jsonl"
    result = chats("eval", str(queries), "--json", "--save-misses", str(misses))
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    modes = {m["mode"]: m for m in report["modes"]}
    assert report["queries"] == len(QUERIES) and set(modes) == {"hybrid", "semantic", "fulltext"}
    for m in modes.values():
        assert set(m) >= {"recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"}
        assert 0 <= m["recall@1"] <= m["recall@5"] <= m["recall@10"] <= 1
    # paraphrases defeat full text; meaning finds them
    assert modes["fulltext"]["recall@10"] <= 0.7
    assert modes["semantic"]["recall@10"] >= 0.9 and modes["hybrid"]["recall@10"] >= 0.9
    assert modes["hybrid"]["mrr"] >= modes["fulltext"]["mrr"]
    saved = [json.loads(line) for line in misses.read_text().splitlines()]
    assert {m["mode"] for m in saved} == {"fulltext"}
    assert all(m["first"] == [] or m["first"][0]["session_id"] not in m["relevant_session_ids"] for m in saved)

    table = chats("eval", str(queries), "--mode", "semantic")
    assert table.exit_code == 0
    assert table.output.splitlines()[0].split("|")[1].strip() == "mode"
    assert "| semantic" in table.output and "fulltext" not in table.output


def test_eval_on_the_shared_corpus_query_set(tmp_path, corpus):
    """The project's own query set over real Claude Code transcripts: full text answers most of it."""
    with Journal.open(paths.journal_path()) as journal:
        journal.import_files([str(p) for p in corpus.rglob("*.jsonl")])
    result = chats("eval", str(EVAL_QUERIES), "--mode", "fulltext", "--json")
    assert result.exit_code == 0, result.output
    fulltext = json.loads(result.output)["modes"][0]
    assert fulltext["queries"] >= 30 and fulltext["recall@10"] >= 0.8


# -- bakeoff ------------------------------------------------------------------------------

def test_bakeoff_builds_one_space_per_model(tmp_path, history_journal, test_model_path, f32_model_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "2")
    queries = write_queries(tmp_path / "q.jsonl")
    result = chats("eval", str(queries), "--model", str(test_model_path), "--model", f"llama:{f32_model_path}",
                 "--json", "--save-misses", str(tmp_path / "misses.jsonl"))
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["models"]
    assert [r["model"] for r in rows] == [str(test_model_path), f"llama:{f32_model_path}"]
    messages = sum(len(texts) for _, texts in SESSIONS.values())
    for row in rows:
        assert row["dimensions"] == 384 and row["messages"] == messages and row["chunks"] == messages
        assert row["embed_seconds"] > 0 and row["storage_bytes"] >= messages * 384 * 4
        modes = {m["mode"]: m for m in row["modes"]}
        assert set(modes) == {"semantic", "hybrid"} and modes["semantic"]["recall@10"] >= 0.9
    # the same checkpoint at two precisions ranks the same way
    assert rows[0]["modes"][0]["recall@5"] == pytest.approx(rows[1]["modes"][0]["recall@5"], abs=0.15)
    # the journal itself gained no vectors
    assert history_journal.conn.execute("SELECT count(*) FROM spaces").fetchall()[0][0] == 0

    table = chats("eval", str(queries), "--model", str(test_model_path), "--mode", "semantic")
    assert table.exit_code == 0
    header, _, row = table.output.splitlines()[:3]
    assert [c.strip() for c in header.split("|")[1:4]] == ["model", "dims", "semantic R@10"]
    assert str(test_model_path) in row and "| 384 " in row and re.search(r"\| [\d.]+ (KB|MB) ", row)


def test_bakeoff_spaces_are_separate(tmp_path, history_journal, test_model_path, f32_model_path):
    """Each model gets its own space (own vec table, own canary) built from the same messages."""
    from claude_chats.models.llama import LlamaProvider

    folder = tmp_path / "scratch"
    folder.mkdir()
    providers = [(p.name, lambda p=p: LlamaProvider(model=str(p), threads=2))
                 for p in (test_model_path, f32_model_path)]
    rows = evaluate.bakeoff(history_journal.path, [Query("q", "OOMKilled pod", ("s-oom",))], providers, ("semantic",),
                            folder=str(folder))
    assert [r.metric("semantic", "recall@1") for r in rows] == [1.0, 1.0]
    with Journal.open(str(folder / "journal.db")) as scratch:
        spaces = scratch.conn.execute("SELECT id, model FROM spaces ORDER BY id").fetchall()
        assert [m for _, m in spaces] == ["all-MiniLM-L6-v2.f16", "all-MiniLM-L6-v2.f32"]
        per_space = dict(scratch.conn.execute("SELECT space_id, count(*) FROM chunks GROUP BY space_id").fetchall())
        assert set(per_space.values()) == {sum(len(t) for _, t in SESSIONS.values())}


# -- tuned retrieval (models.recipe, search) -------------------------------------------------------

def test_headers_say_who_and_when():
    from claude_chats.models import recipe

    assert recipe.header("user", "2023-05-08T13:56:00.000Z") == "user (8 May 2023): "
    assert recipe.header("assistant", "2023-05-08T13:56:00Z", {"assistant": "Melanie"}) == "Melanie (8 May 2023): "
    assert recipe.header("user", None) == recipe.header("user", "not a date") == "user: "
    previous = {"role": "assistant", "content": "x" * 400 + " the tail"}
    message = {"role": "user", "created_at": "2026-01-02T00:00:00Z", "content": "ok", "previous": previous}
    assert recipe.prefix(message) == "user (2 January 2026): "
    assert recipe.prefix(message, recipe=recipe.CONTEXT) == f"assistant: {'x' * 300}\nuser (2 January 2026): "


def test_previous_is_the_last_text_message_of_the_same_session():
    from claude_chats.models import recipe

    rows = [(1, "a", "user", "text", None, "question"), (2, "a", "assistant", "tool_use", None, "Bash: ls"),
            (3, "a", "assistant", "text", None, "answer"), (4, "b", "user", "text", None, "other")]
    previous = [m["previous"] and m["previous"]["content"] for m in recipe.with_previous(rows)]
    assert previous == [None, "question", "question", None]


def test_full_text_reads_a_question_as_any_of_its_words():
    from claude_chats.localstore.fts import fts_match

    assert fts_match("When did Caroline go to the support group?", "any") == \
        '"Caroline" OR "go" OR "support" OR "group"'
    assert fts_match("what is it", "any") == '"what" OR "is" OR "it"'
    assert fts_match("test the tests TEST", "any") == '"test" OR "tests"'
    assert fts_match("?!", "any") is None


def test_common_words_give_way_to_rare_ones_in_a_large_store():
    from claude_chats.search.core import selective

    words = ["Caroline", "go", "support", "group"]
    assert selective(words, [40, 900, 300, 700], 1_000, budget=2_000) == (words, "any")       # a small store
    assert selective(words, [40, 900, 300, 700], 50_000, budget=2_000) == (words, "any")      # few matches
    assert selective(words, [40, 9_000, 300, 1_700], 50_000, budget=2_000) == (["Caroline", "support"], "any")
    assert selective(words, [4_000, 9_000, 3_000, 2_500], 50_000, budget=2_000) == (words, "all")


def test_neighbours_lend_part_of_their_score():
    from claude_chats.localstore.search import with_neighbours

    matched = {("s", 1): 2.0, ("s", 3): 1.0, ("t", 2): 4.0}
    places = [("s", 0), ("s", 1), ("s", 2), ("s", 3), ("s", 5), ("t", 2)]
    scored = with_neighbours(matched, places, span=2, weight=0.5)
    assert scored == {("s", 0): 1.0, ("s", 1): 2.5, ("s", 2): 1.5, ("s", 3): 2.0, ("s", 5): 0.5, ("t", 2): 4.0}


def test_weighted_fusion():
    from claude_chats.search.core import Candidate, fuse

    def leg(name, *keys):
        return [Candidate(k, "s", scores={name: 1.0}) for k in keys]

    fused = fuse({"fulltext": leg("fulltext", 1), "semantic": leg("semantic", 2, 3, 1)},
                 {"fulltext": 60, "semantic": 60}, {"fulltext": 1.0, "semantic": 0.5})
    assert [c.key for c in fused] == [1, 2, 3]
    assert fused[0].score == pytest.approx(1 / 61 + 0.5 / 63) and fused[1].score == pytest.approx(0.5 / 61)


def test_long_messages_are_chunked_under_their_header(minilm):
    from claude_chats.models import recipe

    long = " ".join(f"word{i}" for i in range(900))
    messages = [{"role": "user", "created_at": "2026-01-02T00:00:00Z", "content": long},
                {"role": "assistant", "created_at": None, "content": "short reply"}]
    chunked, short = recipe.embed_messages(minilm, messages)
    assert len(chunked) > 1 and chunked[0].start == 0 and chunked[-1].end == len(long)
    assert all(a.end > b.start for a, b in zip(chunked, chunked[1:]))      # overlapping, no gap
    head = "user (2 January 2026): "
    assert all(minilm.fits(head + long[c.start:c.end]) for c in chunked)
    expected = minilm.embed_documents([head + long[chunked[1].start:chunked[1].end], "assistant: short reply"])
    assert_same_vectors(chunked[1].vector, expected[0])   # embedded in another batch: not the same bits
    assert_same_vectors(short[0].vector, expected[1])
    assert (short[0].start, short[0].end) == (0, 11)


def test_tuned_search_over_the_journal(history_journal, minilm):
    from claude_chats.models import recipe

    space_id = evaluate.index_journal(history_journal, minilm)
    space = history_journal.conn.execute("SELECT key FROM spaces WHERE id = ?", (space_id,)).fetchall()[0][0]
    assert '"text":"speaker-date-1"' in space
    from claude_chats.localstore.search import LocalSearch
    from claude_chats.search.searcher import Searcher

    searcher = Searcher(LocalSearch(history_journal), None, lambda: recipe.RecipeProvider(minilm, recipe.HEADER))
    # the answer shares no word with the question: its neighbour (the question asked) does
    result = searcher.search("certificate expired", mode="fulltext", per_session=0, limit=5)
    top = [(h["session_id"], h["seq"]) for h in result["hits"][:2]]
    assert top == [("s-tls", 0), ("s-tls", 1)] and result["hits"][1]["scores"]["fulltext"] > 0
    hybrid = searcher.search("kubernetes workload crashing from RAM exhaustion", per_session=1)
    assert hybrid["hits"][0]["session_id"] == "s-oom" and hybrid["modes_run"] == ["fulltext", "semantic"]
    users = searcher.search("certificate expired", mode="fulltext", role="assistant", per_session=0)
    assert {h["role"] for h in users["hits"]} == {"assistant"}
    rows = evaluate.evaluate(searcher, [Query(f"q{i}", q, tuple(rel)) for i, (q, rel) in enumerate(QUERIES)])
    assert {r.mode: round(r.metrics["recall@10"], 3) for r in rows}["hybrid"] >= 0.9
