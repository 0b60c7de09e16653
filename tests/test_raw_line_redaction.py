"""Issue 21, item 3: a secret named only by its JSON key never leaves the machine inside a kept
transcript line, nor stays in the journal when its text is redacted.

A ``tool_use`` input ``{"password": ..., "aws_secret_access_key": ...}``, a ``toolUseResult``
holding ``config.password``, a value nested past any depth: ``messages.content`` said
``[REDACTED:password]`` while the raw line (``rawlines``) pushed for ``chats restore`` held the
values, and ``chats restore`` on another machine wrote them back. Here through a real ``chats
sync`` and ``chats restore`` (subprocesses, another HOME for the other machine), the hook as a
fresh process with ``journal_redact`` on, and ``chats redact --journal``, reading the bytes of
journal.db and its WAL. And the real corpus: lines with nothing to redact come through byte for
byte, lines with something to redact differ only in the values redacted.
"""

import json
import os

import psycopg
import pytest

from claude_chats import paths, rawlines, transcript
from claude_chats.localstore.journal import Journal
from claude_chats.redact import redact
from claude_chats.sync.redactpool import Redactor
from tests.support import ROOT, lines
from tests.support.hooks import hook_event
from tests.support.journals import kept_line_bytes
from tests.support.keyed_secrets import (PASSWORD, SESSION, keyed_transcript, leaks, restored_elsewhere, run_chats,
                                         synced)

def _kept_lines(journal_file):
    with Journal.open(str(journal_file)) as journal:
        return [line.decode() for line in kept_line_bytes(journal.conn)]


def test_keyed_secrets_reach_neither_postgres_nor_another_machines_restore(pg_db_url, test_model_path, tmp_path,
                                                                            monkeypatch):
    synced(tmp_path, monkeypatch, pg_db_url, test_model_path)
    assert leaks(_kept_lines(paths.journal_path())), "the journal keeps the lines as they were written"

    with psycopg.connect(pg_db_url) as conn:
        pushed = [rawlines.unpack(bytes(line)).decode() for (line,) in
                  conn.execute("SELECT line FROM raw_lines WHERE line IS NOT NULL")]
        contents = [c for (c,) in conn.execute("SELECT content FROM messages")]
    assert len(pushed) == 4 and all(json.loads(p) for p in pushed)
    assert "[REDACTED:password]" in "\n".join(contents)
    assert leaks(contents) == []
    assert leaks(pushed) == []
    call = json.loads(pushed[1])["message"]["content"][0]["input"]
    assert call["password"] == "[REDACTED:password]" and call["aws_secret_access_key"] == "[REDACTED:aws-secret-key]"
    assert call["host"] == "db.internal" and call["db_secret"] == "[REDACTED:secret]"
    assert json.loads(pushed[2])["toolUseResult"]["config"] == {"user": "admin", "password": "[REDACTED:password]"}

    written = restored_elsewhere(tmp_path / "machine-b")
    assert leaks(b"".join(written)) == []
    assert [json.loads(x)["type"] for x in written[0].splitlines()] == ["user", "assistant", "user", "assistant"]


def _journal_bytes():
    journal = paths.journal_path()
    return b"".join(open(p, "rb").read() for p in (journal, journal + "-wal") if os.path.exists(p))


def test_the_hook_with_journal_redact_on_keeps_no_keyed_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_JOURNAL_REDACT", "1")
    path = keyed_transcript(tmp_path / "claude" / "projects" / "-work-proj")
    hook_event(path, "Stop", session=SESSION)
    kept = _kept_lines(paths.journal_path())
    assert len(kept) == 4 and leaks(kept) == []
    assert leaks(_journal_bytes()) == []


def test_redact_journal_rewrites_the_kept_lines_and_scrubs_the_file(tmp_path):
    path = keyed_transcript(tmp_path / "claude" / "projects" / "-work-proj")
    hook_event(path, "Stop", session=SESSION)
    assert leaks(_journal_bytes()), "stored as written: the journal_redact setting is off"
    done = json.loads(run_chats(["redact", "--journal", "--yes", "--json"]).stdout)
    assert done["lines"] >= 2 and done["scrubbed"], done
    assert leaks(_kept_lines(paths.journal_path())) == []
    assert leaks(_journal_bytes()) == []
    again = json.loads(run_chats(["redact", "--journal", "--dry-run", "--json"]).stdout)
    assert again["lines"] == 0 and again["messages"] == 0, again


# -- the real corpus: nothing damaged ---------------------------------------------------------


def _kept_corpus_lines(folders):
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl")):
            for raw in path.read_bytes().splitlines():
                obj = transcript._loads(raw) if raw.strip() else None
                if isinstance(obj, dict) and rawlines.kept(obj):
                    yield path, raw


def _differences(before, after, where=""):
    """Where two decoded lines differ: ``[(path, old, new)]``."""
    if isinstance(before, dict) and isinstance(after, dict) and list(before) == list(after):
        return [d for k in before for d in _differences(before[k], after[k], f"{where}/{k}")]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for n, (b, a) in enumerate(zip(before, after)) for d in _differences(b, a, f"{where}/{n}")]
    return [] if before == after and type(before) is type(after) else [(where, before, after)]


def test_real_corpus_lines_come_through_byte_for_byte_unless_a_value_is_redacted(corpus):
    count = changed = 0
    for path, raw in _kept_corpus_lines([corpus, ROOT / "tests" / "claude_code" / "fixtures"]):
        count += 1
        new = rawlines.redact_line(raw, redact)
        assert new is not None, path
        if new == raw:
            continue
        changed += 1
        differences = _differences(json.loads(raw), json.loads(new))
        assert differences, (path, "written anew with nothing redacted")
        for where, old, value in differences:
            assert isinstance(value, str) and value.startswith("[REDACTED:"), (path, where, old, value)
            assert redact(value) == value
    assert count >= 3000, count
    assert changed <= count // 100, changed   # a few lines hold a secret; the rest are left alone


def test_a_line_only_the_lenient_reading_takes_is_redacted_all_the_same(empty_journal, tmp_path):
    """A raw control character in a string (the parser reads such a line, the strict decoder does not):
    the line was pushed as it was, its secrets with it."""
    from claude_chats.localstore import outbox

    call = {"type": "tool_use", "id": "toolu_01", "name": "mcp__db__connect",
            "input": {"note": "tab\u0001here", "password": PASSWORD}}
    raw = lines.encode(lines.assistant([call], session=SESSION)).replace(b"\\u0001", b"\x01")
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(raw)
    assert not empty_journal.import_files([str(path)]).errors
    rows = outbox.raw_line_rows(empty_journal.conn)
    _ids, pushed = outbox.raw_line_records(rows, Redactor(redact).lines([row[5] for row in rows]))   # as sync does
    line, = [rawlines.unpack(r.line) for r in pushed]
    assert PASSWORD.encode() not in line
    assert json.loads(line)["message"]["content"][0]["input"] == {"note": "tab\u0001here",
                                                                  "password": "[REDACTED:password]"}


def test_a_secrets_name_takes_any_value_that_may_be_one_and_leaves_the_rest():
    line = {"type": "user", "uuid": "u-1", "toolUseResult": {
        "env": {"PWD": "/work/proj", "GITHUB_TOKEN": "abc-def-ghi", "API_KEY": "${API_KEY}", "SECRET": ""},
        "config": {"password": None, "require_password": True, "credentials": {"user": "bob", "pin": 4321},
                   "db_secret": 987654, "password_file": "./secrets/db.txt"},
        "usage": {"input_tokens": 123456, "output_tokens": 98765432, "max_tokens": 4096}}}
    redacted = json.loads(rawlines.redact_line(json.dumps(line).encode(), redact))["toolUseResult"]
    assert redacted["env"] == {"PWD": "/work/proj", "GITHUB_TOKEN": "[REDACTED:token]", "API_KEY": "${API_KEY}",
                               "SECRET": ""}
    assert redacted["config"] == {"password": None, "require_password": True, "credentials": "[REDACTED:secret]",
                                  "db_secret": "[REDACTED:secret]", "password_file": "./secrets/db.txt"}
    assert redacted["usage"] == line["toolUseResult"]["usage"]
