"""A subagent is what its parent session is: a script's subagent is machine-made (issue 21, item 8).

Origin is decided by a session's first ``entrypoint`` (``sdk-*``: an SDK run or a script). A
subagent of an SDK session whose lines carry no ``entrypoint`` was recorded as a person's: it came
up in search by default and in the hook's recall hints. Now a subagent inherits its parent's
origin, whichever of the two is stored first. Through the hook as a fresh process and ``chats``.
"""

import json
import pathlib
import subprocess

import apsw
import pytest

from claude_chats import paths
from tests.support import lines
from tests.support.hooks import CHATS, hook_event

PROMPT = "the nectarine importer drops manifest rows with a trailing slash again"
AGENT = "sess-sdk:agent-a1"


def sdk_session(tmp_path, entrypoint="sdk-py"):
    """An SDK session (``entrypoint``) and its subagent, whose lines have no entrypoint."""
    parent = tmp_path / "sess-sdk.jsonl"
    parent.write_bytes(lines.encode(
        lines.user("run the nightly report", session="sess-sdk", **({"entrypoint": entrypoint} if entrypoint else {})),
        lines.assistant("started an agent for it", session="sess-sdk",
                        **({"entrypoint": entrypoint} if entrypoint else {}))))
    child = tmp_path / "sess-sdk" / "subagents" / "agent-a1.jsonl"
    child.parent.mkdir(parents=True)
    child.write_bytes(lines.encode(
        lines.user("the nectarine importer drops rows with a trailing slash in the manifest path",
                   session="sess-sdk", isSidechain=True, agentId="a1"),
        lines.assistant("the nectarine importer strips the trailing slash before matching manifest paths now",
                        session="sess-sdk", isSidechain=True, agentId="a1"),
        *[lines.user(f"filler question {i} about something else entirely", session="sess-sdk", isSidechain=True,
                     agentId="a1") for i in range(20)]))
    return parent, child


def origins():
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return dict(conn.execute("SELECT id, machine_made FROM sessions"))
    finally:
        conn.close()


def hint(tmp_path):
    out = hook_event(tmp_path / "sess-new.jsonl", "UserPromptSubmit", "sess-new", prompt=PROMPT)
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None


@pytest.mark.parametrize("entrypoint, machine_made", [("sdk-py", 1), ("sdk-cli", 1), (None, 0), ("cli", 0)])
def test_the_hook_records_a_subagent_as_its_parent_session(tmp_path, entrypoint, machine_made):
    parent, _ = sdk_session(tmp_path, entrypoint)
    assert hook_event(parent, "Stop", "sess-sdk") == b""
    assert origins() == {"sess-sdk": machine_made, AGENT: machine_made}
    context = hint(tmp_path)
    if machine_made:
        assert context is None, context     # no hint points at a script's subagent
    else:
        assert context and AGENT in context  # a person's subagent is a hint as before


def chats(*args):
    proc = subprocess.run([*CHATS, *map(str, args)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    return proc.stdout


def found(*origin):
    result = json.loads(chats("search", "nectarine importer", "--local", "--mode", "fulltext", "--json", *origin))
    return {hit["session_id"] for hit in result["hits"]}


def test_a_subagent_imported_before_its_parent_becomes_machine_made_with_it(tmp_path):
    parent, child = sdk_session(tmp_path)
    chats("import", child)   # its session's file is read first (issue 21, item 7): both machine-made
    assert origins() == {"sess-sdk": 1, AGENT: 1}
    for suffix in ("", "-wal", "-shm"):   # a new journal
        pathlib.Path(paths.journal_path() + suffix).unlink(missing_ok=True)
    away = parent.rename(tmp_path / "elsewhere.jsonl")   # the session's file not there (yet)
    chats("import", child)
    assert origins() == {AGENT: 0}   # nothing says yet what its parent is
    away.rename(parent)
    chats("import", parent)
    assert origins() == {"sess-sdk": 1, AGENT: 1}
    assert found() == set() and found("--origin", "machine") == {AGENT}
