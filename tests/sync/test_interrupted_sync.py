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
import threading
import uuid as uuidlib
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

from claude_chats.cli import main

CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]
MESSAGES = 300
ANSWERED = 6      # requests answered before the server goes silent (32 texts each)


class OllamaThenSilent:
    def __init__(self, answered):
        self.left, self.held, self.release = answered, threading.Event(), threading.Event()
        self.texts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if outer.left <= 0:
                    outer.held.set()
                    outer.release.wait(60)
                    return
                outer.left -= 1
                outer.texts += len(body["input"])
                vectors = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(16).tolist()
                           for t in body["input"]]
                payload = json.dumps({"model": body["model"], "embeddings": vectors}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def write_history(folder):
    rows = []
    for i in range(MESSAGES):
        kind = "user" if i % 2 == 0 else "assistant"
        text = f"interrupted sync message {i} about the harbour crane"
        message = {"role": "user", "content": text} if kind == "user" else {
            "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}]}
        rows.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/crane",
                     "sessionId": "sess-interrupted", "version": "2.1.0", "gitBranch": "main", "type": kind,
                     "message": message, "uuid": str(uuidlib.uuid4()), "timestamp": "2026-01-01T00:00:00.000Z"})
    (folder / "sess-interrupted.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_sync_keeps_its_vectors_and_is_recorded(stop, tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    server = OllamaThenSilent(ANSWERED)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "all-minilm")
    folder = tmp_path / "projects" / "crane"
    folder.mkdir(parents=True)
    write_history(folder)
    chats("import", str(folder))
    try:
        sync = subprocess.Popen(CHATS + ["sync"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
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
    assert not last["ok"] and any("interrupted" in e for e in last["errors"]), last
    kept = sum(s["vectors"] for s in status["spaces"]["local"])
    assert kept >= 64, f"{kept} vectors kept of {server.texts} embedded"     # at least one slice
    assert last["pending_after"] == MESSAGES      # nothing pushed (no Postgres): all still pending
