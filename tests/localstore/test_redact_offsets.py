"""Chunk offsets of text embedded redacted, read against the journal's original text.

When sync redacts (Postgres configured, or a remote embedding API), it embeds
``redact(content)`` and the chunk spans it computes are offsets into that text.
Postgres holds the redacted content, the journal the original (``journal_redact``
off, the default): the journal keeps the spans moved onto its original
(``redact.original_span``), and spans read back from the journal are moved onto
the redacted text before a push (``redact.redacted_span``). Otherwise a secret
early in a long message shifts every later span, and a local semantic search
shows the wrong part of the message as its excerpt.
"""

import pytest

from claude_chats import config, redact
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.fakes import HashEmbedder
from tests.support.redaction_corpus import SECRETS

# Long tokens (keys, JWTs) each shrink by 70-150 characters into their placeholder. (A private key block
# would not do: the parser already stores its base64 body as "[base64 data omitted: N chars]".)
LONG = [s for s in SECRETS if len(s.secret) - len(redact.placeholder(s.kind)) > 60 and "PRIVATE" not in s.secret]
SECRET_TEXT = "\n".join(s.text for s in LONG)
TOPICS = ["alpha bravo charlie delta", "harbour lantern meadow orchard", "quartz ripple saffron tundra",
          "umbra velvet willow xenon", "yonder zephyr amber basalt", "cobalt dune ember fjord"]


def long_message(secret):
    """A message of several chunks (HashEmbedder: 400 characters), each paragraph on its own words."""
    paragraphs = [" ".join([topic] * 12) for topic in TOPICS]
    return f"the deploy key was\n{secret}\n\n" + "\n\n".join(paragraphs)


def semantic_excerpt(tmp_path, secret, redacting):
    path = tmp_path / "proj" / "s-key.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lines.encode(lines.user(long_message(secret), session="s-key")))
    with Journal.open() as journal:
        journal.import_files([str(path)])
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False,
                          redact=redact.redact if redacting else None)
        assert report.embedded == 1 and report.chunks >= 5, report.as_dict()
        searcher = Searcher(LocalSearch.open(journal.path), None, HashEmbedder)
        try:
            result = searcher.search(" ".join([TOPICS[-2]] * 3), mode="semantic", limit=1)
        finally:
            searcher.close()
    (hit,) = result["hits"]
    return hit["text"]


@pytest.mark.parametrize("secret, redacting", [("no secret here", True), (SECRET_TEXT, False)])
def test_the_excerpt_is_the_matched_chunk_when_the_embedded_text_is_the_stored_text(tmp_path, secret, redacting):
    assert TOPICS[-2] in semantic_excerpt(tmp_path, secret, redacting)


def test_the_excerpt_is_the_matched_chunk_when_a_secret_was_redacted_before_embedding(tmp_path):
    assert len(redact.redact(SECRET_TEXT)) < len(SECRET_TEXT) - 500   # later spans shift this much
    assert TOPICS[-2] in semantic_excerpt(tmp_path, SECRET_TEXT, redacting=True)


def test_postgres_and_the_journal_keep_spans_of_their_own_text(tmp_path, pg_db_url, monkeypatch):
    """Postgres holds the redacted content and the journal the original: each chunk's span, read
    in each store's own text, is the same piece (redacted in Postgres), before and after a
    re-push from the journal's stored vectors."""
    import psycopg

    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    path = tmp_path / "proj" / "s-pg.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lines.encode(lines.user(long_message(SECRET_TEXT), session="s-pg")))
    with Journal.open() as journal:
        journal.import_files([str(path)])
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
        assert report.embedded == 1 and report.chunks >= 5, report.as_dict()
        original, = journal.conn.execute("SELECT chats_text(content) FROM messages").fetchone()
        local = journal.conn.execute("SELECT chunk_index, start_char, end_char FROM chunks ORDER BY 1").fetchall()
        for stage in ("first push", "re-push from the journal's vectors"):
            with psycopg.connect(pg_db_url) as conn:
                content, = conn.execute("SELECT content FROM messages").fetchone()
                table, = conn.execute("SELECT 'vectors_' || id FROM spaces").fetchone()
                remote = conn.execute(f"SELECT chunk_index, start_char, end_char FROM {table} ORDER BY 1").fetchall()
            assert SECRET_TEXT not in content and len(remote) == len(local), stage
            for (n, a, b), (m, c, d) in zip(local, remote):
                assert n == m and redact.redact(original[a:b]) == content[c:d], (stage, n)
            if stage == "first push":
                with psycopg.connect(pg_db_url) as conn:
                    conn.execute("TRUNCATE conversations CASCADE")
                journal.conn.execute("UPDATE messages SET synced = 0")
                report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
                assert report.embedded == 0 and report.pushed == 1, report.as_dict()
