"""A ``chats sync`` interrupted mid-batch (Ctrl-C, SIGTERM) at the default batch size (issue 16, item 14).

The embedding server (Ollama's ``/api/embed``, local) answers the first
requests, then holds every later one: the sync is stopped while its first
500-message batch is being embedded. What was embedded before the interrupt
is kept in the journal (the next run does not embed it again) and the run is
recorded, so ``chats status`` shows it, not the run before it.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.support.stand_ins import EmbedServer, chats, provider_env, turns, write

CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]
MESSAGES = 300
ANSWERED = 6      # requests answered before the server goes silent (32 texts each)


def write_history(folder):
    texts = [f"interrupted sync message {i} about the harbour crane" for i in range(MESSAGES)]
    write(folder / "sess-interrupted.jsonl", turns(texts, "sess-interrupted", cwd="/work/crane"))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_sync_keeps_its_vectors_and_is_recorded(stop, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    server = EmbedServer(answers=ANSWERED)
    for key, value in provider_env("ollama", server.url).items():
        monkeypatch.setenv(key, value)
    folder = tmp_path / "projects" / "crane"
    folder.mkdir(parents=True)
    write_history(folder)
    chats("import", str(folder))
    try:
        # Ctrl-C as in a terminal: a suite started in the background (nohup, `&`) hands its children SIGINT
        # ignored, and Python then never raises KeyboardInterrupt (the sync ran into its 30 s timeout)
        sync = subprocess.Popen(CHATS + ["sync"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert server.held.wait(60), "the sync never reached the silent request"
        sync.send_signal(stop)
        out, err = sync.communicate(timeout=60)
    finally:
        server.close()
    assert sync.returncode != 0
    assert b"Traceback" not in err, err.decode()

    status = json.loads(chats("status", "--json", "--offline"))
    last = status["sync"]["last"]
    assert last is not None, "the interrupted run was not recorded"
    assert not last["ok"] and any("interrupted" in e for e in last["errors"]), last["errors"]
    kept = sum(s["vectors"] for s in status["spaces"]["local"])
    assert kept >= 64, f"{kept} vectors kept of {server.texts} embedded"     # at least one slice
    assert last["pending_after"] == MESSAGES      # nothing pushed (no Postgres): all still pending
