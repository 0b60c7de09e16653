"""Issue 12 defect 1: each turn's final answer stored by that turn's own Stop hook.

How "at its own Stop" is observed: ``Scratch.probe()`` wraps the installed
``record-conversation`` hook; the wrapper runs it with Claude Code's stdin and,
the moment it returns, takes a consistent copy of the journal (SQLite backup
API). The test reads that copy with ``chats show --json``: the journal exactly
as the Stop hook run of that turn left it, before anything later (the next
UserPromptSubmit, SessionEnd) could fill the gap. The wrapper adds ~20 ms
before the hook starts, which can only make the hook *more* likely to see the
final line; the measurement is not tilted towards failure.

Measured on 2.1.332 (tests/claude_code/stop_lag.py, docs/claude-code-2.1.332.md):
in print mode the final assistant line is on disk before Stop fires (0 ms lag
in every run); in interactive mode it is written up to ~120 ms after Stop
starts, in about half the turns. So print mode passes today and the
interactive turns are the reproduction.
"""

import pytest

PRINT_TURNS = 5
INTERACTIVE_TURNS = 15  # 20 scripted turns in all


def _prompt(mode, i):
    tail = f" @bash(echo {mode}-output-{i})" if i % 2 else ""
    return f"{mode} turn {i} token-{mode}{i}{tail}"


def _judge(scratch, stop_runs):
    """Per Stop run: (final answer in the transcript at hook start, in the journal right after the hook)."""
    out = []
    for run in stop_runs:
        final = run["payload"].get("last_assistant_message") or ""
        assert final.strip(), run["payload"]
        assert "snapshot" in run, run  # the wrapped hook ran and the journal was copied
        assert run["command"]["rc"] == 0, run["command"]
        shown = scratch.show_at(run["snapshot"], run["payload"]["session_id"])
        stored = bool(shown) and any(m["role"] == "assistant" and m["content"] == final for m in shown["messages"])
        out.append((run["transcript"]["has_last_assistant_message"], stored))
    return out


def _check_eventually_written(scratch, stop_runs):
    """The answer did reach the transcript (so a miss is the hook's timing, not a lost line)."""
    for run in stop_runs:
        t = scratch.transcript(run["payload"]["session_id"])
        assert run["payload"]["last_assistant_message"] in t.assistant_texts()


def _figure(figures, mode, judged):
    late = sum(1 for at_start, _ in judged if not at_start)
    missed = sum(1 for _, stored in judged if not stored)
    figures.append((f"Stop timing, {mode}",
                    f"{len(judged)} turns: final line not yet in the transcript when the hook started in {late}; "
                    f"final answer missing from the journal after its own Stop in {missed}"))


def test_print_mode_final_answer_stored_by_its_own_stop(probed, figures):
    sid = None
    for i in range(PRINT_TURNS):
        res = probed.print_turn(_prompt("print", i), *(["--resume", sid] if sid else []), stream=False)
        assert res.returncode == 0, res.stderr
        sid = sid or probed.probe_runs("Stop")[-1]["payload"]["session_id"]
    stops = probed.probe_runs("Stop")
    assert len(stops) == PRINT_TURNS
    _check_eventually_written(probed, stops)
    judged = _judge(probed, stops)
    _figure(figures, "print mode", judged)
    assert all(stored for _, stored in judged), judged


@pytest.mark.xfail(strict=True, reason="issue 12 defect 1: in interactive mode Stop often runs before the turn's "
                                       "final assistant line is written; the hook stores the answer only at a later event")
def test_interactive_final_answer_stored_by_its_own_stop(probed, figures):
    with probed.interactive() as ui:
        ui.wait_idle()
        for i in range(INTERACTIVE_TURNS):
            ui.turn(_prompt("interactive", i))
    stops = probed.probe_runs("Stop")
    assert len(stops) == INTERACTIVE_TURNS
    _check_eventually_written(probed, stops)
    judged = _judge(probed, stops)
    _figure(figures, "interactive", judged)
    missed = [i for i, (_, stored) in enumerate(judged) if not stored]
    assert not missed, f"final answer of turns {missed} not in the journal after their own Stop: {judged}"
