"""Issue 21, item 7: the holes in keeping out. Each case runs the hook as a fresh process, event by
event as Claude Code runs it, and ``chats import`` (a fresh journal reading the same files: another
machine, a fork's copy, a journal rebuilt) as a subprocess; what is kept out is in no byte stored.

- ``exclude_projects`` naming a symlinked folder holds for the real path Claude Code records, and
  the reverse (the verdict is computed once per folder: the journal keeps it);
- a subagent resumed in a ``#chats-skip`` turn (first read in a normal one) is kept out for that
  run, with its final answer;
- the older layout (``agent-<id>.jsonl`` beside the session) is kept out by ``#chats-off``;
- a marker in a slash command's arguments and in a bash-mode (``!``) command holds from the
  transcript itself.
"""

import json
import os
import subprocess

import apsw
import pytest

from claude_chats import paths
from claude_chats.times import now_iso
from tests.support import lines
from tests.support.cli import chats
from tests.support.hooks import CHATS, hook_event, hook_log
from tests.support.keptout import append, folder, stored_bytes

SECRET, PUBLIC = "XyzzyHoleSecret", "XyzzyHolePublic"
PROJECT = "/work/proj"
_clock = iter(range(10_000))   # numbers for ids
_last = [""]


def _ts():
    """A line's timestamp as Claude Code writes it: the machine's clock when the line is written (the
    hook's clock too), in its format; each later than the one before."""
    stamp = now_iso()
    while stamp <= _last[0]:
        stamp = now_iso()
    _last[0] = stamp
    return stamp


def _event(path, event, session, cwd=PROJECT, **fields):
    assert hook_event(path, event, session, cwd=cwd, **fields) == b""


def _cli(*args):
    proc = subprocess.run(CHATS + [str(a) for a in args], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _texts(session):
    """What ``chats show`` prints of a session's messages (a subprocess)."""
    return [m["content"] for m in json.loads(_cli("show", session, "--json"))["messages"]]


def _fresh_import(*files):
    """The journal gone (the settings kept), ``chats import`` of ``files`` or of every transcript (a
    subprocess)."""
    for name in os.listdir(paths.data_dir()):
        if name.startswith("journal.db"):
            os.remove(os.path.join(paths.data_dir(), name))
    _cli("import", *files)


def _check(data, public=True):
    assert SECRET.encode() not in data and SECRET.lower().encode() not in data.lower()
    assert not public or PUBLIC.encode() in data   # the check sees what is stored
    assert not [e for e in hook_log() if "Error" in e["error"]], hook_log()


def _plain_turn(path, session, prompt, answer, cwd=PROJECT):
    _event(path, "UserPromptSubmit", session, prompt=prompt)
    append(path, lines.user(prompt, session=session, cwd=cwd, ts=_ts()),
           lines.assistant(answer, session=session, cwd=cwd, ts=_ts()))
    _event(path, "Stop", session, last_assistant_message=answer)


# -- exclude_projects: the given and the resolved forms --------------------------------------


@pytest.mark.parametrize("named", ["link", "real", "glob", "env"])
def test_an_excluded_project_named_by_a_symlink_or_its_real_path_is_kept_out(tmp_path, monkeypatch, named):
    real = tmp_path / "work" / "acme"
    real.mkdir(parents=True)
    (tmp_path / "acme-link").symlink_to(real)
    (tmp_path / "work-link").symlink_to(tmp_path / "work")
    pattern, recorded = {"link": (tmp_path / "acme-link", real), "real": (real, tmp_path / "acme-link"),
                         "glob": (tmp_path / "work-link" / "ac*", real),
                         "env": (tmp_path / "acme-link", real)}[named]
    if named == "env":
        monkeypatch.setenv("CLAUDE_CHATS_EXCLUDE_PROJECTS", str(pattern))
    else:
        assert chats("config", "set", "exclude_projects", str(pattern)).exit_code == 0
    path = os.path.join(folder(str(recorded)), "sess-acme.jsonl")
    # the payload names another folder: the lines' cwd must keep them out
    _plain_turn(path, "sess-acme", f"the {SECRET} merger", f"{SECRET} noted", cwd=str(recorded))
    public = os.path.join(folder(PROJECT), "sess-pub.jsonl")
    _plain_turn(public, "sess-pub", f"{PUBLIC} question", f"{PUBLIC} answer")
    _check(stored_bytes())
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cached = json.loads(conn.execute("SELECT value FROM state WHERE key = 'exclude_projects'").fetchall()[0][0])
    finally:
        conn.close()
    # each folder judged once, its verdict kept: a turn resolves no path it judged before
    assert cached["verdicts"] == {str(recorded): True, PROJECT: False}
    _event(path, "Stop", "sess-acme", cwd=str(recorded))   # the payload's own cwd, resolved too
    _fresh_import()
    _check(stored_bytes())


# -- subagents ------------------------------------------------------------------------------


def _agent_turn(path, agent, prompt, asked, answered, lag=False):
    """A turn whose model runs (or resumes) the subagent ``a1`` in ``agent``: UserPromptSubmit, the
    prompt and the Agent call, the subagent's run and its SubagentStop (``lag``: before the run's
    lines are on disk), the hand-back, Stop."""
    session, n = "sess-r", next(_clock)
    _event(path, "UserPromptSubmit", session, prompt=prompt)
    append(path, lines.user(prompt, session=session, ts=_ts()),
           lines.assistant([{"type": "tool_use", "id": f"toolu_{n}", "name": "Agent",
                             "input": {"description": "count", "prompt": asked}}], session=session, ts=_ts()))
    run = (lines.user(asked, session=session, isSidechain=True, agentId="a1", ts=_ts()),
           lines.assistant(answered, session=session, isSidechain=True, agentId="a1", ts=_ts()))
    if not lag:
        append(agent, *run)
    _event(path, "SubagentStop", session, agent_id="a1", agent_transcript_path=agent,
           last_assistant_message=f"finally: {answered}")
    if lag:
        append(agent, *run)
    append(path, lines.user([{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": answered}],
                            session=session, ts=_ts()),
           lines.assistant(f"the subagent said {answered}", session=session, ts=_ts()))
    _event(path, "Stop", session, last_assistant_message=f"the subagent said {answered}")


@pytest.mark.parametrize("lag", [False, True], ids=["written", "lagging"])
def test_a_subagent_resumed_in_a_skipped_turn_is_kept_out_with_its_final_answer(tmp_path, lag):
    path = os.path.join(folder(PROJECT), "sess-r.jsonl")
    agent = os.path.join(path[:-len(".jsonl")], "subagents", "agent-a1.jsonl")
    os.makedirs(os.path.dirname(agent))
    _agent_turn(path, agent, "count the apples", f"{PUBLIC} count apples", f"{PUBLIC} apples: 4")
    _agent_turn(path, agent, f"#chats-skip ask it about {SECRET}", f"resume: {SECRET}", f"{SECRET} is 9931", lag)
    _agent_turn(path, agent, "and the pears", f"{PUBLIC} resume: pears", f"{PUBLIC} pears: 7")
    expected = [f"{PUBLIC} count apples", f"{PUBLIC} apples: 4", f"finally: {PUBLIC} apples: 4",
                f"{PUBLIC} resume: pears", f"{PUBLIC} pears: 7", f"finally: {PUBLIC} pears: 7"]
    _check(stored_bytes())
    assert _texts("sess-r:agent-a1") == expected
    _fresh_import()
    _check(stored_bytes())
    assert _texts("sess-r:agent-a1") == [t for t in expected if not t.startswith("finally")]
    _fresh_import(agent)   # the subagent's file alone: its session's is read first
    _check(stored_bytes())
    assert _texts("sess-r:agent-a1") == [t for t in expected if not t.startswith("finally")]


def test_the_older_layout_of_subagents_is_kept_out_by_chats_off(tmp_path):
    """Up to 2.0, ``agent-<id>.jsonl`` lay beside the sessions, linked by the ``sessionId`` of their
    lines: one read before the #chats-off and resumed after it, and one begun after it."""
    where = folder(PROJECT)
    path, first, later = (os.path.join(where, name) for name in ("sess-old.jsonl", "agent-b1.jsonl", "agent-b2.jsonl"))

    def agent_lines(agent, asked, answered):
        append(agent, lines.user(asked, session="sess-old", isSidechain=True, agentId=agent[-8:-6], ts=_ts()),
               lines.assistant(answered, session="sess-old", isSidechain=True, agentId=agent[-8:-6], ts=_ts()))

    _event(path, "UserPromptSubmit", "sess-old", prompt=f"{PUBLIC} research")
    append(path, lines.user(f"{PUBLIC} research", session="sess-old", ts=_ts()))
    agent_lines(first, f"{PUBLIC} look it up", f"{PUBLIC} found")
    _event(path, "Stop", "sess-old")
    _event(path, "UserPromptSubmit", "sess-old", prompt=f"#chats-off the {SECRET} merger")
    append(path, lines.user(f"#chats-off the {SECRET} merger", session="sess-old", ts=_ts()))
    agent_lines(first, f"now {SECRET}", f"{SECRET} found")
    agent_lines(later, f"and {SECRET} again", f"{SECRET} found again")
    _event(path, "Stop", "sess-old")
    _check(stored_bytes())
    assert _texts("sess-old:agent-b1") == [f"{PUBLIC} look it up", f"{PUBLIC} found"]
    _fresh_import()   # agent-*.jsonl sorts before sess-old.jsonl: the session is read first all the same
    _check(stored_bytes())
    assert _texts("sess-old:agent-b1") == [f"{PUBLIC} look it up", f"{PUBLIC} found"]
    _fresh_import(first)   # the subagent's file alone: its session's (its lines name it) is read first
    _check(stored_bytes())
    assert _texts("sess-old:agent-b1") == [f"{PUBLIC} look it up", f"{PUBLIC} found"]


# -- markers the transcript holds in other forms ----------------------------------------------


def _command(shape, args):
    """A slash command with ``args`` as 2.1.x writes it: a user line, or a system/local_command one."""
    body = (f"<command-name>/review</command-name>\n            <command-message>review</command-message>\n"
            f"            <command-args>{args}</command-args>")
    if shape == "user":
        return lines.user(body, ts=_ts())
    return {"type": "system", "subtype": "local_command", "content": body, "level": "info", "isMeta": False,
            "uuid": f"local-{next(_clock)}", "sessionId": "sess-1", "cwd": PROJECT, "timestamp": _ts()}


@pytest.mark.parametrize("shape", ["user", "system"])
def test_a_marker_in_a_slash_commands_arguments_holds_without_the_live_hook(tmp_path, shape):
    """The hook of a fork's copy, and ``chats import``, never saw the UserPromptSubmit."""
    path = os.path.join(folder(PROJECT), "sess-1.jsonl")
    append(path, lines.user(f"{PUBLIC} first", ts=_ts()), lines.assistant(f"{PUBLIC} answered", ts=_ts()),
           _command(shape, f"the {SECRET} diff #chats-skip"),
           lines.user(f"Review the {SECRET} diff #chats-skip", isMeta=True, ts=_ts()),
           {"type": "custom-title", "customTitle": f"{SECRET} review", "sessionId": "sess-1"},
           lines.assistant(f"{SECRET} reviewed", ts=_ts()),
           lines.user("the next question", ts=_ts()), lines.assistant("the next answer", ts=_ts()))
    _event(path, "Stop", "sess-1")
    _check(stored_bytes())
    assert _texts("sess-1") == [f"{PUBLIC} first", f"{PUBLIC} answered", "the next question", "the next answer"]
    _fresh_import()
    _check(stored_bytes())


def test_a_bash_mode_command_with_a_marker_is_kept_out_live_and_at_import(tmp_path):
    """``! cat .env #chats-skip``: Claude Code writes ``<bash-input>`` and ``<bash-stdout>`` lines and
    runs no model turn; the next prompt's hooks read them."""
    path = os.path.join(folder(PROJECT), "sess-b.jsonl")
    _plain_turn(path, "sess-b", f"{PUBLIC} first", f"{PUBLIC} answered")
    append(path, lines.user("<bash-input>cat .env #chats-skip</bash-input>", session="sess-b", ts=_ts()),
           lines.user(f"<bash-stdout>API_KEY={SECRET}</bash-stdout><bash-stderr></bash-stderr>", session="sess-b",
                      ts=_ts()))
    _plain_turn(path, "sess-b", "the next question", "the next answer")
    _check(stored_bytes())
    assert _texts("sess-b") == [f"{PUBLIC} first", f"{PUBLIC} answered", "the next question", "the next answer"]
    _fresh_import()
    _check(stored_bytes())
    assert _texts("sess-b") == [f"{PUBLIC} first", f"{PUBLIC} answered", "the next question", "the next answer"]


def test_a_session_of_many_skipped_turns_keeps_its_subagents_out_with_bounded_state(tmp_path):
    """300 turns skipped one in two: the journal keeps at most MAX_KEPT_TURNS spans (the oldest merged,
    so what lay between them is kept out too, never let in), and the subagent run of the first
    skipped turn and of the last are kept out; the last public turn's run is stored."""
    from claude_chats.localstore.writer import KEPT_TURNS, MAX_KEPT_TURNS

    path = os.path.join(folder(PROJECT), "sess-m.jsonl")
    agent = os.path.join(path[:-len(".jsonl")], "subagents", "agent-a1.jsonl")
    os.makedirs(os.path.dirname(agent))
    for turn in range(600):
        skipped = turn % 2 == 0
        prompt = f"#chats-skip turn {turn}" if skipped else f"turn {turn}"
        append(path, lines.user(prompt, session="sess-m", ts=_ts()), lines.assistant("ok", session="sess-m", ts=_ts()))
        if turn in (0, 598, 599):
            said = f"{SECRET} run {turn}" if skipped else f"{PUBLIC} run {turn}"
            append(agent, lines.user(said, session="sess-m", isSidechain=True, agentId="a1", ts=_ts()))
    _cli("import")
    _check(stored_bytes())
    assert _texts("sess-m:agent-a1") == [f"{PUBLIC} run 599"]
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (value,), = conn.execute("SELECT value FROM state WHERE key = ?", (KEPT_TURNS + path,)).fetchall()
    finally:
        conn.close()
    assert len(json.loads(value)) == MAX_KEPT_TURNS
