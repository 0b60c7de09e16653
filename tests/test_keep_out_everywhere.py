"""Issue 17: text kept out (an excluded project, #chats-skip, #chats-off) is in no byte of the journal
file, its WAL, Postgres or the logs, after the hook (as a process, event by event, as Claude Code runs
it), ``chats import`` and ``chats sync``. A text that is recorded is found by the same checks (they
see what is stored: plain content, the compressed kept lines, Postgres rows).
"""

import json
import os

import psycopg
import pytest

from claude_chats import config, paths, rawlines
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.hooks import hook_event, hook_log
from tests.support.keptout import append, folder, stored_bytes

SECRETS = ("XyzzyProjectSecret", "XyzzySkipSecret", "XyzzyOffSecret")
PUBLIC = "XyzzyPublicMarker"


def _event(path, event, session, cwd, **fields):
    assert hook_event(path, event, session, cwd=cwd, **fields) == b""


def _turn(path, session, cwd, prompt, answer, **extra):
    """One turn as Claude Code runs it: UserPromptSubmit before the prompt line, then the lines, then Stop."""
    _event(path, "UserPromptSubmit", session, cwd, prompt=prompt)
    append(path, lines.user(prompt, session=session, cwd=cwd, **extra),
           lines.assistant([{"type": "text", "text": answer},
                            {"type": "tool_use", "id": f"t-{len(answer)}", "name": "Bash",
                             "input": {"command": f"echo {answer}"}}], session=session, cwd=cwd),
           lines.user([{"type": "tool_result", "tool_use_id": f"t-{len(answer)}", "content": answer}],
                      session=session, cwd=cwd))
    _event(path, "Stop", session, cwd, last_assistant_message=f"in the end: {answer}")


def _postgres_bytes(url):
    with psycopg.connect(url) as conn:
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        rows = [str(row) for t in tables for row in conn.execute(f"SELECT t::text FROM {t} t")]
        rows += [rawlines.unpack(line).decode() for (line,) in conn.execute(
            "SELECT line FROM raw_lines WHERE line IS NOT NULL")]
    return "\n".join(rows).encode()


def _check(data):
    low = data.lower()
    for secret in SECRETS:
        assert secret.encode() not in data and secret.lower().encode() not in low, secret
    assert PUBLIC.encode() in data   # the checks see what is stored


@pytest.fixture
def sessions(tmp_path):
    """An excluded project's session (with a subagent) and a public one with a skipped turn and an off."""
    acme, public = str(tmp_path / "clients" / "acme"), "/work/proj"
    assert chats("config", "set", "exclude_projects", str(tmp_path / "clients" / "*")).exit_code == 0
    secret_path = os.path.join(folder(acme), "sess-acme.jsonl")
    append(secret_path, {"type": "summary", "summary": f"{SECRETS[0]} summary", "leafUuid": "x"})
    _turn(secret_path, "sess-acme", acme, f"the {SECRETS[0]} merger terms", f"{SECRETS[0]} answered")
    append(secret_path, {"type": "custom-title", "customTitle": SECRETS[0], "sessionId": "sess-acme"})
    agent = os.path.join(secret_path[:-len(".jsonl")], "subagents", "agent-a1.jsonl")
    os.makedirs(os.path.dirname(agent))
    append(agent, lines.user(f"research {SECRETS[0]}", session="sess-acme", cwd=acme, isSidechain=True))
    _event(secret_path, "SubagentStop", "sess-acme", acme, agent_id="a1", agent_transcript_path=agent,
           last_assistant_message=f"{SECRETS[0]} researched")

    path = os.path.join(folder(public), "sess-pub.jsonl")
    _turn(path, "sess-pub", public, f"{PUBLIC} first question", f"{PUBLIC} first answer")
    _turn(path, "sess-pub", public, f"#chats-skip my key is {SECRETS[1]}", f"noted {SECRETS[1]}")
    _turn(path, "sess-pub", public, "second public question", "second public answer")
    _turn(path, "sess-pub", public, f"#chats-off {SECRETS[2]} from here", f"{SECRETS[2]} answer")
    _turn(path, "sess-pub", public, f"later {SECRETS[2]} again", f"later {SECRETS[2]} answer")
    return path


def test_what_is_kept_out_is_in_no_byte_of_the_journal_the_wal_postgres_or_the_logs(sessions, pg_db_url):
    assert os.path.exists(paths.journal_path() + "-wal")   # the hook's runs left their frames in the WAL
    _check(stored_bytes())
    assert chats("import").exit_code == 0
    _check(stored_bytes())
    report = run_sync(config.load({"database_url": pg_db_url}), provider=HashEmbedder(), lock=False)
    assert report.ok and report.raw_lines, report.errors
    _check(stored_bytes())
    _check(_postgres_bytes(pg_db_url))
    assert not [e for e in hook_log() if "Error" in e["error"]], hook_log()
    shown = json.loads(chats("show", "sess-pub", "--json").output)
    assert [m["content"] for m in shown["messages"] if m["kind"] == "text"] == [   # Stop's answers: the payload's
        f"{PUBLIC} first question", f"{PUBLIC} first answer", f"in the end: {PUBLIC} first answer",
        "second public question", "second public answer", "in the end: second public answer"]


def test_a_project_added_to_the_list_later_is_purged_and_kept_out(tmp_path):
    later = "/work/later"
    path = os.path.join(folder(later), "sess-later.jsonl")
    _turn(path, "sess-later", later, "the XyzzyLaterSecret question", "the XyzzyLaterSecret answer")
    assert b"XyzzyLaterSecret" in stored_bytes()
    assert chats("config", "set", "exclude_projects", later).exit_code == 0
    assert chats("purge", "--project", later, "--yes").exit_code == 0
    _turn(path, "sess-later", later, "the XyzzyLaterSecret again", "the XyzzyLaterSecret once more")
    assert chats("import").exit_code == 0
    data = stored_bytes()
    assert b"XyzzyLaterSecret" not in data and b"xyzzylatersecret" not in data.lower()
