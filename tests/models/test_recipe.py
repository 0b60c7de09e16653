"""What sync embeds per message (``embed_text``, ``models.recipe``), and the upgrade from the plain text.

The text embedded for a message is checked against the real model: the stored
vector must be the embedding of the recipe's string, not of the bare content.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from claude_chats import config
from claude_chats.errors import SearchError
from claude_chats.faults import ENV as DIE_AT
from claude_chats.localstore import db, ivf, vectors
from claude_chats.localstore.journal import Journal
from claude_chats.models import embedder, get_provider, with_text
from claude_chats.pgstore.store import PgStore
from claude_chats.stores import open_searcher
from claude_chats.sync.runner import run_sync
from tests.support import ROOT, lines, redaction_corpus
from tests.support.fakes import HashEmbedder, Server, openai_embeddings

DAY = "2026-01-01T10:00:00.000Z"
CONTEXT_KEY = '{"text":"lean-1"}'   # the default recipe's


def session_lines(session="s-1"):
    """A user question, a tool call, the assistant's answer, a follow-up: ids 1..4 in the journal."""
    return [
        lines.user("why does the migration test flake on CI?", session=session, ts=DAY),
        lines.assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -x"}}],
                        session=session, ts=DAY),
        lines.assistant("the fixture reuses one database across workers, so tests race", session=session, ts=DAY),
        lines.user("make each worker create its own schema", session=session, ts=DAY),
    ]


def write(folder, objs, name="s-1"):
    path = folder / f"{name}.jsonl"
    with open(path, "ab") as fh:
        fh.write(lines.encode(*objs))
    return str(path)


def journal_only(**values):
    """Settings without Postgres or redaction (``values`` win)."""
    return config.load({"redact": False, **values}, environ={}, path=os.devnull)


def stored(journal, provider, message_id):
    space_id = db.find_space(journal.conn, provider.space.key)
    return vectors.load_message_vectors(journal.conn, space_id, [message_id])[message_id]


def assert_embeds(journal, minilm, provider, message_id, expected, plain):
    """The message's one stored vector is the model's embedding of ``expected``, not of ``plain``."""
    [chunk] = stored(journal, provider, message_id)
    want, bare = minilm.embed_documents([expected, plain])
    assert float(chunk.vector @ want) > 0.9999
    assert float(chunk.vector @ bare) < 0.99


# -- the text ---------------------------------------------------------------------------


def test_sync_embeds_the_previous_text_message_and_who_and_when(empty_journal, tmp_path, minilm):
    empty_journal.import_files([write(tmp_path, session_lines())])
    provider = with_text(minilm, journal_only())
    report = run_sync(journal_only(), journal=empty_journal, provider=provider, store=None, lock=False, batch_size=1)
    assert report.ok and report.embedded == 4, report.errors
    assert provider.space.key == f"llama/all-MiniLM-L6-v2.f16/384/{CONTEXT_KEY}"
    question, answer = "why does the migration test flake on CI?", \
        "the fixture reuses one database across workers, so tests race"
    assert_embeds(empty_journal, minilm, provider, 1, f"user (1 January 2026): {question}", question)
    # the tool call's previous text message is the question; the answer's too (a tool call is not text),
    # each read from an earlier batch of one message
    assert_embeds(empty_journal, minilm, provider, 3, f"user: {question}\nassistant (1 January 2026): {answer}", answer)
    assert_embeds(empty_journal, minilm, provider, 4, f"assistant: {answer}\nuser (1 January 2026): "
                  "make each worker create its own schema", "make each worker create its own schema")


def test_previous_message_synced_in_an_earlier_run(empty_journal, tmp_path, minilm):
    transcript = write(tmp_path, session_lines()[:3])
    empty_journal.import_files([transcript])
    provider = with_text(minilm, journal_only())
    empty_journal.mark_synced([1, 2, 3])   # pushed long ago: only the new message is pending
    write(tmp_path, session_lines()[3:])
    empty_journal.import_files([transcript])
    report = run_sync(journal_only(), journal=empty_journal, provider=provider, store=None, lock=False)
    assert report.embedded == 1, report
    answer = "the fixture reuses one database across workers, so tests race"
    assert_embeds(empty_journal, minilm, provider, 4, f"assistant: {answer}\nuser (1 January 2026): "
                  "make each worker create its own schema", "make each worker create its own schema")


def test_long_message_chunks_keep_content_spans_under_the_prefix(empty_journal, tmp_path, minilm):
    long = " ".join(f"word{i}" for i in range(900))
    empty_journal.import_files([write(tmp_path, [lines.user("short question", ts=DAY), lines.assistant(long, ts=DAY)])])
    provider = with_text(minilm, journal_only())
    assert run_sync(journal_only(), journal=empty_journal, provider=provider, store=None, lock=False).ok
    chunks = stored(empty_journal, provider, 2)
    assert len(chunks) > 1 and chunks[0].start == 0 and chunks[-1].end == len(long)
    first = long[chunks[0].start:chunks[0].end]
    want = minilm.embed_documents([f"user: short question\nassistant (1 January 2026): {first}"])[0]
    assert float(chunks[0].vector @ want) > 0.9999


def test_per_kind_limits_embed_the_head_of_a_tool_result_and_no_thinking(empty_journal, tmp_path, minilm):
    output = " ".join(f"line{i}" for i in range(900))
    empty_journal.import_files([write(tmp_path, [
        lines.user("run the tests", ts=DAY),
        lines.assistant([{"type": "thinking", "thinking": "the user wants pytest", "signature": "x"}], ts=DAY),
        lines.assistant([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}], ts=DAY),
        lines.user([{"type": "tool_result", "tool_use_id": "t1", "content": output}], ts=DAY)])])
    kinds = dict(empty_journal.conn.execute("SELECT kind, id FROM messages").fetchall())
    settings = journal_only(embed_text="context,tool_result=300,thinking=0")
    provider = with_text(minilm, settings)
    assert provider.space.options["text"] == "context-1,thinking=0,tool_result=300"
    report = run_sync(settings, journal=empty_journal, provider=provider, store=None, lock=False)
    assert report.ok and report.chunks == 3, report   # the prompt, the tool call, one head; no thinking
    [chunk] = stored(empty_journal, provider, kinds["tool_result"])
    head = output[:chunk.end]
    assert chunk.start == 0 and 240 <= chunk.end <= 300 and head == output[:300].rsplit(" ", 1)[0] + " "
    want = minilm.embed_documents([f"user: run the tests\nuser (1 January 2026): {head}"])[0]
    assert float(chunk.vector @ want) > 0.9999
    space_id = db.find_space(empty_journal.conn, provider.space.key)
    assert vectors.load_message_vectors(empty_journal.conn, space_id, [kinds["thinking"]]) == {}


def test_a_kind_embedded_not_at_all_is_not_picked_up_again_by_every_sync(empty_journal, tmp_path, pg_db_url):
    """A message of a kind the recipe gives no vector (``thinking=0``) is pushed without one; the backfill
    (messages pushed without vectors of the space) must not take it for one still to embed."""
    empty_journal.import_files([write(tmp_path, [
        lines.user("run the tests", ts=DAY),
        lines.assistant([{"type": "thinking", "thinking": "the user wants pytest", "signature": "x"}], ts=DAY),
        lines.assistant("all 12 passed", ts=DAY)])])
    settings = config.load({"database_url": pg_db_url, "embed_text": "context,thinking=0"}, environ={},
                           path=os.devnull)
    provider = with_text(HashEmbedder(), settings)
    first = run_sync(settings, journal=empty_journal, provider=provider, lock=False)
    assert first.ok and (first.pushed, first.embedded, first.chunks) == (3, 3, 2), first
    again = run_sync(settings, journal=empty_journal, provider=provider, lock=False)
    assert (again.backfill_before, again.embedded) == (0, 0), again


def test_lean_the_default_embeds_nothing_search_leaves_out_and_a_tool_results_head():
    from claude_chats import transcript
    from claude_chats.errors import ConfigError
    from claude_chats.models.recipe import LEAN, UNSEARCHED, recipe_for

    assert set(UNSEARCHED) == set(transcript.KINDS) - set(transcript.DEFAULT_KINDS)   # else: a new LEAN name
    assert recipe_for(None) is LEAN and config.load(environ={}, path=os.devnull).embed_text == "lean"
    assert LEAN.skipped == UNSEARCHED and LEAN.limit("tool_result") == 300 and LEAN.limit("text") is None
    wider = recipe_for("lean,tool_result=2000")
    assert (wider.name, wider.limit("tool_result"), wider.skipped) == ("lean-1,tool_result=2000", 2000, UNSEARCHED)
    assert recipe_for("context").limits == ()
    with pytest.raises(ConfigError, match="'tool_reslt' is no kind"):
        recipe_for("lean,tool_reslt=0")


def test_per_kind_limits_are_checked():
    from claude_chats.errors import ConfigError

    with pytest.raises(ConfigError, match="KIND=CHARS"):
        config.parse_value("embed_text", "context,tool_result=lots")
    with pytest.raises(ConfigError, match="lean, context, plain"):
        config.parse_value("embed_text", "plain,tool_result=300")
    assert config.parse_value("embed_text", "context,tool_result=300") == "context,tool_result=300"


def test_plain_keeps_the_old_space_and_text(empty_journal, tmp_path, minilm, test_model_path):
    plain = journal_only(embed_text="plain", model=str(test_model_path), threads=1)
    with embedder(plain) as provider, get_provider(plain) as bare:
        assert provider.space.key == bare.space.key == "llama/all-MiniLM-L6-v2.f16/384/{}"
    with embedder(journal_only(model=str(test_model_path), threads=1)) as provider:
        assert provider.space.key == f"llama/all-MiniLM-L6-v2.f16/384/{CONTEXT_KEY}"
    empty_journal.import_files([write(tmp_path, session_lines())])
    provider = with_text(minilm, plain)
    assert provider is minilm
    assert run_sync(plain, journal=empty_journal, provider=provider, store=None, lock=False).ok
    answer = "the fixture reuses one database across workers, so tests race"
    [chunk] = stored(empty_journal, minilm, 3)
    assert float(chunk.vector @ minilm.embed_documents([answer])[0]) > 0.9999


def test_embed_text_setting_is_checked():
    from claude_chats.errors import ConfigError

    with pytest.raises(ConfigError, match="lean, context, plain"):
        config.parse_value("embed_text", "fancy")
    assert config.parse_value("embed_text", "plain") == "plain"


# -- redaction ------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 50])
def test_a_remote_provider_never_sees_the_previous_message_unredacted(empty_journal, tmp_path, batch_size):
    secret = redaction_corpus.SECRETS[0]
    empty_journal.import_files([write(tmp_path, [
        lines.user(f"deploy with {secret.text} please", ts=DAY),
        lines.assistant("done, the deploy finished", ts=DAY)])])
    with Server({"/v1/embeddings": openai_embeddings}) as server:
        settings = config.load({"provider": "openai", "openai_api_key": "sk-test",
                                "openai_base_url": server.url + "/v1"}, environ={}, path=os.devnull)
        report = run_sync(settings, journal=empty_journal, store=None, lock=False, batch_size=batch_size)
        sent = [text for path, _, body in server.requests if path == "/v1/embeddings" for text in body["input"]]
    assert report.ok and report.embedded == 2, report.errors
    assert sent and not [text for text in sent if secret.secret in text]
    answer = [text for text in sent if text.endswith("done, the deploy finished")]
    assert answer and answer[0].startswith("user: deploy with ") and "[REDACTED:" in answer[0].split("\n")[0], answer


# -- the upgrade: vectors of the plain text, then the default --------------------------------


def pg_vectors(url, key):
    with PgStore.open(url) as store:
        space = [s for s in store.spaces() if s["key"] == key]
        if not space:
            return {}
        rows = store.conn.execute(
            f"SELECT m.message_uuid, v.chunk_index, v.embedding FROM vectors_{space[0]['id']} v "
            "JOIN messages m ON m.id = v.message_id").fetchall()
    return {(uuid, index): np.asarray(vector.to_numpy()) for uuid, index, vector in rows}


def pg_message_count(url):
    with PgStore.open(url) as store:
        return store.conn.execute("SELECT count(*) FROM messages").fetchone()[0]


def conversations(folder, sessions=3, turns=6):
    paths = []
    for n in range(sessions):
        session = f"s-{n}"
        objs = [lines.user(f"session {n} question {i} about the flaky migration test", session=session, ts=DAY)
                if i % 2 == 0 else lines.assistant(f"session {n} answer {i}: give each worker its own schema",
                                                   session=session, ts=DAY) for i in range(turns)]
        paths.append(write(folder, objs, session))
    return paths


def test_upgrade_from_plain_vectors_notes_then_backfills(empty_journal, tmp_path, pg_db_url, test_model_path,
                                                         monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "1")
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    monkeypatch.setenv("CLAUDE_CHATS_EMBED_TEXT", "plain")
    empty_journal.import_files(conversations(tmp_path))
    before = run_sync(config.load(), journal=empty_journal, lock=False, batch_size=5)
    assert before.ok and before.pushed == 18 and before.backfill_before == 0, before.errors
    plain_key = "llama/all-MiniLM-L6-v2.f16/384/{}"
    context_key = f"llama/all-MiniLM-L6-v2.f16/384/{CONTEXT_KEY}"
    assert len(pg_vectors(pg_db_url, plain_key)) == 18

    monkeypatch.delenv("CLAUDE_CHATS_EMBED_TEXT")   # the upgrade: the default embedded text
    for local in (False, True):
        searcher = open_searcher(config.load(), journal_path=empty_journal.path, use_postgres=not local, wait=10)
        try:
            result = searcher.search("flaky migration test", mode="hybrid")
            assert result["modes_run"] == ["fulltext"] and result["hits"], result
            assert any("being rebuilt" in n and "chats sync" in n for n in result["notes"]), result["notes"]
            with pytest.raises(SearchError, match="chats sync"):
                searcher.search("flaky migration test", mode="semantic")
        finally:
            searcher.close()

    progress = []
    after = run_sync(config.load(), journal=empty_journal, lock=False, batch_size=5,
                     progress=lambda p: progress.append((p.messages_done, p.messages_total, p.chars_done,
                                                         p.chars_total)))
    assert after.ok, after.errors
    assert (after.backfill_before, after.backfilled, after.pushed, after.embedded) == (18, 18, 0, 18)
    done = [p[0] for p in progress]
    assert progress[-1][:2] == (18, 18) and done == sorted(done) and set(done) >= {0, 5, 10, 15, 18}
    assert progress[-1][2] == progress[-1][3] == after.embedded_chars > 0   # every character it had to embed
    assert pg_message_count(pg_db_url) == 18
    assert len(pg_vectors(pg_db_url, context_key)) == 18 and len(pg_vectors(pg_db_url, plain_key)) == 18
    again = run_sync(config.load(), journal=empty_journal, lock=False)
    assert (again.backfill_before, again.embedded, again.vectors_pushed) == (0, 0, 0)

    for local in (False, True):
        searcher = open_searcher(config.load(), journal_path=empty_journal.path, use_postgres=not local, wait=10)
        try:
            result = searcher.search("how do the workers avoid sharing a database", mode="semantic")
            assert result["hits"] and result["source"] == ("local" if local else "postgres"), result
            assert result["modes_run"] == ["semantic"] and not result["notes"], result
        finally:
            searcher.close()


DRIVER = """
import json, sys
from claude_chats import config
from claude_chats.localstore.journal import Journal
from claude_chats.models import with_text
from claude_chats.sync.runner import run_sync
from tests.support.fakes import HashEmbedder
settings = config.load({"database_url": sys.argv[2], "embed_text": sys.argv[3]})
with Journal.open(sys.argv[1]) as journal:
    report = run_sync(settings, journal=journal, provider=with_text(HashEmbedder(), settings), batch_size=4)
print(json.dumps(report.as_dict()))
"""


def drive(journal_path, url, embed_text, die_at=None):
    env = {k: v for k, v in os.environ.items() if k != DIE_AT}
    if die_at:
        env[DIE_AT] = die_at
    return subprocess.run([sys.executable, "-c", DRIVER, journal_path, url, embed_text], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("die_at", ["after-embed@2", "mid-copy-push_chunks@3", "before-mark@1", "before-mark@3"])
def test_backfill_killed_midway_converges(tmp_path, pg_db_url, die_at):
    path = str(tmp_path / "journal.db")
    with Journal.open(path) as journal:
        journal.import_files(conversations(tmp_path, sessions=4))
    first = drive(path, pg_db_url, "plain")
    assert first.returncode == 0 and json.loads(first.stdout)["pushed"] == 24, first.stderr
    killed = drive(path, pg_db_url, "context", die_at)
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    done = drive(path, pg_db_url, "context")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["pushed"] == 0 and report["backfilled"] == report["backfill_before"], report
    if die_at == "before-mark@3":   # two batches were pushed and kept: the rest is resumed, not redone
        assert report["backfilled"] == 16, report
    context = HashEmbedder().space.key[:-2] + '{"text":"context-1"}'
    remote = pg_vectors(pg_db_url, context)
    assert len(remote) == 24 and pg_message_count(pg_db_url) == 24
    with Journal.open(path) as journal:
        space_id = db.find_space(journal.conn, context)
        local = vectors.load_message_vectors(journal.conn, space_id, range(1, 25))
        uuids = dict(journal.conn.execute("SELECT id, chats_uuid(uuid) FROM messages").fetchall())
        assert vectors.count_unembedded(journal.conn, space_id) == 0
        form = ivf.codec(journal.conn, space_id)
    kept = {(uuids[m], c.index): c.vector for m, cs in local.items() for c in cs}
    assert kept.keys() == remote.keys()
    for key, vector in kept.items():   # the journal keeps int8 codes and 4-bit residuals: within its codes' bound
        top = float(np.abs(remote[key]).max())
        np.testing.assert_allclose(vector, remote[key], rtol=0, atol=float(form.bound(top / 127)) + 1e-6 * top)
