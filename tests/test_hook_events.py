"""The hook, as a fresh process, on transcripts as they really come: not written yet, with
malformed lines, rewritten in place (issue 12 defects 2 and 4; issue 16 item 10).

A fresh process matters here: the hook never imports ``json``, and what pytest has
imported would hide what the hook's own process lacks (the C scanner's errors).
"""

import json
import os
import subprocess
import sys

import apsw
import pytest

from claude_chats import paths
from claude_chats.localstore import uuids
from tests.support import lines
from tests.support.hooks import hook_event, hook_log


def run_hook(path, session="sess-1", event="Stop"):
    assert hook_event(path, event, session) == b""


def hook_errors():
    return [entry["error"] for entry in hook_log()]


def contents(session="sess-1"):
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("SELECT content FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) ORDER BY seq",
                                           (session,))]
    finally:
        conn.close()


def last_hook():
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return json.loads(conn.execute("SELECT value FROM state WHERE key = 'last_hook'").fetchall()[0][0])
    finally:
        conn.close()


@pytest.mark.parametrize("event", ["UserPromptSubmit", "SessionEnd", "Stop"])
def test_a_transcript_not_written_yet_is_not_an_error(tmp_path, event):
    run_hook(tmp_path / "not-yet.jsonl", event=event)
    assert hook_errors() == []
    assert last_hook()["event"] == event and last_hook()["messages"] == 0


MALFORMED = [b'{"a": 1', b'{"a": 1,}', b'{"type": "user", "uuid": "x", "message": {"role": "user", "cont',
             b'{"type": tru}', b'[1, 2', b'{"a": "\\q"}', b'{"a": 1} trailing']


@pytest.mark.parametrize("bad", MALFORMED)
def test_a_malformed_line_does_not_stop_the_session(tmp_path, bad):
    path = tmp_path / "proj" / "sess-1.jsonl"
    path.parent.mkdir(parents=True)
    first = [lines.user("before the bad line"), lines.assistant("an answer before it")]
    path.write_bytes(lines.encode(*first) + bad + b"\n")
    run_hook(path)
    assert contents() == ["before the bad line", "an answer before it"]
    with open(path, "ab") as fh:   # the next turn: lines after the bad one are recorded
        fh.write(lines.encode(lines.user("after the bad line"), lines.assistant("and its answer")))
    run_hook(path)
    assert contents()[2:] == ["after the bad line", "and its answer"]
    assert hook_errors() == []


def test_a_transcript_rewritten_in_place_is_read_again(tmp_path):
    path = tmp_path / "proj" / "sess-1.jsonl"
    path.parent.mkdir(parents=True)
    old = [lines.user(f"old prompt {i}") for i in range(3)]
    path.write_bytes(lines.encode(*old))
    run_hook(path)
    inode = os.stat(path).st_ino
    new = [lines.user(f"new prompt {i} with a longer text than before") for i in range(6)]
    with open(path, "r+b") as fh:   # same file, same inode, longer: the stored lines are gone
        fh.write(lines.encode(*new))
    assert os.stat(path).st_ino == inode
    run_hook(path)
    stored = contents()
    assert [t for t in stored if t.startswith("new prompt")] == [f"new prompt {i} with a longer text than before"
                                                                for i in range(6)]
    assert stored[:3] == [f"old prompt {i}" for i in range(3)]   # what was stored stays


def stop(path, answer, session="sess-1", event="Stop", **extra):
    assert hook_event(path, event, session, last_assistant_message=answer, **extra) == b""


def rows(session="sess-1"):
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [(*rest, uuids.unpack(uuid)) for *rest, uuid in conn.execute(
            "SELECT seq, role, content, uuid FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) ORDER BY seq", (session,))]
    finally:
        conn.close()


def test_stop_stores_the_final_answer_before_its_line_is_written(tmp_path):
    """Issue 12 defect 1: Stop runs before Claude Code writes the turn's last assistant line."""
    path = tmp_path / "sess-1.jsonl"
    prompt, answer = lines.user("why does the kiwi build fail"), lines.assistant("the kiwi build lacks a lockfile")
    path.write_bytes(lines.encode(prompt))
    stop(path, "the kiwi build lacks a lockfile")
    assert [r[2] for r in rows()] == ["why does the kiwi build fail", "the kiwi build lacks a lockfile"]
    with open(path, "ab") as fh:      # the line arrives; the next turn's hook reads it
        fh.write(lines.encode(answer, lines.user("thanks, next: the fig tests")))
    run_hook(path, event="UserPromptSubmit")
    stored = rows()
    assert [r[2] for r in stored] == ["why does the kiwi build fail", "the kiwi build lacks a lockfile",
                                      "thanks, next: the fig tests"]
    assert stored[1][3] == answer["uuid"]           # the stand-in took the line's identity
    conn = apsw.Connection(paths.journal_path())
    conn.execute("UPDATE transcripts SET offset = 0")    # a full re-read stores nothing twice
    conn.close()
    run_hook(path)
    assert len(rows()) == 3 and hook_errors() == []


def test_stop_stores_nothing_when_the_line_was_there_in_time(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user("a plum question"), lines.assistant("a plum answer")))
    stop(path, "a plum answer")
    stop(path, "a plum answer")                     # Stop again: still nothing twice
    assert [r[2] for r in rows()] == ["a plum question", "a plum answer"]


def test_subagent_stop_stores_the_subagents_final_answer(tmp_path):
    parent = tmp_path / "sess-1.jsonl"
    parent.write_bytes(lines.encode(lines.user("delegate the pear count")))
    agent = tmp_path / "sess-1" / "subagents" / "agent-a7.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(lines.encode(lines.user("count the pears", isSidechain=True, agentId="a7")))
    stop(parent, "there are 12 pears", event="SubagentStop", agent_id="a7", agent_transcript_path=str(agent))
    assert [r[2] for r in rows("sess-1:agent-a7")] == ["count the pears", "there are 12 pears"]
    assert [r[2] for r in rows()] == ["delegate the pear count"]


def session_start(path, source, session="sess-1"):
    return hook_event(path, "SessionStart", session, source=source)


def compacted_transcript(path, turns=8):
    out = []
    for i in range(turns):
        out += [lines.user(f"prompt {i}: make the apricot parser handle case {i}"),
                lines.assistant([{"type": "tool_use", "id": f"t{i}", "name": "Edit",
                                  "input": {"file_path": f"/work/proj/apricot_{i % 3}.py"}}]),
                lines.user([{"type": "tool_result", "tool_use_id": f"t{i}",
                             "content": f"ok\nValueError: bad apricot token {i}" if i == 5 else "ok"}]),
                lines.assistant(f"done with case {i}, the marker is quince-{i}")]
    out += [{"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
             "uuid": "b-1", "sessionId": "sess-1", "timestamp": "2026-01-01T01:00:00.000Z",
             "compactMetadata": {"trigger": "manual", "preTokens": 9000}},
            lines.user("This session is being continued from a previous conversation. Summary: apricot work.",
                       isCompactSummary=True)]
    path.write_bytes(lines.encode(*out))


def test_session_start_after_a_compaction_points_at_the_record(tmp_path):
    """Issue 13: the hook answers SessionStart(compact) with the session's seq range and an index."""
    path = tmp_path / "sess-1.jsonl"
    compacted_transcript(path)
    out = json.loads(session_start(path, "compact"))
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert 'session_id "sess-1"' in context and "seq 0 to 31" in context
    assert 'get_conversation(session_id="sess-1", start_seq=0, end_seq=31)' in context
    assert '#0 "prompt 0: make the apricot parser handle case 0"' in context and "case 7" in context
    assert "/work/proj/apricot_0.py" in context and "ValueError: bad apricot token 5" in context
    assert "quince-7" in context and len(context) <= 2000
    assert [r[2] for r in rows()][-1].startswith("This session is being continued")   # recorded first


def test_session_start_before_the_boundary_is_written_points_at_the_turns_stored(tmp_path):
    """Interactive Claude Code 2.1.332 fires SessionStart(compact) before the boundary line reaches the
    transcript: the turns stored since the last compaction are the compacted ones."""
    path = tmp_path / "sess-1.jsonl"
    compacted_transcript(path)
    first = path.read_bytes()
    path.write_bytes(b"".join(first.splitlines(keepends=True)[:-2]))   # the boundary and summary not yet written
    context = json.loads(session_start(path, "compact"))["hookSpecificOutput"]["additionalContext"]
    assert "seq 0 to 31 (32 messages)" in context and "quince-7" in context
    path.write_bytes(first + lines.encode(lines.user("a later prompt about the plum loader"),
                                          lines.assistant("the plum loader now reads lazily")))
    context = json.loads(session_start(path, "compact"))["hookSpecificOutput"]["additionalContext"]
    assert "seq 33 to 35 (3 messages)" in context, context[:400]   # from the previous summary on
    assert "plum loader" in context and "apricot" not in context


def test_session_start_says_nothing_at_startup_and_points_on_resume(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    assert session_start(path, "startup") == b""           # nothing recorded, nothing to say
    path.write_bytes(lines.encode(lines.user("a damson question"), lines.assistant("a damson answer")))
    assert session_start(path, "startup") == b""
    context = json.loads(session_start(path, "resume"))["hookSpecificOutput"]["additionalContext"]
    assert 'session_id "sess-1"' in context and "2 messages" in context


def test_the_index_keeps_the_first_and_latest_prompts_within_its_budget(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    compacted_transcript(path, turns=200)
    context = json.loads(session_start(path, "compact"))["hookSpecificOutput"]["additionalContext"]
    assert len(context) <= 2000
    assert '#0 "prompt 0:' in context and "prompt 199:" in context and "more" in context


def prompt_submit(path, prompt, session="sess-new"):
    out = hook_event(path, "UserPromptSubmit", session, prompt=prompt)
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None


def history(tmp_path):
    old = tmp_path / "sess-old.jsonl"
    old.write_bytes(lines.encode(
        lines.user("the nectarine importer drops rows with a trailing slash in the manifest path", session="sess-old"),
        lines.assistant("the nectarine importer strips the trailing slash before matching manifest paths now",
                        session="sess-old"),
        *[lines.user(f"filler question {i} about something else entirely", session="sess-old") for i in range(20)]))
    run_hook(old, session="sess-old")
    return tmp_path / "sess-new.jsonl"


def test_a_prompt_about_earlier_work_gets_a_pointer(tmp_path):
    """Issue 13 item 3: a strong full-text match in another session becomes a one-line pointer."""
    new = history(tmp_path)
    context = prompt_submit(new, "the nectarine importer drops manifest rows with a trailing slash again")
    assert context and 'session_id "sess-old" seq' in context and context.count("\n- ") == 1
    assert prompt_submit(new, "add a unit test for this function") is None          # nothing strong: nothing
    assert prompt_submit(new, "nectarine importer trailing slash manifest", session="sess-old") is None  # itself


def hint_with_imports(path, prompt, session="sess-new"):
    """The hint a prompt gets, and the modules the hook process imported (``-X importtime``)."""
    data = json.dumps({"session_id": session, "transcript_path": str(path), "hook_event_name": "UserPromptSubmit",
                       "cwd": "/work/proj", "prompt": prompt}).encode()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_chats.hook"], input=data,
                          capture_output=True, timeout=60, cwd=os.path.dirname(path))
    assert proc.returncode == 0
    loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line}
    out = proc.stdout
    return (json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None), loaded


def test_a_hint_with_nothing_secret_looking_costs_the_hook_no_regular_expression(tmp_path):
    """The hint's recorded text is redacted before Claude reads it; a text holding no literal or keyword a
    secret is found from is returned as it is, without importing ``re`` and compiling the rules (~8 ms a
    prompt). One that holds one goes through them: the secret is redacted."""
    new = history(tmp_path)
    context, loaded = hint_with_imports(new, "the nectarine importer drops manifest rows with a trailing slash again")
    assert context and 'session_id "sess-old"' in context and "nectarine importer" in context
    assert "claude_chats.redact" in loaded and "re" not in loaded
    secret = tmp_path / "sess-pw.jsonl"
    secret.write_bytes(lines.encode(lines.user("the quince exporter login failed: password=Zx81kq0pLm4 for the "
                                               "quince exporter staging database", session="sess-pw")))
    run_hook(secret, session="sess-pw")
    context, loaded = hint_with_imports(new, "the quince exporter login failed for the staging database")
    assert context and 'session_id "sess-pw"' in context and "[REDACTED:password]" in context
    assert "Zx81kq0pLm4" not in context and "re" in loaded


def test_recall_hints_off_says_nothing(tmp_path, monkeypatch):
    new = history(tmp_path)
    monkeypatch.setenv("CLAUDE_CHATS_RECALL_HINTS", "off")
    assert prompt_submit(new, "the nectarine importer drops manifest rows with a trailing slash again") is None


def test_no_hint_points_at_a_session_a_script_made(tmp_path, monkeypatch):
    """Issue 17: machine-made sessions (an sdk-* entrypoint, or recorded under CLAUDE_CHATS_MACHINE_MADE=1)
    are no recall hints."""
    prompt = "the nectarine importer drops manifest rows with a trailing slash again"
    monkeypatch.setenv("CLAUDE_CHATS_MACHINE_MADE", "1")
    new = history(tmp_path)
    assert rows("sess-old")
    assert prompt_submit(new, prompt) is None
    monkeypatch.delenv("CLAUDE_CHATS_MACHINE_MADE")
    sdk = tmp_path / "sess-sdk.jsonl"
    sdk.write_bytes(lines.encode(lines.user(prompt.replace(" again", ""), session="sess-sdk", entrypoint="sdk-ts")))
    run_hook(sdk, session="sess-sdk")
    assert prompt_submit(new, prompt) is None
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert dict(conn.execute("SELECT id, machine_made FROM sessions")) == {"sess-old": 1, "sess-sdk": 1}
    finally:
        conn.close()


def test_the_hook_reads_the_excluded_projects_from_the_environment_or_its_copy_of_the_config(tmp_path, monkeypatch):
    """Issue 17: exclude_projects costs the hook no TOML parse on every turn: the journal keeps what the
    config file said, keyed by the file's stat, and the file is read again when it changes."""
    from claude_chats import config

    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user("in the secret project", cwd="/work/secret")))
    config.write_values({"exclude_projects": "/work/secret"})
    assert hook_event(path, "Stop", cwd="/work/secret") == b""   # the payload's cwd: not even read
    assert rows() == []
    run_hook(path)   # a payload naming another folder: the lines' cwd keeps them out
    assert rows() == [] and not hook_errors()
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        cached = json.loads(conn.execute("SELECT value FROM state WHERE key = 'exclude_projects'").fetchall()[0][0])
    finally:
        conn.close()
    assert cached["patterns"] == ["/work/secret"]
    config.write_values({"exclude_projects": "/work/other"})
    other = tmp_path / "sess-2.jsonl"
    other.write_bytes(lines.encode(lines.user("in the secret project again", session="sess-2", cwd="/work/secret")))
    run_hook(other, session="sess-2")
    assert [r[2] for r in rows("sess-2")] == ["in the secret project again"]
    monkeypatch.setenv("CLAUDE_CHATS_EXCLUDE_PROJECTS", "/elsewhere:/work/sec*")
    third = tmp_path / "sess-3.jsonl"
    third.write_bytes(lines.encode(lines.user("and once more", session="sess-3", cwd="/work/secret")))
    run_hook(third, session="sess-3")
    assert rows("sess-3") == []


def test_a_glob_in_the_excluded_projects_costs_fnmatch_once_per_folder(tmp_path, monkeypatch):
    """fnmatch imports re (about 3 ms of every turn): the hook keeps each folder's verdict beside
    the patterns, so only a folder it has not judged yet (or a changed config file) costs it."""
    import subprocess
    import sys

    from claude_chats import config

    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user("an ordinary project", cwd="/work/proj")))
    config.write_values({"exclude_projects": "/work/clients/*/secret"})

    def imports(session_path, cwd="/work/proj"):
        data = json.dumps({"session_id": "sess-1", "transcript_path": str(session_path),
                           "hook_event_name": "Stop", "cwd": cwd}).encode()
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_chats.hook"], input=data,
                              capture_output=True, timeout=60, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout == b""
        return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line}

    assert "fnmatch" in imports(path)                  # the first turn judges /work/proj
    path.write_bytes(path.read_bytes() + lines.encode(lines.user("and a second turn", cwd="/work/proj")))
    assert "fnmatch" not in imports(path)              # its verdict is kept
    assert [r[2] for r in rows()] == ["an ordinary project", "and a second turn"]
    secret = tmp_path / "sess-2.jsonl"
    secret.write_bytes(lines.encode(lines.user("the acme secret", session="sess-2", cwd="/work/clients/acme/secret")))
    assert "fnmatch" in imports(secret, cwd="/work/clients/acme/secret")   # a new folder: judged, kept out
    assert rows("sess-2") == [] and not hook_errors()
    config.write_values({"exclude_projects": "/work/pro*"})           # a changed file: judged again
    path.write_bytes(path.read_bytes() + lines.encode(lines.user("now excluded", cwd="/work/proj")))
    assert "fnmatch" in imports(path)
    assert [r[2] for r in rows()] == ["an ordinary project", "and a second turn"]
    monkeypatch.setenv("CLAUDE_CHATS_EXCLUDE_PROJECTS", "/work/clients/*/secret")   # the environment's globs too
    other = tmp_path / "sess-3.jsonl"
    other.write_bytes(lines.encode(lines.user("a third project", session="sess-3", cwd="/work/third")))
    assert "fnmatch" in imports(other, cwd="/work/third")
    other.write_bytes(other.read_bytes() + lines.encode(lines.user("again", session="sess-3", cwd="/work/third")))
    assert "fnmatch" not in imports(other, cwd="/work/third")
    assert [r[2] for r in rows("sess-3")] == ["a third project", "again"]
    secret.write_bytes(secret.read_bytes() + lines.encode(lines.user("more acme", session="sess-2",
                                                                     cwd="/work/clients/acme/secret")))
    imports(secret, cwd="/work/clients/acme/secret")
    assert rows("sess-2") == [] and not hook_errors()


def test_a_plain_turn_imports_neither_capture_nor_the_sync_lock(tmp_path):
    """capture (markers, excluded projects) costs the hook about 0.15 ms to import: a turn imports it
    only when a prompt has a '#' (every marker has one) or exclude_projects is set. The sync lock
    (fcntl, about 0.2 ms) only when a background sync is due."""
    import subprocess
    import sys

    path = tmp_path / "sess-1.jsonl"

    def modules(*prompts, event="Stop"):
        with open(path, "ab") as fh:
            fh.write(lines.encode(*[lines.user(p) for p in prompts]))
        data = json.dumps({"session_id": "sess-1", "transcript_path": str(path), "hook_event_name": event,
                           "cwd": "/work/proj", "prompt": prompts[-1]}).encode()
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_chats.hook"], input=data,
                              capture_output=True, timeout=60, cwd=tmp_path)
        assert proc.returncode == 0
        return {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line}

    plain = modules("a plain prompt about the quince parser")
    assert "claude_chats.sync.background" in plain     # the background sync was considered ...
    assert not {"claude_chats.capture", "claude_chats.sync.lock", "fcntl"} & plain   # ... cheaply
    assert "claude_chats.capture" not in modules("another plain one", event="UserPromptSubmit")
    assert "claude_chats.capture" in modules("the quince secret #chats-skip")
    assert [r[2] for r in rows()] == ["a plain prompt about the quince parser", "another plain one"]


def test_a_marked_prompt_gets_no_hint_and_keeps_its_turn_out(tmp_path):
    new = history(tmp_path)
    assert prompt_submit(new, "the nectarine importer drops manifest rows with a trailing slash #chats-skip") is None
    new.write_bytes(lines.encode(lines.user("the nectarine importer #chats-skip", session="sess-new"),
                                 lines.assistant("about the nectarine importer", session="sess-new")))
    run_hook(new, session="sess-new")
    assert rows("sess-new") == []


def test_the_hooks_default_is_the_settings():
    from claude_chats import config, hook

    assert hook.RECALL_HINTS_DEFAULT is config.SETTINGS["recall_hints"].default
    assert hook.REDACT_DEFAULT is config.SETTINGS["redact"].default
    assert hook.STARTUP_SESSIONS_DEFAULT == config.SETTINGS["startup_sessions"].default


def startup_context_of(session, cwd="/work/proj", source="startup", **env):
    """The additionalContext of a SessionStart(``source``) in ``cwd``, or None."""
    import subprocess
    import sys

    data = json.dumps({"session_id": session, "transcript_path": f"/nowhere/{session}.jsonl", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": source}).encode()
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=data, capture_output=True, timeout=60,
                          env=dict(os.environ, **env))
    assert proc.returncode == 0 and proc.stderr == b""
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] if proc.stdout else None


def test_a_new_session_is_told_the_projects_latest_sessions(tmp_path, monkeypatch):
    """Issue 13 item 2: on startup the hook names the project's most recent sessions (a person's, not
    subagents, not machine-made, not other projects'), newest first, with their first prompt."""
    def record(session, prompt, day, cwd="/work/proj", **extra):
        path = tmp_path / f"{session}.jsonl"
        path.write_bytes(lines.encode(lines.user(prompt, session=session, cwd=cwd, ts=f"2026-11-{day:02d}T10:00:00Z",
                                                 **extra),
                                      lines.assistant(f"answered: {prompt}", session=session,
                                                      ts=f"2026-11-{day:02d}T10:00:05Z")))
        run_hook(path, session=session)

    assert startup_context_of("sess-new") is None                  # an empty journal: nothing to say
    for day, name in enumerate(["first", "second", "third", "fourth"], start=1):
        record(f"sess-{name}", f"the {name} piece of the walrus migration", day)
    record("sess-elsewhere", "another project's work", 9, cwd="/work/other")
    record("sess-script", "a scripted run", 10, entrypoint="sdk-py")
    context = startup_context_of("sess-new")
    listed = [line.split('session_id "')[1].split('"')[0] for line in context.splitlines()[1:]]
    assert listed == ["sess-fourth", "sess-third", "sess-second"]
    assert "2026-11-04" in context and '2 messages, first prompt "the fourth piece of the walrus migration"' in context
    assert "get_conversation" in context and len(context) < 1000
    assert startup_context_of("sess-new", cwd="/work/nothing-here") is None
    assert startup_context_of("sess-fourth").count("\n- ") == 3     # not itself: the three before it
    assert startup_context_of("sess-new", CLAUDE_CHATS_STARTUP_SESSIONS="1").count("\n- ") == 1
    assert startup_context_of("sess-new", CLAUDE_CHATS_STARTUP_SESSIONS="0") is None
    assert startup_context_of("sess-new", source="clear") is None        # /clear asked for a clean slate
    from claude_chats import config

    config.write_values({"startup_sessions": "2"})
    assert startup_context_of("sess-new").count("\n- ") == 2
    assert not hook_errors()


def test_a_slash_fork_background_session_is_followed_by_later_hooks(tmp_path):
    """/fork starts a background session whose only hook is SessionStart(fork): later hook runs
    of any session read its transcript too (issue 12 defect 3)."""
    parent = tmp_path / "sess-1.jsonl"
    parent.write_bytes(lines.encode(lines.user("before the fork about figs", uid="u-1"),
                                    lines.assistant("figs answered", uid="a-1")))
    run_hook(parent)
    fork = tmp_path / "sess-bg.jsonl"
    copied = [{**line, "sessionId": "sess-bg"} for line in (lines.user("before the fork about figs", uid="u-1"),
                                                            lines.assistant("figs answered", uid="a-1"))]
    fork.write_bytes(lines.encode(*copied))
    session_start(fork, "fork", session="sess-bg")
    with open(fork, "ab") as fh:        # the background session goes on; no hook of its own fires
        fh.write(lines.encode(lines.user("the fork asks about dates", session="sess-bg")))
    with open(parent, "ab") as fh:
        fh.write(lines.encode(lines.user("the parent goes on about plums")))
    run_hook(parent)                      # the parent's next turn
    assert [r[2] for r in rows("sess-bg")] == ["before the fork about figs", "figs answered",
                                               "the fork asks about dates"]
    assert hook_errors() == []
