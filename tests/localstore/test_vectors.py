"""sqlite-vec spaces in a real journal: write, replace, KNN, counts, deletes, mismatches."""

import numpy as np
import pytest

from claude_chats.errors import SpaceMismatchError
from claude_chats.localstore import ivf, vectors, writer
from claude_chats.models import EmbeddingProvider, canary_vector, embed_texts
from tests.support.vectors import assert_decoded

MESSAGES = ["The database migration failed on the users table.",
            "My cat sleeps on the keyboard all afternoon.",
            "We fixed the flaky integration test by waiting for the port.",
            "Postgres with pgvector is the canonical store."]


class WordHash(EmbeddingProvider):
    """A deterministic stand-in where the model is not the subject (mismatch tests)."""

    name, model_id, dimensions, batch_size = "word-hash", "hash-v1", 384, 16

    def embed_batch(self, texts, kind):
        out = np.full((len(texts), self.dimensions), 0.01, dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hash(word) % self.dimensions] += 1
        return out


@pytest.fixture
def seeded_conn(journal_conn):
    """A raw connection to a journal holding ``MESSAGES`` (session s1), no vectors yet."""
    journal_conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('s1', '2026-01-01')")
    for seq, text in enumerate(MESSAGES):
        journal_conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content) "
                             "VALUES (?, ?, ?, 'user', 'text', ?)", (f"u{seq}", writer.session_number(journal_conn, "s1"), seq, text))
    return journal_conn


def message_ids(conn):
    return [row[0] for row in conn.execute("SELECT id FROM messages ORDER BY seq")]


def write_all(conn, provider, texts=MESSAGES):
    space_id = vectors.ensure_space(conn, provider.space, canary_vector(provider))
    for message_id, chunks in zip(message_ids(conn), embed_texts(provider, texts)):
        vectors.write_message_vectors(conn, space_id, message_id, chunks)
    return space_id


def test_space_row_table_and_canary(seeded_conn, minilm):
    space_id = write_all(seeded_conn, minilm)
    assert vectors.ensure_space(seeded_conn, minilm.space, canary_vector(minilm)) == space_id  # idempotent
    [(sid, space, canary)] = vectors.list_spaces(seeded_conn)
    assert sid == space_id and space == minilm.space
    np.testing.assert_allclose(canary, canary_vector(minilm), atol=1e-5)
    assert ivf.ready(seeded_conn, space_id) and not vectors.legacy(seeded_conn, space_id)
    assert ivf.codec(seeded_conn, space_id).dims == 384


def test_knn_finds_the_right_message(seeded_conn, minilm):
    space_id = write_all(seeded_conn, minilm)
    hits = vectors.knn(seeded_conn, space_id, minilm.embed_query("schema migration error in the database"), k=2)
    ids = message_ids(seeded_conn)
    assert hits[0][:2] == (ids[0], 0)
    assert 0 <= hits[0][2] < hits[1][2]  # cosine distance, nearest first
    assert len(hits) == 2


def test_rewrite_replaces_and_counts(seeded_conn, minilm):
    space_id = write_all(seeded_conn, minilm)
    ids = message_ids(seeded_conn)
    long_text = "A long investigation of the failing build. " * 400
    [chunks] = embed_texts(minilm, [long_text])
    assert len(chunks) > 1
    vectors.write_message_vectors(seeded_conn, space_id, ids[1], chunks)
    vectors.write_message_vectors(seeded_conn, space_id, ids[1], chunks)  # again: replaced, not duplicated
    [(sid, space, count, messages)] = vectors.count_vectors(seeded_conn)
    assert (sid, count, messages) == (space_id, 3 + len(chunks), 4)
    assert len(ivf.live(seeded_conn, space_id)) == 3 + len(chunks)
    loaded = vectors.load_message_vectors(seeded_conn, space_id, [ids[1], ids[2]])
    assert [(c.index, c.start, c.end) for c in loaded[ids[1]]] == [(c.index, c.start, c.end) for c in chunks]
    # stored as int8 codes and 4-bit residuals: within max|x| / (127 * 32) of every component
    assert_decoded(seeded_conn, space_id, loaded[ids[1]][0].vector, chunks[0].vector)


def test_deleting_messages_deletes_their_vectors(seeded_conn, minilm):
    space_id = write_all(seeded_conn, minilm)
    ids = message_ids(seeded_conn)
    seeded_conn.execute("DELETE FROM messages WHERE id = ?", (ids[0],))  # cascade -> chunks -> trigger
    vectors.delete_message_vectors(seeded_conn, [ids[1]])
    assert len(ivf.live(seeded_conn, space_id)) == 2
    assert {h[0] for h in vectors.knn(seeded_conn, space_id, minilm.embed_query("cat"), k=10)} == set(ids[2:])


def test_two_spaces_never_mix(seeded_conn, minilm):
    first = write_all(seeded_conn, minilm)
    other = WordHash()
    second = write_all(seeded_conn, other)
    assert first != second
    assert [row[2] for row in vectors.count_vectors(seeded_conn)] == [4, 4]
    assert vectors.check_space(seeded_conn, minilm) == first
    assert vectors.check_space(seeded_conn, other) == second


def test_reader_with_another_model_gets_a_clear_error(seeded_conn, minilm):
    write_all(seeded_conn, minilm)
    with pytest.raises(SpaceMismatchError) as err:
        vectors.check_space(seeded_conn, WordHash())
    message = str(err.value)
    assert "llama all-MiniLM-L6-v2.f16 (384 dims)" in message and "word-hash hash-v1 (384 dims)" in message


def test_reader_with_other_dimensions_gets_a_clear_error(seeded_conn, minilm, test_model_path):
    from claude_chats.models.llama import LlamaProvider

    write_all(seeded_conn, minilm)
    with LlamaProvider(model=str(test_model_path), dimensions=256, threads=1) as smaller:
        with pytest.raises(SpaceMismatchError, match=r"384 dims.*256 dims"):
            vectors.check_space(seeded_conn, smaller)


def test_same_key_but_other_vectors_fails_the_canary(seeded_conn, minilm):
    """A model file swapped under the same name: the key matches, the canary does not."""

    class Impostor(WordHash):
        name, model_id = minilm.name, minilm.model_id

    space_id = write_all(seeded_conn, minilm)
    with pytest.raises(SpaceMismatchError, match=r"does not reproduce the canary.*cosine -?\d\.\d+ < 0\.99.*changed"):
        vectors.check_space(seeded_conn, Impostor())
    assert vectors.check_space(seeded_conn, minilm) == space_id


def test_empty_journal_has_no_space(seeded_conn, minilm):
    assert vectors.check_space(seeded_conn, minilm) is None
    assert vectors.count_vectors(seeded_conn) == []


def test_backlog_counts_what_a_space_still_lacks_after_the_recipes_limits(seeded_conn):
    conn = seeded_conn
    for seq, (kind, text) in enumerate([("tool_result", "x" * 5000), ("thinking", "hmm " * 50),
                                        ("text", "   \n"), ("tool_use", "[Bash] ls")], start=len(MESSAGES)):
        conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content) "
                     "VALUES (?, ?, ?, 'assistant', ?, ?)", (f"u{seq}", writer.session_number(conn, "s1"), seq, kind, text))
    conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content, copy) "
                 "VALUES ('u-copy@s2', ?, 99, 'user', 'text', 'a copy of a line', 1)", (writer.session_number(conn, "s1"),))
    words = sum(len(t) for t in MESSAGES)
    limits = (("thinking", 0), ("tool_result", 500))
    # no space yet: everything but blanks, copies and the kinds embedded not at all; a kind up to its limit
    assert vectors.backlog(conn, None, limits) == (len(MESSAGES) + 2, words + 500 + len("[Bash] ls"))
    assert vectors.backlog(conn, None) == (len(MESSAGES) + 3, words + 5000 + 200 + len("[Bash] ls"))
    space_id = write_all(conn, WordHash())
    assert vectors.backlog(conn, space_id, limits) == (2, 500 + len("[Bash] ls"))
