"""Issue 12 defect 2: hook runs that Claude Code 2.1.332 makes before a transcript exists.

- The first UserPromptSubmit of a new session fires before Claude Code has
  created the transcript file (it is written with the first prompt line, just
  after the hook): the hook must treat the missing file as "nothing yet".
- ``claude mcp list`` / ``claude mcp get`` fire SessionEnd (reason "other") for a
  session whose transcript is never created.

Checked in claude-chats' own hook log (``$CLAUDE_CHATS_HOME/logs/hook.log``),
which must stay free of errors; the transcript's absence at hook time is
checked with the probe.
"""

import pytest


@pytest.fixture(scope="module")
def new_session(new_scratch):
    s = new_scratch(probe=True)
    res = s.print_turn("a brand new session")
    assert res.returncode == 0
    return s


@pytest.fixture(scope="module")
def mcp_listed(new_scratch):
    s = new_scratch(probe=True)
    for args in (("mcp", "list"), ("mcp", "get", "conversation-memory")):
        proc = s.claude(*args)
        assert proc.returncode == 0, proc.stderr
        assert "conversation-memory" in proc.stdout
    return s


def test_first_user_prompt_submit_fires_before_the_transcript_exists(new_session):
    probed = new_session
    first = probed.probe_runs("UserPromptSubmit")[0]
    assert first["transcript"]["exists"] is False  # what Claude Code does: the file comes after the hook
    assert first["command"]["rc"] == 0


def test_first_prompt_of_a_new_session_logs_no_error(new_session):
    assert new_session.hook_log().strip() == ""


def test_mcp_list_fires_session_end_for_a_transcript_never_written(mcp_listed):
    probed = mcp_listed
    ends = probed.probe_runs("SessionEnd")
    assert len(ends) == 2
    for run in ends:
        assert run["payload"]["reason"] == "other"
        assert run["transcript"]["exists"] is False
        assert run["command"]["rc"] == 0
    assert not list(probed.projects_dir().glob("*/*.jsonl"))


def test_mcp_list_logs_no_error(mcp_listed):
    assert mcp_listed.hook_log().strip() == ""
