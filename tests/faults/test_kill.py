"""kill -9 the hook and ``chats import`` at random points, race them, then re-run: each message exactly once.

The kill times are drawn from a seeded generator over the measured length of
an uninterrupted run, so kills land at process start, while reading, inside
the write transactions and after the commit. After every kill the journal must
be consistent (SQLite recovers the WAL), hold only messages of the transcript
and keep what it had; after the next complete run it holds every message
exactly once, with contiguous sequence numbers. CLAUDE_CHATS_LONG_TESTS=1 runs
many more kills (the figures in RELIABILITY.md come from such a run).
"""

import json
import os
import random
import signal
import time

import pytest

from claude_chats import paths
from tests.support import lines
from tests.support.fuzzing import LONG, check_journal, journal_rows
from tests.support.hooks import CHATS, HOOK, Transcripts, convo, finish, hook_payload, kill_after, start


def timed(argv, data=None):
    started = time.monotonic()
    code, _out, err = finish(start(argv, data))
    assert code == 0, err[-2000:]
    return time.monotonic() - started


class KillReport:
    """How the kills landed: before any write, between commits, after everything."""

    def __init__(self):
        self.runs = self.killed = self.before = self.partial = self.after = 0

    def add(self, alive, stored_before, stored_after_kill, expected):
        self.runs += 1
        self.killed += alive
        if stored_after_kill == stored_before:
            self.before += 1
        elif stored_after_kill == expected:
            self.after += 1
        else:
            self.partial += 1

    def __str__(self):
        return (f"{self.runs} runs, {self.killed} killed while running: {self.before} before any commit, "
                f"{self.partial} between commits, {self.after} after the last commit")


def _run_kills(kind, runs, seed_, transcripts, argv, complete, lines_per_run):
    """Grow the transcripts, start ``argv(transcripts)``, kill it at a random time, check, complete, check.

    The kill times are uniform over the measured length of a complete run (plus 10%): the shorter of
    two, since on a loaded machine one slow first run put every kill after the process had exited.
    Until a third of the runs killed a process still running, up to three times as many runs go on
    (the load moves the length), so the test kills mid-run whatever the machine is doing.
    """
    rng = random.Random(seed_)
    report = KillReport()
    durations = []
    for _ in range(2):
        transcripts.grow(lines_per_run)
        durations.append(timed(*argv(transcripts)))
    duration = min(durations)
    done = 0
    while done < runs or (report.killed < runs // 3 and done < 3 * runs):
        done += 1
        transcripts.grow(lines_per_run)
        journal = paths.journal_path()
        before = journal_rows(journal)
        alive = kill_after(start(*argv(transcripts)), rng.uniform(0, duration * 1.1))
        after_kill = check_journal(journal, before)
        assert set(after_kill) <= transcripts.uuids()
        report.add(alive, len(before), len(after_kill), len(transcripts.uuids()))
        complete(transcripts)
        rows = check_journal(journal, after_kill)
        assert set(rows) == transcripts.uuids() and len(rows) == len(transcripts.uuids())
    print(f"\nkill -9 {kind}: {report}")
    return report


def test_kill_9_the_hook_at_random_points_then_rerun(tmp_path):
    runs = 120 if LONG else 5
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=2)

    def complete(t):
        code, out, err = finish(start(HOOK, hook_payload(t, "sess-0")))
        assert code == 0 and out == b"", err

    report = _run_kills("hook", runs, 7001, transcripts, lambda t: (HOOK, hook_payload(t, "sess-0")), complete, 300)
    assert report.killed >= runs // 3


def test_kill_9_chats_import_at_random_points_then_rerun(tmp_path):
    runs = 60 if LONG else 3
    transcripts = Transcripts(tmp_path / "projects", sessions=4, agents=2)

    def complete(t):
        code, out, err = finish(start(CHATS + ["import", str(t.root), "--json"]))
        assert code == 0 and not json.loads(out)["errors"], err

    report = _run_kills("chats import", runs, 7002, transcripts,
                        lambda t: (CHATS + ["import", str(t.root), "--json"],), complete, 200)
    assert report.killed >= runs // 3


def test_hooks_and_imports_race_and_get_killed_then_each_message_is_stored_once(tmp_path):
    """Hooks of every session and imports of the whole folder run at once while the transcripts grow
    (torn writes included); a seeded third of them is killed at random; then one clean pass."""
    rng = random.Random(7003)
    rounds = 12 if LONG else 2
    transcripts = Transcripts(tmp_path / "projects", sessions=3, agents=1)
    killed = 0
    for _ in range(rounds):
        procs = []
        for step in range(4):
            torn = {}
            for key, path in transcripts.files.items():   # half a batch now, the rest after the hooks start
                data = lines.encode(*convo(key[0], transcripts.sizes[key], 40, key[1]))
                transcripts.sizes[key] += 40
                with open(path, "ab") as fh:
                    fh.write(data[:len(data) // 2])
                torn[path] = data[len(data) // 2:]
            for session in transcripts.sessions():
                procs.append(start(HOOK, hook_payload(transcripts, session)))
            if step % 2 == 0:
                procs.append(start(CHATS + ["import", str(transcripts.root), "--json"]))
            for path, rest in torn.items():
                with open(path, "ab") as fh:
                    fh.write(rest)
        victims = rng.sample(procs, len(procs) // 3)
        time.sleep(rng.uniform(0, 0.5))
        for proc in victims:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed += 1
        for proc in procs:
            code, out, err = finish(proc)
            assert code in (0, -signal.SIGKILL), err[-2000:]
            assert proc in victims or out in (b"",) or out.startswith(b"{"), out
        check_journal(paths.journal_path())
    for session in transcripts.sessions():
        assert finish(start(HOOK, hook_payload(transcripts, session)))[0] == 0
    rows = check_journal(paths.journal_path())
    assert set(rows) == transcripts.uuids() and len(rows) == len(transcripts.uuids())
    print(f"\nrace: {rounds} rounds, {killed} processes killed mid-run")


@pytest.mark.skipif(os.name != "posix", reason="kill -9 is POSIX")
def test_a_killed_hook_leaves_no_lock_behind(tmp_path):
    """A hook killed inside its write transaction must not block the next one (SQLite's locks die with it)."""
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=0)
    transcripts.grow(3000)
    proc = start(HOOK, hook_payload(transcripts, "sess-0"))
    kill_after(proc, 0.35)
    started = time.monotonic()
    assert finish(start(HOOK, hook_payload(transcripts, "sess-0")))[0] == 0
    assert time.monotonic() - started < 30     # not the 15 s busy timeout twice over
    assert set(check_journal(paths.journal_path())) == transcripts.uuids()
