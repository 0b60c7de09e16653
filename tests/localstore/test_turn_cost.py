"""What a hook turn costs must not grow with the session it adds to: a heavy user's sessions reach
20,000 messages, and a statement that walks the session's messages each turn adds milliseconds to every
Stop (the final answers waiting for their line were looked up that way: 1.5 ms a turn at 20,000).

Counted in SQLite virtual-machine steps (a progress handler), not timed: the same turn on a session of
100 and of 4,000 messages takes about the same number of steps (the B-trees are a level deeper, no more).
The hook's own ``run`` is called in process here, with the payloads Claude Code sends; its process
is tested as a process in tests/test_hook.py."""

import json

import pytest

from claude_chats import hook
from claude_chats.localstore import db
from tests.support import lines


def turn_steps(tmp_path, earlier, late):
    """VM steps of the Stop turn (a prompt and its answer) after ``earlier`` messages of the same session;
    ``late``: the answer's line is written after the Stop (its payload's text is stored first, then claimed)."""
    path = tmp_path / f"sess-{earlier}-{late}.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(earlier)))
    conn = db.connect(str(tmp_path / f"journal-{earlier}-{late}.db"))
    answer = "postgres was not listening: it starts now"

    def stop(said=answer):
        payload = {"session_id": "sess-1", "transcript_path": str(path), "cwd": "/work/proj", "hook_event_name": "Stop"}
        hook.run(dict(payload, last_assistant_message=said) if said else payload, conn)

    try:
        stop(None)
        prompt, reply = lines.user("why does the build fail on port 5433"), lines.assistant(answer)
        steps = [0]

        def count():
            steps[0] += 1
            return False

        conn.set_progress_handler(count, 1)
        with open(path, "ab") as fh:
            fh.write(lines.encode(prompt) if late else lines.encode(prompt, reply))
        stop()
        if late:
            with open(path, "ab") as fh:
                fh.write(lines.encode(reply))
            stop()
        conn.set_progress_handler(None)
        stored = conn.execute("SELECT content FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 'sess-1') ORDER BY seq DESC "
                              "LIMIT 2").fetchall()
        assert [r[0] for r in stored] == [answer, "why does the build fail on port 5433"]
        assert conn.execute("SELECT count(*) FROM final_answers").fetchall() == [(0,)]   # claimed by its line
        assert json.loads(db.get_state(conn, "last_hook"))["event"] == "Stop"
        return steps[0]
    finally:
        conn.close()


@pytest.mark.parametrize("late", [False, True], ids=["answer-in-time", "answer-line-late"])
def test_a_turn_costs_the_same_steps_on_a_long_session(tmp_path, late):
    short, long = turn_steps(tmp_path, 100, late), turn_steps(tmp_path, 4000, late)
    assert long < 1.2 * short + 200, (short, long)
