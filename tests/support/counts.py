"""The journal's counters (migration 0006) against a count of every message, for the tests that prove
the triggers keep them exact."""

from claude_chats.localstore import db

_BLANK = "trim(chats_text(content), ' \t\n') = ''"   # (the text, also where it is packed: texts)


def recounted(conn):
    """``(message groups, vector groups, chunks by space)`` counted from the messages and chunks themselves."""
    messages = conn.execute(f"SELECT kind, synced, copy, {_BLANK}, count(*), sum(length(chats_text(content))) FROM messages "
                            "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4").fetchall()
    vectors = conn.execute(
        f"SELECT c.space_id, m.kind, m.synced, m.copy, trim(chats_text(m.content), ' \t\n') = '', count(*), "
        "sum(length(chats_text(m.content))) FROM (SELECT DISTINCT space_id, message_id FROM chunks) c "
        "JOIN messages m ON m.id = c.message_id GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5").fetchall()
    chunks = conn.execute("SELECT space_id, count(*) FROM chunks GROUP BY 1 ORDER BY 1").fetchall()
    return messages, vectors, chunks


def kept(conn):
    """``(message groups, vector groups, chunks by space)`` as the counter tables hold them (groups of none left out)."""
    messages = conn.execute("SELECT kind, synced, copy, blank, messages, chars FROM message_counts "
                            "WHERE messages != 0 OR chars != 0 ORDER BY 1, 2, 3, 4").fetchall()
    vectors = conn.execute("SELECT space_id, kind, synced, copy, blank, messages, chars FROM vector_counts "
                           "WHERE messages != 0 OR chars != 0 ORDER BY 1, 2, 3, 4, 5").fetchall()
    chunks = conn.execute("SELECT space_id, chunks FROM space_chunks WHERE chunks != 0 ORDER BY 1").fetchall()
    return messages, vectors, chunks


def assert_exact(path):
    """The counters of the journal at ``path`` are what counting every message gives; returns them."""
    conn = db.connect(str(path))
    try:
        counted, held = recounted(conn), kept(conn)
    finally:
        conn.close()
    assert held == counted
    return held


def old_backlog(conn, space_id, limits=()):
    """``(messages, chars)``: the backlog as claude-chats counted it before the counters, message by message."""
    import json
    caps = json.dumps(dict(limits))
    skipped = json.dumps([kind for kind, chars in limits if chars == 0])
    return tuple(conn.execute(
        "SELECT count(*), coalesce(sum(min(length(chats_text(m.content)), coalesce(json_extract(?, '$.' || m.kind), "
        "length(chats_text(m.content))))), 0) FROM messages m WHERE m.copy = 0 AND trim(chats_text(m.content), ' \t\n') != '' "
        "AND m.kind NOT IN (SELECT value FROM json_each(?)) "
        "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = ? AND c.message_id = m.id)",
        (caps, skipped, -1 if space_id is None else space_id)).fetchall()[0])
