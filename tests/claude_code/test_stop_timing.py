"""Issue 12 defect 1: each turn's final answer stored by that turn's own Stop hook.

How "at its own Stop" is observed: ``Scratch.probe()`` wraps the installed
``record-conversation`` hook; the wrapper looks at the transcript the moment it
starts, runs the hook with Claude Code's stdin and, the moment it returns, takes
a consistent copy of the journal (SQLite backup API). The test reads that copy
with ``chats show --json``: the journal exactly as the Stop hook run of that turn
left it, before anything later (the next UserPromptSubmit, SessionEnd) could
fill the gap.

Measured on 2.1.332 (``stop_lag.py``, docs/claude-code-2.1.332.md): in print mode
the final assistant line is on disk before Stop fires (0 ms lag in every run); in
interactive mode Claude Code fires Stop before the line has landed in about half
the turns, and it lands up to ~120 ms later, even with Claude Code stopped
(SIGSTOP): the write is already on its way. Whether the hook then misses it
depends on how fast this machine starts a Python process: on a quiet machine
about half of those turns, on a busy one hardly any. So the live figure is
printed, and the strict reproduction replays each such Stop run (``--replay``):
the same command, the same payload, the transcript and journal as they were when
Claude Code fired Stop, with the late bytes landing a fixed 1 s after the replayed
run starts. A fix that takes the answer from ``last_assistant_message`` or waits
(up to a second or more) for the line passes it.
"""

import json
import pathlib

import pytest

from .harness import Transcript

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


def _texts_on_disk(path, size):
    """Prompts and answers in the first ``size`` bytes of a transcript (complete lines only)."""
    if not size:
        return []
    with open(path, "rb") as fh:
        lines = fh.read(size).split(b"\n")[:-1]
    t = Transcript(pathlib.Path(path), [json.loads(x) for x in lines if x.strip()])
    return t.prompts() + t.assistant_texts()


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


def test_interactive_final_answer_stored_by_its_own_stop(probed, figures):
    with probed.interactive() as ui:
        ui.wait_idle()
        for i in range(INTERACTIVE_TURNS):
            ui.turn(_prompt("interactive", i))
    stops = probed.probe_runs("Stop")
    assert len(stops) == INTERACTIVE_TURNS
    _check_eventually_written(probed, stops)
    judged = _judge(probed, stops)
    raced = [run for run in stops if not run["transcript"]["has_last_assistant_message"]]
    replayed = []
    for run in raced:
        replay = run["replay"]
        assert replay["rc"] == 0, replay
        shown = probed.show_at(replay["journal"], run["payload"]["session_id"])
        on_disk = _texts_on_disk(replay["transcript"], replay["offset"])
        stored_texts = [m["content"] for m in shown["messages"]] if shown else []
        # (a transcript Claude Code had not created yet at Stop leaves nothing on disk to check; nor does one
        # holding only its opening records: 2.1.332 interactive wrote `mode`, `permission-mode` and
        # `atis-latch` lines, 281 bytes, before the prompt's, and fired a Stop then, seen once in CI)
        if (run["transcript"]["exists"] and not replay["offset"]) or not set(on_disk) <= set(stored_texts):
            # the replay itself did not work: a harness failure, not the defect (RuntimeError is not xfailed)
            raise RuntimeError(f"the replayed hook run did not store what was on disk: {replay}")
        final = run["payload"]["last_assistant_message"]
        replayed.append(bool(shown) and any(m["content"] == final for m in shown["messages"]))
    _figure(figures, "interactive", judged)
    figures.append(("Stop timing, interactive, replayed", f"{len(raced)} turns whose Stop came before the final "
                    f"line: the replayed hook stored the answer in {sum(replayed)}"))
    if not raced:
        pytest.skip("in this run Claude Code wrote every final line before firing Stop: nothing to replay")
    assert all(replayed), f"final answer not stored by its own Stop in {replayed.count(False)} of {len(raced)} " \
                          "turns whose Stop came before the line"
