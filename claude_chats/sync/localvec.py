"""Keeping sync's vectors in the journal (sqlite-vec), so offline semantic search works
and a crashed or offline sync does not embed the same messages twice.

``LocalVectors`` is the interface the engine uses, over
``claude_chats.localstore.vectors``: ``prepare(space, canary)``,
``load(message_ids) -> {message_id: [Chunk]}``, ``save({message_id: [Chunk]})``
(chunks as ``models.Chunk(index, start, end, vector)``).
"""

from ..localstore import vectors


class LocalVectors:
    def __init__(self, conn):
        self.conn, self.space_id = conn, None

    def prepare(self, space, canary):
        """Use (creating if new) the journal's space for ``space`` (a ``models.Space``)."""
        self.space_id = vectors.ensure_space(self.conn, space, canary)

    def load(self, message_ids):
        return vectors.load_message_vectors(self.conn, self.space_id, message_ids)

    def save(self, embedded):
        """Store a batch's vectors in one journal transaction."""
        with self.conn:
            for message_id, chunks in embedded.items():
                vectors.write_message_vectors(self.conn, self.space_id, message_id, chunks)


def local_vectors(journal):
    return LocalVectors(journal.conn)
