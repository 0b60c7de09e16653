"""sqlite-vec spaces in a real journal: write, replace, KNN, counts, deletes, mismatches."""

import numpy as np
import pytest

from claude_chats.errors import SpaceMismatchError
from claude_chats.localstore import db, vectors
from claude_chats.models import EmbeddingProvider, canary_vector, embed_texts

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
def journal(tmp_path):
    conn = db.connect(str(tmp_path / "journal.db"))
    conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('s1', '2026-01-01')")
    for seq, text in enumerate(MESSAGES):
        conn.execute("INSERT INTO messages(uuid, session_id, seq, role, kind, content) "
                     "VALUES (?, 's1', ?, 'user', 'text', ?)", (f"u{seq}", seq, text))
    yield conn
    conn.close()


def message_ids(conn):
    return [row[0] for row in conn.execute("SELECT id FROM messages ORDER BY seq")]


def write_all(conn, provider, texts=MESSAGES):
    space_id = vectors.ensure_space(conn, provider.space, canary_vector(provider))
    for message_id, chunks in zip(message_ids(conn), embed_texts(provider, texts)):
        vectors.write_message_vectors(conn, space_id, message_id, chunks)
    return space_id


def test_space_row_table_and_canary(journal, minilm):
    space_id = write_all(journal, minilm)
    assert vectors.ensure_space(journal, minilm.space, canary_vector(minilm)) == space_id  # idempotent
    [(sid, space, canary)] = vectors.list_spaces(journal)
    assert sid == space_id and space == minilm.space
    np.testing.assert_allclose(canary, canary_vector(minilm), atol=1e-5)
    sql = journal.execute("SELECT sql FROM sqlite_master WHERE name = ?", (f"vec_{space_id}",)).fetchone()[0]
    assert "vec0" in sql and "float[384]" in sql and "cosine" in sql


def test_knn_finds_the_right_message(journal, minilm):
    space_id = write_all(journal, minilm)
    hits = vectors.knn(journal, space_id, minilm.embed_query("schema migration error in the database"), k=2)
    ids = message_ids(journal)
    assert hits[0][:2] == (ids[0], 0)
    assert 0 <= hits[0][2] < hits[1][2]  # cosine distance, nearest first
    assert len(hits) == 2


def test_rewrite_replaces_and_counts(journal, minilm):
    space_id = write_all(journal, minilm)
    ids = message_ids(journal)
    long_text = "A long investigation of the failing build. " * 400
    [chunks] = embed_texts(minilm, [long_text])
    assert len(chunks) > 1
    vectors.write_message_vectors(journal, space_id, ids[1], chunks)
    vectors.write_message_vectors(journal, space_id, ids[1], chunks)  # again: replaced, not duplicated
    [(sid, space, count, messages)] = vectors.count_vectors(journal)
    assert (sid, count, messages) == (space_id, 3 + len(chunks), 4)
    assert journal.execute(f"SELECT count(*) FROM vec_{space_id}").fetchone()[0] == 3 + len(chunks)
    loaded = vectors.load_message_vectors(journal, space_id, [ids[1], ids[2]])
    assert [(c.index, c.start, c.end) for c in loaded[ids[1]]] == [(c.index, c.start, c.end) for c in chunks]
    np.testing.assert_allclose(loaded[ids[1]][0].vector, chunks[0].vector, atol=1e-6)


def test_deleting_messages_deletes_their_vectors(journal, minilm):
    space_id = write_all(journal, minilm)
    ids = message_ids(journal)
    journal.execute("DELETE FROM messages WHERE id = ?", (ids[0],))  # cascade -> chunks -> trigger
    vectors.delete_message_vectors(journal, [ids[1]])
    assert journal.execute(f"SELECT count(*) FROM vec_{space_id}").fetchone()[0] == 2
    assert {h[0] for h in vectors.knn(journal, space_id, minilm.embed_query("cat"), k=10)} == set(ids[2:])


def test_two_spaces_never_mix(journal, minilm):
    first = write_all(journal, minilm)
    other = WordHash()
    second = write_all(journal, other)
    assert first != second
    assert [row[2] for row in vectors.count_vectors(journal)] == [4, 4]
    assert vectors.check_space(journal, minilm) == first
    assert vectors.check_space(journal, other) == second


def test_reader_with_another_model_gets_a_clear_error(journal, minilm):
    write_all(journal, minilm)
    with pytest.raises(SpaceMismatchError) as err:
        vectors.check_space(journal, WordHash())
    message = str(err.value)
    assert "llama all-MiniLM-L6-v2.f16 (384 dims)" in message and "word-hash hash-v1 (384 dims)" in message


def test_reader_with_other_dimensions_gets_a_clear_error(journal, minilm, test_model_path):
    from claude_chats.models.llama import LlamaProvider

    write_all(journal, minilm)
    with LlamaProvider(model=str(test_model_path), dimensions=256, threads=1) as smaller:
        with pytest.raises(SpaceMismatchError, match=r"384 dims.*256 dims"):
            vectors.check_space(journal, smaller)


def test_same_key_but_other_vectors_fails_the_canary(journal, minilm):
    """A model file swapped under the same name: the key matches, the canary does not."""

    class Impostor(WordHash):
        name, model_id = minilm.name, minilm.model_id

    space_id = write_all(journal, minilm)
    with pytest.raises(SpaceMismatchError, match=r"does not reproduce the canary.*cosine -?\d\.\d+ < 0\.99.*changed"):
        vectors.check_space(journal, Impostor())
    assert vectors.check_space(journal, minilm) == space_id


def test_empty_journal_has_no_space(journal, minilm):
    assert vectors.check_space(journal, minilm) is None
    assert vectors.count_vectors(journal) == []
