"""The journal's full-text index in parts, so that erasing a session rewrites one part, not the whole index.

One FTS5 table over every message made ``chats purge`` slow at a year's size: FTS5's secure-delete
costs ~160 ms a message in a 1M-message index, and merging the index (``optimize``) rewrites all of it.
So the index is a head and sealed parts (journal migration 0008):

- ``messages_fts`` (the head) takes every new message: the hook's trigger writes there, as it always did;
- ``seal`` renames a head of ``PART_ROWS`` messages or more to a part, ``messages_fts_<n>`` (``n``: a
  number that grows with each seal, so the newest part has the highest), and starts an empty head.
  ``chats import`` seals between files, ``chats sync`` at the end of a run (``maintain``), which also
  splits a part too big to rewrite quickly (the whole index of a journal from before the parts) into
  parts of ``PART_ROWS``, combines neighbouring parts small enough to be one (parts of an older, smaller
  size), one committed step at a time, and merges each sealed part into one segment (``merge_parts``);
- a message is in exactly one table. The delete and update triggers find it by that table's
  ``%_docsize`` row (``write_triggers``), so nothing depends on id ranges (SQLite reuses the highest
  rowid after it is deleted); an updated message (``chats redact --journal``) moves to the head;
- a purge deletes from the tables its messages are in and merges those alone (``erase``); a part left
  empty is dropped.

Full text asks the tables newest first (``tables``): the head, then the parts from the highest number,
and ranks with the statistics of all of them (``bm25.Ranker``): every message scores what ``bm25()``
gives it in one table. A search reads one snapshot (``db.Snapshot``), so a seal or a drop committed
meanwhile hides nothing from it.
"""

from .. import faults
from . import texts
from .db import Immediate

HEAD = "messages_fts"
PART_ROWS = 131_072   # a part's size when sealed: 8 parts at a million messages. Each part costs every search
#   and every prompt's hints a look-up of each word (at 1M, 16 parts of 65,536 against 8: hints 1.53x
#   against 1.44x the hook's floor, full text 18.3 against 17.0 ms), and a purge a merge of its part
#   (a ~1,000-message session 1.0 against 1.4 s)
SPLIT_ABOVE = 2 * PART_ROWS   # a sealed part bigger than this is split (``maintain``)
COMBINE_STEP = 8_192   # messages a step of ``combine`` moves: one transaction, 0.5-0.7 s at 1M
MERGE_PAGES = 500     # leaf pages (~4 KB each) a step of ``merge`` writes: ~2 MB, tens of milliseconds
TOKENIZE = "porter unicode61 remove_diacritics 2"   # the head's too (journal migration 0001)
CREATE = ("CREATE VIRTUAL TABLE {name} USING fts5(content, content='messages', content_rowid='id', "
          f"tokenize='{TOKENIZE}')")
SHADOWS = ("data", "idx", "docsize", "config")
PREFIX = "messages_fts_"   # a part: this and 8 digits (no `re`: the hook imports this module)
STEP = 1000          # between the numbers of two seals: room for the parts of a split
TRIGGERS = ("messages_fts_insert", "messages_fts_delete", "messages_fts_update")


def tables(conn):
    """The index's tables, newest first: the head, then the sealed parts from the highest number."""
    parts = []
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB "
                                "'messages_fts_[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]' AND "
                                "sql LIKE 'CREATE VIRTUAL TABLE%'"):
        if is_part(name):
            parts.append(name)
    return [HEAD] + sorted(parts, reverse=True)


def rows(conn, name):
    """The messages ``name`` indexes, read in O(1) (``totals``)."""
    return totals(conn, name)[0]


def totals(conn, name):
    """(messages, tokens) that ``name`` indexes: FTS5's averages record (``%_data`` rowid 1: the row
    total, then each column's token total, varints in SQLite's format), read in O(1)."""
    check(name)
    found = conn.execute(f"SELECT block FROM {name}_data WHERE id = 1").fetchall()
    blob = (found[0][0] if found else b"") or b""
    values, at = [], 0
    while len(values) < 2:
        value, at = varint(blob, at)
        values.append(value)
    return tuple(values)


def varint(blob, at):
    """(value, next offset) of the SQLite varint at ``at``; 0 past the end (an empty record)."""
    value = 0
    for i in range(9):
        if at >= len(blob):
            return value, at
        byte = blob[at]
        at += 1
        if i == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at
    return value, at


def holding(conn, ids_sql, args=()):
    """{table: how many of the messages ``ids_sql`` selects it holds}, for the tables holding any."""
    found = {}
    for name in tables(conn):
        n = conn.execute(f"SELECT count(*) FROM {name}_docsize WHERE id IN ({ids_sql})", args).fetchall()[0][0]
        if n:
            found[name] = n
    return found


def count_matches(conn, match, limit, names=None):
    """How many messages match the FTS5 expression ``match``, counted up to ``limit`` (each table's read
    bounded by what is still missing; ``names``: the tables, when already read)."""
    total = 0
    for name in tables(conn) if names is None else names:
        total += count_in(conn, name, match, limit - total)
        if total >= limit:
            break
    return total


def count_in(conn, name, match, limit):
    """How many messages of the table ``name`` match ``match``, counted up to ``limit``."""
    check(name)
    return conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {name} WHERE {name} MATCH ? LIMIT ?)",
                        (match, limit)).fetchall()[0][0]


def matching_rows(conn, match, limit, names=None):
    """``(n, {table: its messages' ids, comma-separated})``: the messages matching the FTS5 expression
    ``match``, up to ``limit`` of them in all, newest table first (``count_matches``' reads, with the rows;
    the ids as SQLite joins them: a caller that needs only the count parses nothing); tables with none are
    left out."""
    found, total = {}, 0
    for name in tables(conn) if names is None else names:
        check(name)
        n, ids = conn.execute(f"SELECT count(*), group_concat(rowid) FROM (SELECT rowid FROM {name} WHERE {name} "
                              f"MATCH ? LIMIT ?)", (match, limit - total)).fetchall()[0]
        if n:
            found[name] = ids
            total += n
        if total >= limit:
            break
    return total, found


def secure_delete(conn, name, on):
    """FTS5's secure-delete option of one table (kept in its ``%_config``)."""
    check(name)
    conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('secure-delete', ?)", (int(on),))


def optimize(conn, name):
    check(name)
    conn.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")


# a message's text for the index: a TEXT value as it is, a packed one through ``chats_text`` (``texts``)
_OLD_TEXT = texts.text_sql("old.")
_NEW_TEXT = texts.text_sql("new.")


# the insert trigger's condition since journal migration 0011: the writer, which indexes its messages itself
# (``writer._insert_messages``), says so on its connection (``texts.indexing_later``)
INSERT_WHEN = "WHEN NOT chats_repacking() AND NOT chats_fts_later()"


def write_triggers(conn, names=None):
    """The triggers that keep the index in step with ``messages``: a new message goes to the head; a
    deleted one leaves the table that holds it (one ``%_docsize`` lookup a table); an updated one leaves
    its table and goes to the head. Called in the transaction that changes the tables."""
    names = tables(conn) if names is None else names
    for name in names:
        check(name)
    for trigger in TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    leave = "".join(f"    INSERT INTO {n}({n}, rowid, content) SELECT 'delete', old.id, {_OLD_TEXT} "
                    f"WHERE EXISTS (SELECT 1 FROM {n}_docsize WHERE id = old.id);\n" for n in names)
    # (a text being packed: its message deleted and inserted again as it was, ``texts``: the index keeps it)
    conn.execute(f"CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages {INSERT_WHEN} BEGIN\n"
                 f"    INSERT INTO {HEAD}(rowid, content) VALUES (new.id, {_NEW_TEXT});\nEND")
    conn.execute(f"CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN NOT chats_repacking() "
                 f"BEGIN\n{leave}END")
    conn.execute(f"CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN\n{leave}"
                 f"    INSERT INTO {HEAD}(rowid, content) VALUES (new.id, {_NEW_TEXT});\nEND")


def triggers_read_packed(conn):
    """Whether the index's triggers read a packed text and leave a message being packed alone
    (``write_triggers`` since journal migration 0010); ``outbox.pack_old_texts`` writes them first when not."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' "
                       "AND name = 'messages_fts_delete'").fetchall()
    return bool(sql) and "chats_repacking()" in sql[0][0] and _OLD_TEXT in sql[0][0]


def seal(conn, at_least=None):
    """Rename the head to the next part and start an empty one, when the head holds ``at_least`` messages
    (default ``PART_ROWS``) or more. Returns the part's name, or None. One short transaction (a rename, no
    rewrite)."""
    at_least = PART_ROWS if at_least is None else at_least
    with Immediate(conn):
        if rows(conn, HEAD) < max(1, at_least):
            return None
        name = _next_name(conn)
        for trigger in TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute(f"ALTER TABLE {HEAD} RENAME TO {name}")
        _create(conn, HEAD)
        write_triggers(conn)
    return name


def split(conn, name, size=None, on_step=None):
    """Move the messages of part ``name`` into new parts of ``size`` (default ``PART_ROWS``) messages,
    oldest first, one committed step each (a crash leaves every message in exactly one table), then drop
    ``name``."""
    check(name)
    if name == HEAD:
        raise ValueError("the head is sealed before it is split")

    def new_part():
        part = _next_name(conn, below=name)
        _create(conn, part)
        write_triggers(conn)
        return part
    _move_out(conn, name, PART_ROWS if size is None else size, new_part, "split", on_step)


def combine(conn, newer, older, on_step=None):
    """Move the messages of sealed part ``older`` into ``newer``, the part next to it in the order (the
    next higher number), ``COMBINE_STEP`` of them a committed step, then drop ``older``."""
    check(newer)
    check(older)
    parts = tables(conn)[1:]
    if newer not in parts or older not in parts or parts.index(older) != parts.index(newer) + 1:
        raise ValueError(f"{older} is not the part next older than {newer}")
    _move_out(conn, older, COMBINE_STEP, lambda: newer, "combine", on_step)


def _move_out(conn, name, size, into, point, on_step):
    """Move the messages of part ``name`` out, ``size`` of them a committed step, oldest first, into the part
    ``into()`` names (called inside each step's transaction), then drop ``name``: a crash leaves every
    message in exactly one table, and the move goes on from where it was cut. ``name``'s deletes are plain
    (markers): what they leave in its segments goes with the table, dropped under ``secure_delete``."""
    secure_delete(conn, name, False)
    while True:
        with Immediate(conn):
            ids = [r[0] for r in conn.execute(f"SELECT id FROM {name}_docsize ORDER BY id LIMIT ?", (size,))]
            if not ids:
                _drop(conn, name)
                return
            part = into()
            batch = (f"SELECT m.id, chats_text(m.content) AS content FROM {name}_docsize d "
                     f"JOIN messages m ON m.id = d.id "
                     f"WHERE d.id BETWEEN ? AND ?")
            before = conn.total_changes()
            conn.execute(f"INSERT INTO {part}(rowid, content) {batch}", (ids[0], ids[-1]))
            if conn.total_changes() == before:   # index rows without their messages: out of step
                raise RuntimeError(f"{name} indexes messages the journal does not have: chats doctor --rebuild-fts")
            conn.execute(f"INSERT INTO {name}({name}, rowid, content) SELECT 'delete', id, content FROM ({batch})",
                         (ids[0], ids[-1]))
            if conn.execute(f"SELECT 1 FROM {name}_docsize WHERE id = ?", (ids[0],)).fetchall():
                raise RuntimeError(f"{name} kept a message it gave {part}: chats doctor --rebuild-fts")
            faults.point(f"mid-{point}")
        faults.point(f"after-{point}-step")
        if on_step:
            on_step(part, len(ids))


def to_combine(conn):
    """``(newer, older)``: the first pair of neighbouring sealed parts, newest first, small enough to be one
    (``_together``: two parts of an older, smaller size; two a purge thinned), or None."""
    parts = tables(conn)[1:]
    for newer, older in zip(parts, parts[1:]):
        if _together(rows(conn, newer), rows(conn, older)):
            return newer, older
    return None


def _together(newer, older):
    """Whether parts of ``newer`` and ``older`` messages are combined: together at most ``PART_ROWS`` and a
    quarter."""
    return newer + older <= PART_ROWS + PART_ROWS // 4


def drop_empty(conn):
    """Drop the sealed parts that hold no message (a purge emptied them). Returns their names."""
    with Immediate(conn):
        empty = [n for n in tables(conn)[1:] if rows(conn, n) == 0 and
                 not conn.execute(f"SELECT 1 FROM {n}_docsize LIMIT 1").fetchall()]
        for name in empty:
            _drop(conn, name)
    return empty


def to_move(conn):
    """Messages ``maintain`` will move: those of parts too big to merge quickly, and of the older part of
    each pair it will combine (``to_combine``, pair after pair, as ``maintain`` goes)."""
    sizes = [rows(conn, name) for name in tables(conn)[1:]]
    moving = sum(n for n in sizes if n > SPLIT_ABOVE)
    sizes = [n for n in sizes if n <= SPLIT_ABOVE]   # (a split's parts are whole: none is combined)
    i = 0
    while i + 1 < len(sizes):
        if _together(sizes[i], sizes[i + 1]):
            moving += sizes[i + 1]
            sizes[i] += sizes.pop(i + 1)
        else:
            i += 1
    return moving


def maintain(conn, on_step=None):
    """What ``chats sync`` does after a run: seal a full head, split any part too big to merge quickly, and
    combine neighbouring parts small enough to be one (parts of an older, smaller ``PART_ROWS``). Returns the
    number of messages moved."""
    seal(conn)
    moved = 0

    def step(part, n):
        nonlocal moved
        moved += n
        if on_step:
            on_step(part, n)
    for name in tables(conn)[1:]:
        if rows(conn, name) > SPLIT_ABOVE:
            split(conn, name, on_step=step)
    while (pair := to_combine(conn)) is not None:
        combine(conn, *pair, on_step=step)
    return moved


def segments(conn, name):
    """How many segments the index of ``name`` is in (``%_idx`` has a row per leaf range of each)."""
    check(name)
    return conn.execute(f"SELECT count(DISTINCT segid) FROM {name}_idx").fetchall()[0][0]


def merge(conn, name, pages=None, on_step=None):
    """Merge sealed part ``name`` into one segment, a committed step of ``pages`` (default ``MERGE_PAGES``)
    leaf pages at a time. Returns the steps taken.

    Each step is FTS5's ``merge`` with a negative budget: an optimize begun, or carried on where the last
    step (or a killed process) left it, as fts5IndexOptimizeStruct takes a merge under way for one. A
    head is sealed as FTS5's automerge left it, 9-26 segments at 65,536 messages, and a word is looked up
    in each segment of each part: at a million messages a prompt's 7 words counted again over the 16 parts
    took 8.0-8.4 ms, merged 1.5-1.6 ms. Sealed parts take no new messages, so a merge lasts."""
    check(name)
    budget, steps = MERGE_PAGES if pages is None else pages, 0
    while segments(conn, name) > 1:
        with Immediate(conn):
            before = conn.total_changes()
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('merge', ?)", (-budget,))
            worked = conn.total_changes() - before >= 2   # FTS5's sign that a merge wrote something
            faults.point("mid-merge")
        steps += 1
        if on_step:
            on_step(name)
        if not worked:
            break   # nothing FTS5 would merge: the part stays as it is
    return steps


def merge_parts(conn, on_step=None):
    """``merge`` every sealed part in more than one segment, newest first. Returns the parts merged."""
    return sum(1 for name in tables(conn)[1:] if merge(conn, name, on_step=on_step))   # 0 steps: one segment


def rebuild(conn):
    """The whole index made again from the messages, in one transaction: every part dropped, the head
    made anew (also when it, or a shadow table of it, is gone) and filled (FTS5's ``rebuild``), the triggers
    written for the head alone. ``chats doctor --rebuild-fts``, for an index out of step with the messages
    or missing; ``chats sync`` splits it again."""
    with Immediate(conn):
        for trigger in TRIGGERS:
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for name in tables(conn)[1:] + [HEAD]:
            _drop_table(conn, name)
        _create(conn, HEAD)
        # (not FTS5's 'rebuild': it reads the column as stored, and a packed text is a BLOB)
        conn.execute(f"INSERT INTO {HEAD}(rowid, content) SELECT id, chats_text(content) FROM messages")
        write_triggers(conn, [HEAD])


def _drop_table(conn, name):
    """``name`` and its shadow tables gone, whatever is left of them (a damaged table may not drop as one)."""
    check(name)
    try:
        conn.execute(f"DROP TABLE IF EXISTS {name}")
    except Exception:  # noqa: BLE001 - apsw's error for a virtual table missing its shadows: drop them one by one
        conn.execute("PRAGMA writable_schema = ON")
        try:
            conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        finally:
            conn.execute("PRAGMA writable_schema = OFF")
    for shadow in SHADOWS + ("content",):
        conn.execute(f"DROP TABLE IF EXISTS {name}_{shadow}")


def shadows_missing(conn):
    """The shadow tables (``%_data`` ...) missing from the index's tables: what makes every query of
    that table, and every write to the journal, fail."""
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    names = tables(conn)
    wanted = ([HEAD] if HEAD not in present else []) + [f"{n}_{s}" for n in names for s in SHADOWS]
    return [w for w in wanted if w not in present]


def coverage(conn):
    """(messages in no table, messages in two or more, rows naming no message), read from the
    ``%_docsize`` tables: all three 0 when the parts index every message once. Reads every row."""
    union = " UNION ALL ".join(f"SELECT id FROM {n}_docsize" for n in tables(conn))
    conn.execute("DROP TABLE IF EXISTS temp.fts_coverage")
    conn.execute(f"CREATE TEMP TABLE fts_coverage AS SELECT id, count(*) AS n FROM ({union}) GROUP BY id")
    try:
        unindexed = conn.execute("SELECT count(*) FROM messages m WHERE NOT EXISTS "
                                 "(SELECT 1 FROM temp.fts_coverage c WHERE c.id = m.id)").fetchall()[0][0]
        twice = conn.execute("SELECT count(*) FROM temp.fts_coverage WHERE n > 1").fetchall()[0][0]
        stray = conn.execute("SELECT count(*) FROM temp.fts_coverage c WHERE NOT EXISTS "
                             "(SELECT 1 FROM messages m WHERE m.id = c.id)").fetchall()[0][0]
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.fts_coverage")
    return unindexed, twice, stray


def _create(conn, name):
    conn.execute(CREATE.format(name=name))
    secure_delete(conn, name, True)


def _drop(conn, name):
    """Drop a part (its shadow tables with it) and write the triggers without it; in the caller's transaction."""
    check(name)
    remaining = [n for n in tables(conn) if n != name]
    write_triggers(conn, remaining)
    conn.execute(f"DROP TABLE {name}")


def _next_name(conn, below=None):
    """A new part's name: ``STEP`` above every part's number; or, for a step of splitting part ``below``,
    the number above the highest below it, so that the split's parts keep its place in the order, oldest
    lowest (a split has ``STEP`` - 1 numbers: 65M messages)."""
    numbers = sorted(int(n[len(PREFIX):]) for n in tables(conn)[1:])
    if below is None:
        return f"messages_fts_{(numbers[-1] // STEP + 1 if numbers else 1) * STEP:08d}"
    top = int(below[len(PREFIX):])
    new = max((n for n in numbers if n < top), default=0) + 1
    if new >= top:
        raise RuntimeError(f"no free part number below {below}")
    return f"messages_fts_{new:08d}"


def is_part(name):
    """``messages_fts_`` and 8 ASCII digits."""
    digits = name[len(PREFIX):] if isinstance(name, str) and name.startswith(PREFIX) else ""
    return len(digits) == 8 and all("0" <= c <= "9" for c in digits)


def check(name):
    """Table names are built into SQL here: only the head and ``messages_fts_<8 digits>`` pass."""
    if name != HEAD and not is_part(name):
        raise ValueError(f"not a full-text table of the journal: {name!r}")
