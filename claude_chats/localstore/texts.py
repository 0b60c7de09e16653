"""A message's text kept compressed once it is old (``messages.content``).

The text of a message is most of its row, and at a year's size most of the journal after the vectors
(1,066 of 3,418 bytes a message at a million). ``chats sync`` packs the text of every message older
than ``PACK_AFTER`` (``outbox.pack_old_texts``): ``messages.content`` then holds a BLOB, ``PACKED`` +
the text's length in characters (4 bytes, little-endian) + the zlib stream of its UTF-8, where it held
TEXT. The hook writes TEXT, as always, and reads only a session's latest messages: its path
compresses nothing.

Every reader of the text goes through SQL functions every journal connection has (``register``,
called by ``db.connect``):

* ``chats_text(content)``: the text (a TEXT value as it is, a packed one unpacked);
* ``chats_length(content)``: its length in characters, without unpacking (the counts' triggers);
* ``chats_repacking()`` and ``chats_fts_later()``: 0, but 1 on one connection while it packs texts
  (``repacking``) or indexes the messages it inserts itself (``indexing_later``).

The full-text index (external content) is given the text by its triggers through ``chats_text``;
packing leaves it alone (the text is the same: see ``outbox.pack_old_texts``). A packed text that is
not what this module writes (a journal changed by hand, a damaged page) is a ``JournalError`` saying
so, never another text; one that unpacks to more than ``TEXT_LIMIT`` stops there (nothing larger is
allocated). The journal's triggers call these functions: a connection without them (the ``sqlite3``
shell) that writes messages or vectors fails with "no such function".

Not on the hook's path: ``zlib`` is imported by the first packed text read (a hint, a dedupe of an old
final answer), never to write.
"""

PACKED = b"\x01"          # the first byte of a packed text: no zlib stream starts with it, and no TEXT is a BLOB
HEADER = 5                # PACKED + the length in characters (uint32, little-endian)
PACK_AFTER = 86_400       # seconds: a message younger than this stays as written (a resumed session reads it)
PACK_MIN = 64             # characters: a shorter text stays as written (the header and zlib's would eat the gain)
LEVEL = 6
TEXT_LIMIT = 64 << 20     # bytes a packed text may unpack to: a message comes from one transcript line (see rawlines)


# id(conn) -> [0 or 1]: what ``chats_fts_later()`` says on that connection. A closed connection's cell
# stays (a list of one int); a new connection given its id is given a new cell by ``register``.
_INDEXING_LATER = {}


def register(conn):
    """``chats_text``, ``chats_length``, ``chats_repacking`` (0: see ``outbox.pack_old_texts``) and
    ``chats_fts_later`` (0: see ``indexing_later``) on ``conn`` (every journal connection: ``db.connect``)."""
    conn.create_scalar_function("chats_text", text_of, 1, deterministic=True)
    conn.create_scalar_function("chats_length", length_of, 1, deterministic=True)
    repacking(conn, False)
    # a cell read by the function, not a function registered again: registering one expires every
    # statement the connection has prepared (each is compiled again on its next use)
    cell = _INDEXING_LATER[id(conn)] = [0]
    conn.create_scalar_function("chats_fts_later", lambda: cell[0], 0)


class indexing_later:   # noqa: N801 - a context, named as what it says
    """A context in which ``chats_fts_later()`` is 1 on ``conn`` (a journal connection: ``register``): the
    full-text index's insert trigger leaves the messages inserted to the writer, which indexes them in one
    statement after (``writer._insert_messages``)."""

    def __init__(self, conn):
        self.cell = _INDEXING_LATER[id(conn)]

    def __enter__(self):
        self.cell[0] = 1
        return self

    def __exit__(self, *exc):
        self.cell[0] = 0
        return False


def text_sql(row=""):
    """SQL for the text of ``messages.content`` of ``row`` (``"old."``, ``"new."``, or ``""``: the row read):
    a TEXT value as it is (no call into Python), a packed one through ``chats_text``."""
    return f"CASE WHEN typeof({row}content) = 'text' THEN {row}content ELSE chats_text({row}content) END"


def repacking(conn, on):
    """What ``chats_repacking()`` says on ``conn``: while 1, the triggers on messages do nothing there
    (journal migration 0010), so a message deleted and inserted again as it was changes nothing else."""
    value = 1 if on else 0
    conn.create_scalar_function("chats_repacking", lambda: value, 0)


def text_of(value):
    """The text of a ``messages.content`` value (TEXT as it is; a packed BLOB unpacked)."""
    if isinstance(value, bytes):
        return unpack(value)
    return value


def length_of(value):
    """The length in characters of a ``messages.content`` value, without unpacking it: SQL's ``length`` of
    the text (which stops at a NUL character; a text holding one is never packed)."""
    if isinstance(value, bytes):
        _check(value)
        return int.from_bytes(value[1:HEADER], "little")
    return None if value is None else len(value.split("\x00", 1)[0])


def pack(text):
    """The packed form of ``text`` (bytes), or None when packing would not make its row smaller, the text is
    blank (``PACK_MIN``; blank texts are counted apart, see journal migration 0006) or holds a NUL character
    (SQL's ``length`` of it, which the counts hold, stops there)."""
    if not isinstance(text, str) or len(text) < PACK_MIN or not text.strip(" \t\n") or "\x00" in text:
        return None
    import zlib

    raw = text.encode("utf-8", "surrogatepass")
    packed = PACKED + len(text).to_bytes(4, "little") + zlib.compress(raw, LEVEL)
    return packed if len(packed) < len(raw) else None


def unpack(value, limit=TEXT_LIMIT):
    """The text of a packed value; ``errors.JournalError`` for one that is not (wrong header, not zlib, cut
    short, past ``limit`` bytes, not UTF-8, or not the length it says)."""
    _check(value)
    import zlib

    stream = zlib.decompressobj()
    try:
        raw = stream.decompress(memoryview(value)[HEADER:], limit)
    except zlib.error as exc:
        raise _damaged(f"is damaged ({exc})") from None
    if not stream.eof:
        raise _damaged(f"unpacks to more than {limit} bytes" if len(raw) >= limit else "is cut short")
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise _damaged("is not UTF-8") from None
    if len(text) != int.from_bytes(value[1:HEADER], "little"):
        raise _damaged("is not the length its header says")
    return text


def _check(value):
    if len(value) <= HEADER or value[:1] != PACKED:
        raise _damaged("is stored as bytes this version did not write")


def _damaged(what):
    from ..errors import JournalError   # here: errors is off the hook's path

    return JournalError(f"a message's packed text {what}: the journal was changed outside claude-chats "
                        "or is damaged (chats doctor --full)")
