"""Keeping sync's vectors in the journal (sqlite-vec), so offline semantic search works
and a crashed sync does not embed the same messages twice.

The interface sync needs, over ``claude_chats.localstore.vectors``:
``prepare(space, canary)``, ``load(message_ids) -> {message_id: [Chunk]}``,
``save({message_id: [Chunk]})`` (chunks as ``models.Chunk(index, start, end,
vector)``). ``local_vectors(journal)`` is None while that module is absent.
"""


def local_vectors(journal):
    try:
        from ..localstore import vectors  # noqa: F401
    except ImportError:
        return None
    return None
