"""What sync pushes: plain tuples in the column order of the COPY into Postgres.

The journal's outbox (``localstore.outbox``) makes them, the canonical store
(``pgstore.store``) writes them, ``sync`` carries them between the two: so they
live below all three. Timestamps stay ISO-8601 text (as the journal stores
them); Postgres casts them, which is faster than parsing in Python.
"""

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:   # numpy is not imported at run time: `chats status` reads the outbox, which makes these
    import numpy as np


class Conversation(NamedTuple):
    session_id: str
    project_path: str | None
    git_branch: str | None
    name: str | None
    started_at: str | None
    last_at: str | None
    parent_session_id: str | None
    agent_id: str | None
    machine: str | None
    updated_at: str | None
    entrypoint: str | None = None     # where the session came from (``cli``, ``sdk-cli``, ...)
    machine_made: bool = False        # started by a script or an SDK run: left out of search by default


class Message(NamedTuple):
    message_uuid: str
    session_id: str
    seq: int
    role: str
    kind: str
    content: str
    created_at: str | None
    is_copy: bool = False   # a fork's copy of a line another session holds (not searched)
    words: int | None = None   # its length in FTS5 tokens (bm25's document length; None: not known)


class RawLine(NamedTuple):
    """A transcript line kept for restore (``rawlines``): ``line`` is zlib of its bytes (pushed packed), None for a link."""
    session_id: str
    key: str
    seq: int
    parent: str | None
    line: bytes | None
    created_at: str | None


class VectorRow(NamedTuple):
    """One embedded piece of a message, ``content[start_char:end_char]``, as its space's vector table holds it."""
    message_uuid: str
    chunk_index: int
    start_char: int
    end_char: int
    embedding: "np.ndarray"


class Batch(NamedTuple):
    """One transaction's worth: conversations, their messages, and the ``VectorRow``s of ``space``
    (a ``models.Space``)."""
    conversations: list
    messages: list
    chunks: list
    space: object = None


class PushResult(NamedTuple):
    conversations: int     # rows inserted or updated
    messages: int          # rows inserted (0 for messages already there)
    chunks: int            # vectors inserted
    missing: list          # message uuids of the batch not in Postgres afterwards (normally empty)
