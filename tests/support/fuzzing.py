"""Fuzzing, shared by the parser, journal, hook, search and fault tests.

Hypothesis strategies for transcript lines (valid, mutated, hostile), the hostile
ids, paths and file names, ``fuzz_settings`` (fixed seeds, a moderate number of
examples; CLAUDE_CHATS_LONG_TESTS=1 runs many more, and ``LONG`` tells the other
long-run tests), and the checks of a journal after the fact (``check_journal``,
``journal_rows``) and of the files around it (``tree``).
"""

import json
import os

import apsw
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from claude_chats.localstore import ftsparts, texts
from claude_chats.localstore import uuids as stored_uuids

LONG = os.environ.get("CLAUDE_CHATS_LONG_TESTS") == "1"


def fuzz_settings(default, long):
    return settings(max_examples=long if LONG else default, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck), database=None)


# -- hostile values ---------------------------------------------------------------------

HOSTILE_IDS = ["s-1", "s-2", "s-\ud800", "../../etc/passwd", "'; DROP TABLE messages; --", 'quo"te\'s', "new\nline",
               "sp ace", "ünïcødé-🎉", "%s%n%x", "a" * 300, "x:agent-y", "nul\x00id", "..", "/", "\\\\server\\share",
               "<script>alert(1)</script>", "$(touch /tmp/pwned)", "`id`", "s-1\r\n{\"type\":\"user\"}"]
HOSTILE_PATHS = ["/work/proj", "../../..", "C:\\Users\\x", "'; DELETE FROM sessions; --", "/tmp/a\nb", "~",
                 "/work/proj/", "/work/proj%", "/work/proj_", "/work/pro\x00j", "/" + "d/" * 200]
UUIDS = [f"00000000-0000-4000-8000-{i:012d}" for i in range(12)] + ["", "u'1", "../u", "u\n2", "#1"]
TEXTS = ["Warmup", "[Request interrupted by user]", "<system-reminder>note</system-reminder>",
         "<command-name>/model</command-name>", "<ide_opened_file>x</ide_opened_file> the prompt",
         "Caveat: The messages below were generated", "\x1b[31mred\x1b[0m \x1b]0;title\x07", "a" * 5000,
         "data:image/png;base64," + "iVBORw0KGgo" * 40, "QUJD" * 200, "\x00\x00\x00", "line1\nline2\r\n",
         "SELECT * FROM messages; --", '" OR 1=1 --', "NEAR(a b) AND \"c\" * ^ content:x",
         "lone \ud800 surrogate", "\udfff", "pair \ud83d\ude00 split"]   # JSON.stringify escapes lone ones

text = st.one_of(st.text(max_size=120), st.sampled_from(TEXTS))
ids = st.one_of(st.sampled_from(HOSTILE_IDS), st.text(max_size=40))
uuids = st.one_of(st.sampled_from(UUIDS), st.uuids().map(str))
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                         text)
json_values = st.recursive(json_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                                st.dictionaries(st.text(max_size=8), kids,
                                                                                max_size=4)), max_leaves=12)

block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": text}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "name": st.sampled_from(["Bash", "Read", "Edit", None, 7]),
                           "input": json_values},
                          optional={"id": st.sampled_from(["toolu_1", "toolu_2", 3, None])}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.just("toolu_1"),
                           "content": st.one_of(text, st.lists(st.one_of(
                               st.fixed_dictionaries({"type": st.just("text"), "text": text}),
                               st.just({"type": "image", "source": {"type": "base64", "data": "AAAA"}}),
                               st.just({"type": "tool_reference", "tool_name": "TaskCreate"}),
                               json_values), max_size=3), json_values)},
                          optional={"is_error": st.booleans()}),
    st.just({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 100}}),
    st.just({"type": "document", "source": {"media_type": "application/pdf"}}),
    st.fixed_dictionaries({"type": st.text(max_size=10)}),
    json_values,
)
content = st.one_of(text, st.lists(block, max_size=4), json_values)


def _envelope(kind):
    return st.fixed_dictionaries(
        {"type": st.just(kind), "uuid": uuids, "sessionId": ids, "timestamp": st.one_of(
            st.just("2026-01-01T00:00:00.000Z"), st.text(max_size=30), json_scalars)},
        optional={"cwd": st.one_of(st.sampled_from(HOSTILE_PATHS), json_scalars), "gitBranch": ids,
                  "isSidechain": st.one_of(st.booleans(), json_scalars), "agentId": ids, "slug": ids,
                  "isMeta": st.booleans(), "isCompactSummary": st.booleans(), "parentUuid": uuids,
                  "version": st.just("2.1.0"), "extra": json_values})


user_line = st.builds(lambda env, c: {**env, "message": {"role": "user", "content": c}}, _envelope("user"), content)
assistant_line = st.builds(
    lambda env, c, mid: {**env, "message": {"id": mid, "type": "message", "role": "assistant", "content": c}},
    _envelope("assistant"), content, st.sampled_from(["msg_1", "msg_2", None, 5]))
other_line = st.one_of(
    st.builds(lambda env, sub, meta: {**env, "subtype": sub, "compactMetadata": meta}, _envelope("system"),
              st.sampled_from(["compact_boundary", "stop_hook_summary", None, 3]), json_values),
    st.fixed_dictionaries({"type": st.just("summary"), "summary": text, "leafUuid": uuids}),
    st.fixed_dictionaries({"type": st.just("custom-title"), "customTitle": text, "sessionId": ids}),
    st.fixed_dictionaries({"type": st.just("agent-name"), "agentName": text, "sessionId": ids}),
    st.builds(lambda env, data: {**env, "data": data}, _envelope("progress"), json_values),
    st.fixed_dictionaries({"type": st.sampled_from(["file-history-snapshot", "queue-operation", "last-prompt",
                                                    "brand-new-type", "", "USER"]), "x": json_values}),
    st.builds(lambda env, m: {**env, "message": m}, _envelope("user"), json_values),   # message of a wrong type
    json_values,                                                                        # not even an object
)
line_object = st.one_of(user_line, assistant_line, other_line)


def _encode(obj, ascii_only):
    # Lone surrogates become invalid UTF-8, as a broken writer would leave them.
    return json.dumps(obj, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def _mutate(data, how, where, junk):
    cut = where % (len(data) + 1)
    if how == "truncate":
        return data[:cut]
    if how == "insert":
        return data[:cut] + junk + data[cut:]
    if how == "flip":
        return data[:cut] + bytes([data[cut] ^ 0x55]) + data[cut + 1:] if cut < len(data) else data
    if how == "nest":
        return b"[" * 5000 + data + b"]" * 5000
    if how == "nul-padded":
        return b"\x00" * (where % 64) + data
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "huge":
        return json.dumps({"type": "user", "uuid": "u-huge", "sessionId": "s-1",
                           "message": {"role": "user", "content": "x" * (200_000 + where % 1000)}}).encode()
    return data


JUNK = st.one_of(st.binary(max_size=12), st.sampled_from([b"\x00", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\n",
                                                          b"\r", b'"', b"}", b"\\u0000"]))
encoded_line = st.builds(_encode, line_object, st.booleans())
mutated_line = st.builds(
    _mutate, encoded_line,
    st.sampled_from(["none"] * 6 + ["truncate", "insert", "insert", "flip", "nest", "nul-padded", "bom", "huge"]),
    st.integers(0, 10_000), JUNK)
transcript_bytes = st.builds(lambda ls, eol, last: eol.join(ls) + (eol if last else b""),
                             st.lists(mutated_line, max_size=12), st.sampled_from([b"\n", b"\r\n"]), st.booleans())


FILE_NAMES = ["sess-1.jsonl", "agent-a1.jsonl", "s-9/subagents/agent-b2.jsonl", "agent-.jsonl", "weird name.jsonl",
              "quo'te\".jsonl", "new\nline.jsonl", "'; DROP TABLE transcripts; --.jsonl", "..jsonl", "ünï.jsonl"]


# -- checks -----------------------------------------------------------------------------

def journal_rows(path):
    """uuid -> (session_id, seq, role, kind, content) of every stored message (the stored key: a
    fork's copy of a line another session holds is ``<uuid>@<session>``)."""
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    texts.register(conn)   # (a packed text is read through ``chats_text``, a uuid through ``chats_uuid``)
    stored_uuids.register(conn)
    try:
        return {r[0]: tuple(r[1:]) for r in conn.execute(
            "SELECT chats_uuid(uuid), session_id, seq, role, kind, chats_text(content) FROM messages JOIN session_numbers ON number = session")}
    finally:
        conn.close()


def lines_of(rows):
    """The (session, line uuid) of ``journal_rows``: a message's identity whatever the order the
    sessions holding one line arrived in (which of them keeps the bare uuid follows that order)."""
    return {(values[0], key.removesuffix("@" + values[0])) for key, values in rows.items()}


def index_matches_texts(conn):
    """Whether the full-text index (every part) holds exactly the tokens of every message's text, read
    through ``chats_text`` (FTS5's own check against the messages reads the column as stored, and a
    packed text is a BLOB): a fresh index of the texts compared token by token, position by position."""
    conn.execute("DROP TABLE IF EXISTS temp.fts_check")
    conn.execute(f"CREATE VIRTUAL TABLE temp.fts_check USING fts5(content, content='', tokenize='{ftsparts.TOKENIZE}')")
    conn.execute("INSERT INTO temp.fts_check(rowid, content) SELECT id, chats_text(content) FROM messages")
    views = []
    for n, name in enumerate(ftsparts.tables(conn) + ["fts_check"]):
        schema = "temp" if name == "fts_check" else "main"
        conn.execute(f"DROP TABLE IF EXISTS temp.vocab_{n}")
        conn.execute(f"CREATE VIRTUAL TABLE temp.vocab_{n} USING fts5vocab({schema}, {name}, instance)")
        views.append(f"temp.vocab_{n}")
    held = " UNION ALL ".join(f"SELECT term, doc, offset FROM {v}" for v in views[:-1])
    fresh = f"SELECT term, doc, offset FROM {views[-1]}"
    differ = conn.execute(f"SELECT count(*) FROM (SELECT * FROM ({held}) EXCEPT {fresh} UNION ALL "
                          f"SELECT * FROM ({fresh} EXCEPT SELECT * FROM ({held})))").fetchall()[0][0]
    for n in range(len(views)):
        conn.execute(f"DROP TABLE temp.vocab_{n}")
    conn.execute("DROP TABLE temp.fts_check")
    return differ == 0   # (an instance is one token at one place of one message: no two are the same)


def check_journal(path, before=None):
    """Assert the journal at ``path`` is consistent and kept ``before``'s rows; return its rows."""
    conn = apsw.Connection(path)
    try:
        conn.set_busy_timeout(30_000)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        texts.register(conn)   # (the journal's triggers and its packed texts read through them)
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 0)")
        assert index_matches_texts(conn)
        for session, count, low, high, next_seq in conn.execute(
                "SELECT n.session_id, count(*), min(m.seq), max(m.seq), s.next_seq FROM messages m JOIN session_numbers n "
                "ON n.number = m.session JOIN sessions s ON s.id = n.session_id GROUP BY n.session_id"):
            assert (low, high, next_seq) == (0, count - 1, count), (session, count, low, high, next_seq)
        orphans = conn.execute("SELECT count(*) FROM messages JOIN session_numbers ON number = session WHERE session_id NOT IN (SELECT id FROM sessions)")
        assert orphans.fetchall() == [(0,)]
    finally:
        conn.close()
    rows = journal_rows(path)
    if before:
        lost = {u: v for u, v in before.items() if rows.get(u) != v}
        assert not lost, f"stored messages changed or vanished: {list(lost)[:5]}"
    return rows


def tree(root):
    """Every file and folder below ``root`` (relative paths)."""
    found = set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(folder, name), root))
    return found
