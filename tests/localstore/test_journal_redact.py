"""The ``journal_redact`` setting and ``chats redact --journal``, on the real journal file.

With the setting on, a secret in a transcript never reaches the journal's
bytes (main file, WAL), whether the hook or ``chats import`` stores it; full
text search finds the placeholder. ``chats redact --journal`` rewrites a
journal filled with the setting off: content, FTS index, session names,
vectors of the old text gone from the file, the messages embedded again.
"""

import os

import apsw
import pytest

from claude_chats import config, paths

from claude_chats.localstore.journal import Journal
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.hooks import run_hook
from tests.support.journals import fulltext
from tests.support.redaction_corpus import SECRETS
from tests.support.vectors import stored_codes

GITHUB = next(s for s in SECRETS if s.kind == "github-token")
AWS = next(s for s in SECRETS if s.kind == "aws-access-key")
TITLE_SECRET = next(s for s in SECRETS if s.kind == "openai-api-key")


def write_transcript(tmp_path, session="s-leak"):
    path = tmp_path / "proj" / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lines.encode(
        lines.user(f"my token is {GITHUB.secret} please push the branch", session=session),
        lines.assistant(f"done; also found {AWS.text} in the env file", session=session),
        lines.user("an ordinary question about the build cache", session=session),
        {"type": "custom-title", "customTitle": f"debug {TITLE_SECRET.secret}", "sessionId": session}))
    return path


def secret_bytes():
    out = []
    for sample in (GITHUB, AWS, TITLE_SECRET):
        out += [sample.secret.encode(), sample.secret.lower().encode()]
    return out


def journal_bytes(checkpoint=True):
    """The journal's files as they are on disk (after a checkpoint into the main file, when asked)."""
    base = paths.journal_path()
    if checkpoint:
        conn = apsw.Connection(base)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        conn.close()
    return b"".join(open(p, "rb").read() for p in (base, base + "-wal") if os.path.exists(p))


def leaked(data):
    return [s for s in secret_bytes() if s in data]


def hook_stores(path):
    """The hook run at the end of a turn of s-leak, whose transcript is ``path``."""
    run_hook({"session_id": "s-leak", "transcript_path": str(path), "hook_event_name": "Stop"})


def contents():
    with Journal.open() as journal:
        return [m["content"] for m in journal.messages("s-leak")], journal.session("s-leak")["name"]


@pytest.mark.parametrize("how", ["env", "config file"])
def test_setting_on_keeps_every_secret_out_of_the_journal_file(tmp_path, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("CLAUDE_CHATS_JOURNAL_REDACT", "1")
    else:
        assert chats("config", "set", "journal_redact", "true").exit_code == 0
    hook_stores(write_transcript(tmp_path))
    assert leaked(journal_bytes(checkpoint=False)) == []      # the WAL as the hook left it
    assert leaked(journal_bytes()) == []                      # and the main file after a checkpoint
    texts, name = contents()
    assert texts[0] == "my token is [REDACTED:github-token] please push the branch"
    assert "[REDACTED:aws-access-key]" in texts[1]
    assert name == "debug [REDACTED:openai-api-key]"
    with Journal.open() as journal:
        journal.conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        assert len(fulltext(journal, "REDACTED github")) == 1
        assert fulltext(journal, GITHUB.secret) == []
        assert len(fulltext(journal, "ordinary build cache")) == 1


def test_setting_on_applies_to_chats_import(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_JOURNAL_REDACT", "true")
    write_transcript(tmp_path / "claude" / "projects")
    result = chats("import", str(tmp_path / "claude" / "projects"))
    assert result.exit_code == 0, result.output
    assert leaked(journal_bytes()) == []
    assert "[REDACTED:github-token]" in contents()[0][0]


def test_setting_off_keeps_the_original(tmp_path):
    assert config.load().journal_redact is False
    hook_stores(write_transcript(tmp_path))
    texts, name = contents()
    assert GITHUB.secret in texts[0] and AWS.secret in texts[1] and TITLE_SECRET.secret in name
    assert GITHUB.secret.encode() in journal_bytes()


def test_a_bad_value_stores_nothing_until_fixed(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_JOURNAL_REDACT", "perhaps")
    path = write_transcript(tmp_path)
    hook_stores(path)
    with open(os.path.join(paths.log_dir(), "hook.log")) as fh:
        assert "journal_redact" in fh.read()
    assert GITHUB.secret.encode() not in journal_bytes()
    monkeypatch.setenv("CLAUDE_CHATS_JOURNAL_REDACT", "yes")
    hook_stores(path)
    assert len(contents()[0]) == 3 and leaked(journal_bytes()) == []


def test_config_show_and_set_know_the_setting():
    shown = chats("config", "show").output
    assert "journal_redact" in shown and "False" in shown
    result = chats("config", "set", "journal_redact", "on")
    assert "chats redact --journal" in result.output
    assert config.load().journal_redact is True
    assert chats("config", "set", "journal_redact", "maybe").exit_code == 1


def test_redact_journal_rewrites_what_is_already_stored(tmp_path):
    path = write_transcript(tmp_path)
    hook_stores(path)
    with Journal.open() as journal:
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
        assert report.embedded == 3, report.errors
        old_vectors = [b for b in stored_codes(journal.conn, 1, [i for (i,) in journal.conn.execute(
            "SELECT c.id FROM chunks c JOIN messages m ON m.id = c.message_id "
            "WHERE m.content LIKE '%token is%' OR m.content LIKE '%env file%'")], fine=False) if any(b)]
        journal.conn.execute("UPDATE messages SET synced = 1")   # as if pushed
    assert len(old_vectors) == 2
    assert leaked(journal_bytes()) and all(v in journal_bytes() for v in old_vectors)

    preview = chats("redact", "--journal", "--dry-run")
    assert "would rewrite 2 messages, 1 sessions" in preview.output
    assert chats("redact", "--journal", input="n\n").exit_code == 1          # declined: nothing changes
    assert GITHUB.secret in contents()[0][0]
    result = chats("redact", "--journal", "--yes")
    assert result.exit_code == 0, result.output
    assert "rewrote 2 messages, 1 sessions" in result.output and "dropped 2 vectors" in result.output

    data = journal_bytes()
    assert leaked(data) == []
    assert [v for v in old_vectors if v in data] == []
    texts, name = contents()
    assert "[REDACTED:github-token]" in texts[0] and name == "debug [REDACTED:openai-api-key]"
    with Journal.open() as journal:
        conn = journal.conn
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        assert fulltext(journal, GITHUB.secret) == [] and len(fulltext(journal, "REDACTED github")) == 1
        assert conn.execute("SELECT count(*) FROM messages WHERE synced = 0").fetchall()[0][0] == 2
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
        assert report.embedded == 2                             # the rewritten ones, embedded again
        assert conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0] == 3
        fresh = stored_codes(conn, 1, [i for (i,) in conn.execute(
            "SELECT c.id FROM chunks c JOIN messages m ON m.id = c.message_id WHERE m.content LIKE '%REDACTED%'")], fine=False)
        assert len(fresh) == 2 and not set(fresh) & set(old_vectors)
    again = chats("redact", "--journal", "--yes")
    assert "nothing to rewrite: 0 messages, 0 sessions" in again.output


def test_redact_filters_standard_input():
    result = chats("redact", input=f"export TOKEN={GITHUB.secret}\nok\n")
    assert result.output == "export TOKEN=[REDACTED:github-token]\nok\n"
