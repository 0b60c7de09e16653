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


def test_first_user_prompt_submit_fires_before_the_transcript_exists(probed):
    res = probed.print_turn("a brand new session")
    assert res.returncode == 0
    first = probed.probe_runs("UserPromptSubmit")[0]
    assert first["transcript"]["exists"] is False  # what Claude Code does: the file comes after the hook
    assert first["command"]["rc"] == 0


@pytest.mark.xfail(strict=True, reason="issue 12 defect 2: the first UserPromptSubmit of a new session logs "
                                       "'FileNotFoundError: transcript not found' to hook.log")
def test_first_prompt_of_a_new_session_logs_no_error(scratch):
    res = scratch.print_turn("a brand new session")
    assert res.returncode == 0
    assert scratch.hook_log().strip() == ""


def test_mcp_list_fires_session_end_for_a_transcript_never_written(probed):
    for args in (("mcp", "list"), ("mcp", "get", "conversation-memory")):
        proc = probed.claude(*args)
        assert proc.returncode == 0, proc.stderr
    ends = probed.probe_runs("SessionEnd")
    assert len(ends) == 2
    for run in ends:
        assert run["payload"]["reason"] == "other"
        assert run["transcript"]["exists"] is False
        assert run["command"]["rc"] == 0
    assert not list(probed.projects_dir().glob("*/*.jsonl"))


@pytest.mark.xfail(strict=True, reason="issue 12 defect 2: `claude mcp list` fires SessionEnd for a transcript "
                                       "never created, and the hook logs an error for it")
def test_mcp_list_logs_no_error(scratch):
    proc = scratch.claude("mcp", "list")
    assert proc.returncode == 0, proc.stderr
    assert "conversation-memory" in proc.stdout
    assert scratch.hook_log().strip() == ""
