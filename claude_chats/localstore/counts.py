"""What the journal holds, counted from the tables triggers keep (migration 0006), not from every message.

``message_counts`` has the messages and their characters by (kind, synced, copy, blank); ``vector_counts``
those of them with vectors in a space, by the same key: a message without vectors of a space is the
difference, group by group, exact. Stdlib + apsw: ``chats status`` reads these without numpy or the
vector store. A journal opened read-only before any writer migrated it has no such tables: then the
figures are counted from the messages, as before (slow at scale, exact).
"""

import json

# What a message embedded is: not a fork's copy, not blank (see vectors.unembedded).
_EMBEDDABLE = "m.copy = 0 AND m.blank = 0"
_BLANK = "typeof(content) = 'text' AND trim(content, ' \t\n') = ''"   # (a packed text is never blank)


def has_counters(conn):
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_counts'")
                .fetchall())


def _groups(conn, space_id, where, args=()):
    """``[(kind, messages, chars, messages with vectors in the space, their chars)]`` of the groups
    ``where`` (over kind, synced, copy, blank) keeps, one row a kind."""
    if not has_counters(conn):
        return _groups_scanned(conn, space_id, where, args)
    return conn.execute(
        "SELECT m.kind, sum(m.messages), sum(m.chars), sum(coalesce(v.messages, 0)), sum(coalesce(v.chars, 0)) "
        "FROM message_counts m LEFT JOIN vector_counts v ON v.space_id = ? AND v.kind = m.kind "
        "AND v.synced = m.synced AND v.copy = m.copy AND v.blank = m.blank "
        f"WHERE {where} GROUP BY m.kind", (space_id, *args)).fetchall()


def _groups_scanned(conn, space_id, where, args):
    return conn.execute(
        f"SELECT kind, count(*), sum(chats_length(content)), count(*) FILTER (WHERE has), "
        f"coalesce(sum(chats_length(content)) FILTER (WHERE has), 0) FROM (SELECT kind, synced, copy, content, "
        f"({_BLANK}) AS blank, EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = ? AND c.message_id = m.id) AS has "
        f"FROM messages m) m WHERE {where} GROUP BY kind", (space_id, *args)).fetchall()


def _not_in(kinds):
    return "m.kind NOT IN (SELECT value FROM json_each(?))", (json.dumps(list(kinds)),)


def messages(conn):
    """``(messages, pending)``: every message, and those not pushed yet (``synced = 0``)."""
    if not has_counters(conn):
        return tuple(conn.execute("SELECT count(*), count(*) FILTER (WHERE synced = 0) FROM messages").fetchall()[0])
    row = conn.execute("SELECT coalesce(sum(messages), 0), coalesce(sum(messages) FILTER (WHERE synced = 0), 0) "
                       "FROM message_counts").fetchall()[0]
    return row[0], row[1]


def unembedded(conn, space_id, skip_kinds=()):
    """How many messages already pushed (not a fork's copy, not blank, not of ``skip_kinds``) have no
    vector in the space: what ``vectors.unembedded`` gives in all."""
    where, args = _not_in(skip_kinds)
    rows = _groups(conn, space_id, f"m.synced = 1 AND {_EMBEDDABLE} AND {where}", args)
    return sum(total - embedded for _kind, total, _chars, embedded, _embedded_chars in rows)


def backlog(conn, space_id, limits=()):
    """``(messages, characters, exact)`` still to embed into the space (None: not created yet): the
    messages without a vector there (not blank, not a fork's copy) of the kinds ``limits`` does not skip,
    and their characters that would be embedded (``limits``: ``((kind, chars), ...)``, a
    ``models.recipe.Recipe``'s; a kind limited is counted up to its limit).

    The characters of a limited kind are counted per kind, not per message: ``min(limit x messages,
    their characters)``, at most what a message-by-message count gives; ``exact`` is False when that
    bound stood in for more than one message."""
    caps = dict(limits)
    where, args = _not_in([kind for kind, chars in limits if chars == 0])
    rows = _groups(conn, -1 if space_id is None else space_id,
                   f"{_EMBEDDABLE} AND {where}", args)
    messages = chars = 0
    exact = True
    for kind, total, total_chars, embedded, embedded_chars in rows:
        count, text = total - embedded, (total_chars or 0) - embedded_chars
        cap = caps.get(kind)
        if cap is not None and count:
            text = min(text, cap * count)
            exact = exact and count == 1
        messages, chars = messages + count, chars + text
    return messages, chars, exact


def space_vectors(conn):
    """``{space_id: vectors (chunks)}`` of every space that has a row in ``spaces``."""
    if not has_counters(conn):
        return dict(conn.execute("SELECT s.id, (SELECT count(*) FROM chunks c WHERE c.space_id = s.id) "
                                 "FROM spaces s").fetchall())
    return dict(conn.execute("SELECT s.id, coalesce(k.chunks, 0) FROM spaces s "
                             "LEFT JOIN space_chunks k ON k.space_id = s.id").fetchall())


def coverage(conn, space_id, skipped=()):
    """``(messages with vectors of the space, messages it embeds)``: of the messages not a fork's copy
    and not of the kinds ``skipped`` (blank ones included, as search's note has always counted)."""
    where, args = _not_in(skipped)
    rows = _groups(conn, space_id, f"m.copy = 0 AND {where}", args)
    return sum(r[3] for r in rows), sum(r[1] for r in rows)
