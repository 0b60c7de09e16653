"""Issue 17: `chats restore` writes back a session Claude Code deleted, and `claude --resume` takes it.

A session with a Bash call and a subagent is recorded; its transcript folder is deleted, as
Claude Code's cleanup (``cleanupPeriodDays``) deletes whole session folders since 2.1.110;
``chats restore`` writes it back; ``claude --resume ID -p ...`` then sends the API the earlier
conversation, checked message by message against what it sent before the deletion. The same
from another machine: a second Claude Code user and journal that have only Postgres (the
first journal synced there).
"""

import json
import shutil

import pytest

from .harness import Scratch

AGENT_PROMPT = "count the pomegranate seeds"


def _plain(value):
    """A request's messages without the prompt-cache marks (their place follows the newest message)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.fixture(scope="module")
def recorded(new_scratch):
    """(scratch, session id, the messages of the last request before the deletion, transcript files)."""
    s = new_scratch()
    first = s.print_turn("first question about pomegranates @bash(echo pomegranate-output)")
    assert first.returncode == 0, first.stderr
    sid = first.session_id
    second = s.print_turn(f"now ask a helper @agent({AGENT_PROMPT})", "--resume", sid)
    assert second.returncode == 0 and second.session_id == sid
    before = _plain(s.api.messages_requests()[-1].body["messages"])
    path = s.transcript_path(sid)
    files = {p.relative_to(path.parent): p.read_bytes() for p in [path, *path.with_suffix("").rglob("*.jsonl")]}
    assert any("subagents" in str(p) for p in files), files.keys()
    return s, sid, before, files


def _resume_checked(scratch, sid, before, cwd=None):
    """Resume ``sid`` in print mode; the request must carry ``before`` message by message, then the answer."""
    scratch.api.clear()
    res = scratch.print_turn("third question about quinces @reply(quince answer)", "--resume", sid, cwd=cwd)
    assert res.returncode == 0, res.stderr
    assert res.session_id == sid
    sent = _plain(scratch.api.messages_requests()[-1].body["messages"])
    for index, message in enumerate(before):
        assert sent[index] == message, f"message {index} differs:\n{json.dumps(sent[index])[:800]}\n" \
                                       f"before the deletion:\n{json.dumps(message)[:800]}"
    answer = sent[len(before)]
    assert answer["role"] == "assistant" and "The subagent said" in json.dumps(answer), answer
    assert "third question about quinces" in json.dumps(sent[len(before) + 1:])
    return sent


def test_a_deleted_session_is_restored_and_resumed(recorded):
    s, sid, before, files = recorded
    path = s.transcript_path(sid)
    shutil.rmtree(path.with_suffix(""))
    path.unlink()

    dry = s.chats("restore", sid, "--dry-run")
    assert "would write" in dry.stdout and not path.exists()
    out = s.chats("restore", sid)
    assert f"claude --resume {sid}" in out.stdout
    assert path.exists() and list(path.with_suffix("").glob("subagents/agent-*.jsonl")), out.stdout
    restored = path.read_bytes()
    assert len(restored) < len(files[path.relative_to(path.parent)]) / 3   # the request logs are not kept
    for line in restored.splitlines():
        json.loads(line)

    again = s.chats("restore", sid)   # the same file again: nothing to do
    assert "already there, unchanged" in again.stdout

    _resume_checked(s, sid, before)

    # the resumed file now differs from what the journal would write: refused, and how to force it
    refused = s.chats("restore", sid, check=False)
    assert refused.returncode == 1 and "--force" in refused.stderr and "not overwritten" in refused.stderr
    forced = s.chats("restore", sid, "--force")
    assert "replaced" in forced.stdout and list(path.parent.glob(f"{sid}.jsonl.bak-*"))


def test_a_session_is_restored_on_another_machine_from_postgres(recorded, pg_db_url, test_model_path, tmp_path):
    s, sid, before, _files = recorded
    db = {"DATABASE_URL": pg_db_url, "CLAUDE_CHATS_MODEL": str(test_model_path), "CLAUDE_CHATS_THREADS": "1"}
    synced = json.loads(s.chats("sync", "--json", **db).stdout)
    assert synced["ok"] and synced["raw_lines"] > 0, synced

    other = Scratch(tmp_path / "other-machine", s.binary, s.api_url, project_name="checkout")
    other.api = s.api
    other.install()
    try:
        assert other.show(sid) is None   # its journal never saw the session
        out = other.chats("restore", sid, "--to", str(other.project), **db)
        assert "from the postgres" in out.stdout and f"cd {other.project} && claude --resume {sid}" in out.stdout
        assert other.transcript_path(sid).exists()
        _resume_checked(other, sid, before, cwd=other.project)
    finally:
        other.cleanup()
