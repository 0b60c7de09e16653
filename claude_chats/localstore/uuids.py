"""Uuids kept in 16 bytes in the journal (``messages.uuid``, ``raw_lines.key``; journal migration 0013).

A message's uuid and a kept line's key are mostly a uuid as Claude Code writes it (36 characters,
lowercase hex and four dashes), sometimes followed by a suffix (``<uuid>#<n>``: the n-th block of a
line; ``<uuid>@<session>``: a fork's copy). As TEXT each took 36 bytes in its row and again in its
unique index: 87 bytes a message at 100k (BENCHMARKS.md, session 25). ``pack`` stores such a value as
a BLOB, the uuid's 16 bytes then the suffix's UTF-8; every other value (a key of a line without a
uuid, a uuid in capitals) stays TEXT as it was. ``unpack`` gives back the text, exactly.

The mapping is one to one, so a unique index over the packed values is unique over the texts, and
the order of the packed values keeps what the journal needs of it: the values starting with one
uuid are the range ``[pack(u), pack(u) + b"A")`` (``#`` and ``@`` sort before ``A``), as the texts
were ``[u, u || 'A')``. A BLOB sorts after every TEXT in SQLite, so the two forms never interleave.

Every journal connection has ``chats_uuid(value)`` (``register``, called by ``db.connect``): the text
of a stored value, for the statements that read one. Whoever binds a uuid to compare with the
column packs it first. A stored BLOB this module did not write (a journal changed by hand) is a
``JournalError`` saying so, never another uuid.

On the hook's path: no import beyond the standard types.
"""

HEX = "0123456789abcdef"
SIZE = 16          # bytes of a packed uuid, before its suffix
TEXT = 36          # characters of a uuid as text


def pack(value):
    """The stored form of a uuid or key: bytes when it starts with a lowercase uuid, else ``value`` itself."""
    if type(value) is not str or len(value) < TEXT:
        return value
    if value[8] != "-" or value[13] != "-" or value[18] != "-" or value[23] != "-":
        return value
    digits = value[:8] + value[9:13] + value[14:18] + value[19:23] + value[24:TEXT]
    if digits.strip(HEX):   # a character that is not a lowercase hex digit (strip stops at the first)
        return value
    try:
        rest = value[TEXT:].encode()
    except UnicodeEncodeError:   # a lone surrogate: left as it was (SQLite refuses it as TEXT too)
        return value
    return bytes.fromhex(digits) + rest


def unpack(value):
    """The text of a stored uuid or key (a TEXT value as it is)."""
    if type(value) is not bytes:
        return value
    if len(value) < SIZE:
        raise _damaged("is shorter than a uuid")
    h = value[:SIZE].hex()
    try:
        rest = value[SIZE:].decode()
    except UnicodeDecodeError:
        raise _damaged("has a suffix that is not UTF-8") from None
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}{rest}"


def after(value):
    """The bound just past every stored value that starts with ``value`` (packed): ``stored >= pack(value)
    AND stored < after(value)`` is the range of its ``#n`` and ``@session`` forms and itself."""
    packed = pack(value)
    return packed + b"A" if type(packed) is bytes else packed + "A"


def register(conn):
    """``chats_uuid(value)`` on ``conn``: the text of a stored uuid or key; ``chats_pack_uuid(text)``: its
    stored form (journal migration 0013)."""
    conn.create_scalar_function("chats_uuid", unpack, 1, deterministic=True)
    conn.create_scalar_function("chats_pack_uuid", pack, 1, deterministic=True)


def _damaged(what):
    from ..errors import JournalError   # here: errors is off the hook's path

    return JournalError(f"a uuid stored in the journal {what}: it was not written by claude-chats "
                        "(a journal changed by hand?)")
