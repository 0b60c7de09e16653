"""Fuzzing the hook as Claude Code runs it: a process, any bytes on stdin, any transcript on disk.

Whatever the payload (truncated JSON, wrong types, huge strings, NUL bytes,
invalid UTF-8, deep nesting, hostile ids and paths) and whatever the
transcript holds, the hook exits 0, prints nothing on stdout, logs one JSON
line per error, keeps the journal consistent, loses nothing already stored,
and creates no file outside its own folders. Fewer examples than the
in-process fuzzers: each one starts a Python process.
"""

import json
import os
import resource

import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from claude_chats import paths
from tests.support import lines
from tests.support.fuzzing import (
    HOSTILE_IDS,
    HOSTILE_PATHS,
    check_journal,
    fuzz_settings,
    json_values,
    transcript_bytes,
    tree,
)
from tests.support.hooks import hook_log, run_hook

EVENTS = ["Stop", "UserPromptSubmit", "PreCompact", "SessionEnd", "SubagentStop", "", "💥", None, 7]


@pytest.fixture
def seeded(tmp_path):
    """A journal already holding a conversation, stored by the hook."""
    path = tmp_path / "transcripts" / "known.jsonl"
    path.parent.mkdir()
    path.write_bytes(lines.encode(*lines.conversation(6, session="known")))
    run_hook(json.dumps({"session_id": "known", "transcript_path": str(path)}).encode())
    return tmp_path, check_journal(paths.journal_path())


def _payload(session, transcript, event, extra, agent):
    payload = {"session_id": session, "transcript_path": transcript, "hook_event_name": event, "cwd": "/work/x"}
    if agent is not None:
        payload["agent_transcript_path"] = agent
    payload.update(extra)
    return payload


payload_bytes = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda v: json.dumps(v).encode(), json_values),
    st.sampled_from([b"", b"{", b'{"session_id": "s", "transcript_path": "/x', b"[" * 100_000, b"\x00" * 64,
                     b'{"session_id": "\xff\xfe", "transcript_path": "\xc3"}', b'{"transcript_path": null}',
                     b'{"transcript_path": ["a"]}', b'{"transcript_path": {"a": 1}}', b"null", b"1e999"]),
)


@seed(301)
@fuzz_settings(12, 300)
@given(payload_bytes)
def test_any_payload_exits_zero_silently_and_loses_nothing(seeded, data):
    root, before = seeded
    snapshot = tree(root)
    run_hook(data)
    check_journal(paths.journal_path(), before)
    hook_log()
    assert {p for p in tree(root) - snapshot if not p.startswith("chats-home")} == set()


@seed(302)
@fuzz_settings(15, 400)
@given(st.sampled_from(HOSTILE_IDS + [None, 5, ["x"]]), st.sampled_from(EVENTS), transcript_bytes,
       st.sampled_from(["ok", "missing", "folder", "hostile", "agent"]),
       st.dictionaries(st.sampled_from(["prompt", "permission_mode", "reason", "stop_hook_active", "agent_id"]),
                       st.one_of(st.text(max_size=50), st.just("p" * 300_000), json_values), max_size=3))
def test_fuzzed_transcripts_and_payload_fields(seeded, session, event, data, where, extra):
    root, before = seeded
    folder = root / "transcripts"
    transcript = str(folder / "fuzzed.jsonl")
    with open(transcript, "ab") as fh:
        fh.write(data)
    agent = None
    if where == "missing":
        transcript = str(folder / "nope.jsonl")
    elif where == "folder":
        transcript = str(folder)
    elif where == "hostile":
        transcript = str(folder / HOSTILE_PATHS[len(data) % len(HOSTILE_PATHS)].replace("\x00", ""))
    elif where == "agent":
        agent = transcript
    snapshot = tree(root)
    run_hook(json.dumps(_payload(session, transcript, event, extra, agent)).encode())
    check_journal(paths.journal_path(), before)
    for entry in hook_log():
        assert set(entry) >= {"at", "error"}
    assert {p for p in tree(root) - snapshot if not p.startswith("chats-home")} == set()


def test_transcript_path_to_a_fifo_does_not_block_the_hook(tmp_path):
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    run_hook(json.dumps({"session_id": "s", "transcript_path": str(fifo)}).encode())   # a hang never ends


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_transcript_path_to_a_device_does_not_hang_the_hook():
    run_hook(json.dumps({"session_id": "s", "transcript_path": "/dev/zero"}).encode(), preexec_fn=_limit_memory)


def test_a_line_with_a_lone_surrogate_does_not_stop_the_hook_storing_later_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines.encode(lines.user("before", session="s", uid="u1")))
    payload = json.dumps({"session_id": "s", "transcript_path": str(path)}).encode()
    run_hook(payload)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"\\ud800"}}\n')
    run_hook(payload)
    with open(path, "ab") as fh:
        fh.write(lines.encode(lines.user("after", session="s", uid="u3")))
    run_hook(payload)
    assert "u3" in check_journal(paths.journal_path())
