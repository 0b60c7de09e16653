"""Issue 12 defect 3: forked sessions.

``claude --resume X --fork-session`` writes a new session file that starts
with a copy of the parent's lines: the same uuids, ``sessionId`` rewritten to
the fork's (``promptId`` too). A journal keyed on uuid alone keeps the copies
in the parent and stores the fork as only its new turns. ``/fork`` in the
interactive UI starts a background session (``sessionKind: "bg"``) whose
transcript no hook of the fork's ever reads.
"""

import time

import pytest

from .harness import eventually


@pytest.fixture(scope="module")
def forked(new_scratch):
    """(scratch, parent id, fork id): two parent turns, then a --fork-session turn."""
    s = new_scratch()
    return (s, *_parent_and_fork(s))


def _parent_and_fork(scratch):
    parent = scratch.print_turn("parent question about kumquats @bash(echo kumquat-output)")
    assert parent.returncode == 0
    second = scratch.print_turn("parent follow-up about persimmons", "--resume", parent.session_id)
    assert second.returncode == 0 and second.session_id == parent.session_id
    fork = scratch.print_turn("fork question about quinces", "--resume", parent.session_id, "--fork-session")
    assert fork.returncode == 0
    assert fork.session_id != parent.session_id
    return parent.session_id, fork.session_id


def test_fork_session_copies_the_parents_lines_with_their_uuids(forked):
    scratch, psid, fsid = forked
    parent, fork = scratch.transcript(psid), scratch.transcript(fsid)
    parent_uuids = {r["uuid"] for r in parent.records if r.get("type") in ("user", "assistant")}
    fork_msgs = [r for r in fork.records if r.get("type") in ("user", "assistant")]
    copied = [r for r in fork_msgs if r["uuid"] in parent_uuids]
    assert copied and {r["uuid"] for r in copied} == parent_uuids
    assert all(r["sessionId"] == fsid for r in fork_msgs)
    assert fork.prompts() == parent.prompts() + ["fork question about quinces"]


def test_search_returns_a_copied_message_once(forked):
    scratch, psid, fsid = forked
    hits = scratch.search("persimmons", "--per-session", "10")["hits"]
    texts = [h["text"] for h in hits if h["kind"] == "text" and h["role"] == "user"]
    assert texts.count("parent follow-up about persimmons") == 1, hits


def test_fork_reads_whole_and_search_has_no_duplicates(forked):
    scratch, psid, fsid = forked
    fork = scratch.transcript(fsid)
    shown = scratch.show(fsid)
    assert shown is not None
    stored = [m["content"] for m in shown["messages"]]
    for text in fork.prompts() + fork.assistant_texts():
        assert text in stored, f"{text!r} missing from the fork in the journal ({len(stored)} messages)"
    parent_shown = scratch.show(psid)
    assert len(parent_shown["messages"]) >= 1
    hits = scratch.search("persimmons", "--per-session", "10")["hits"]
    texts = [h["text"] for h in hits if h["kind"] == "text" and h["role"] == "user"]
    assert texts.count("parent follow-up about persimmons") == 1, hits


def test_slash_fork_session_is_recorded(probed):
    with probed.interactive() as ui:
        ui.wait_idle()
        ui.turn("before the fork about figs")
        ui.type("/fork")
        ui.wait_for(lambda s: "session waiting for a prompt" in s, what="/fork's answer")
        forks = eventually(lambda: [r for r in probed.probe_runs("SessionStart") if r["payload"].get("source") == "fork"],
                           "SessionStart(source=fork)")
        fsid = forks[0]["payload"]["session_id"]
        # the fork's daemon copies the parent's lines into its transcript when the machine lets it: the
        # parent's next turn records the fork once they are there (on a loaded machine, not at once)
        fork = eventually(lambda: _with_prompt(probed, fsid, "before the fork about figs"),
                          "the fork's transcript to hold the parent's prompt")
        ui.turn("after the fork about dates")
        assert any(r.get("sessionKind") == "bg" for r in fork.records)
        assert any(pid for pid in probed.processes()), "the fork's daemon is running"
        # the original session's hooks ran twice since; the fork's none but SessionStart
        assert {r["event"] for r in probed.probe_runs() if r["payload"].get("session_id") == fsid} == {"SessionStart"}
        assert fsid in {s["session_id"] for s in probed.sessions()}, "the running fork is not in the journal"


def _with_prompt(scratch, session_id, prompt):
    """The transcript of ``session_id`` once it holds ``prompt``, else None."""
    try:
        transcript = scratch.transcript(session_id)
    except AssertionError:   # not written yet
        return None
    return transcript if prompt in transcript.prompts() else None

