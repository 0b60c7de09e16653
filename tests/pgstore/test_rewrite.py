"""``pgstore.rewrite``: every kept line of a real Postgres read in key order, batch after batch, and
rows that anyone's INSERT made (not zlib, a zlib bomb, not JSON, stored unpacked) survived.

Batches of two rows and runs of one line each, so that the keyset pagination and the runs by bytes
cross several conversations.
"""

import json
import zlib

import psycopg

from claude_chats import rawlines
from claude_chats.pgstore import migrations, rewrite
from claude_chats.redact import redact

PASSWORD = "Zq8!vR2#mK9$wL4x"


def _line(uuid, value):
    return json.dumps({"type": "assistant", "uuid": uuid, "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "mcp__db__connect", "input": {"password": value}}]}}).encode()


def _redact_blob(blob):
    return rawlines.redact_packed(blob, redact)


def test_every_row_is_read_in_batches_and_hostile_rows_are_left_or_made_links(pg_db_url):
    bomb = zlib.compress(b"{" + b" " * (rawlines.LINE_LIMIT + 10) + b"}", 9)
    rows = {
        "a1": zlib.compress(_line("a1", PASSWORD)),        # a secret under its key, packed
        "a2": zlib.compress(_line("a2", "${DB_PASSWORD}")),  # a placeholder: left as it is
        "b1": _line("b1", PASSWORD),                       # stored unpacked: read as it is, packed redacted
        "b2": b"x\x9c not zlib at all",                    # claims zlib, is not: left, counted
        "b3": bomb,                                        # unpacks past LINE_LIMIT: left, counted
        "c1": zlib.compress(b"not json " + PASSWORD.encode()),   # not JSON: a link, as the push makes it
        "c2": zlib.compress(_line("c2", "another-" + PASSWORD)),
    }
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        migrations.migrate(conn)
        ids = {}
        for session in ("a", "b", "c"):
            ids[session] = conn.execute("INSERT INTO conversations (session_id) VALUES (%s) RETURNING id",
                                        (session,)).fetchone()[0]
        for key, line in rows.items():
            conn.execute("INSERT INTO raw_lines (conversation_id, line_key, seq, line) VALUES (%s, %s, 0, %s)",
                         (ids[key[0]], key, line))
        conn.execute("INSERT INTO raw_lines (conversation_id, line_key, seq, line) VALUES (%s, 'link', 1, NULL)",
                     (ids["a"],))
        seen = []
        dry = rewrite.redact_kept_lines(conn, _redact_blob, dry_run=True, on_batch=seen.append, batch_rows=2,
                                        batch_bytes=1)
        assert dry == {"read": 7, "rewritten": 3, "linked": 1, "unreadable": 2}, dry
        assert seen == [2, 4, 6, 7]
        stored = lambda: {k: None if v is None else bytes(v) for k, v in conn.execute(  # noqa: E731
            "SELECT line_key, line FROM raw_lines")}
        assert stored() == {**rows, "link": None}

        changed = []
        done = rewrite.redact_kept_lines(conn, _redact_blob, on_change=lambda old, new: changed.append(old),
                                         batch_rows=2, batch_bytes=1)
        assert done == dry and sorted(changed) == sorted(rows[k] for k in ("a1", "b1", "c1", "c2"))
        after = stored()
        assert after["c1"] is None and after["link"] is None
        assert {k: after[k] for k in ("a2", "b2", "b3")} == {k: rows[k] for k in ("a2", "b2", "b3")}
        for key in ("a1", "b1", "c2"):
            line = json.loads(rawlines.unpack(after[key]))
            assert line["message"]["content"][0]["input"] == {"password": "[REDACTED:password]"}, key
        assert rewrite.redact_kept_lines(conn, _redact_blob, batch_rows=2, batch_bytes=1) == {
            "read": 6, "rewritten": 0, "linked": 0, "unreadable": 2}
        assert stored() == after
