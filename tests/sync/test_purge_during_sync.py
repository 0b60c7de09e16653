"""``chats purge`` while a ``chats sync`` has a batch in flight (issue 16, item 1).

The sync reads its batch, then waits on the embedding provider (a local server
speaking Ollama's ``/api/embed`` that holds the batch's request until the test
lets it go); meanwhile ``chats purge --session X --yes`` removes X from the
journal and Postgres. The sync must carry on (the vanished messages' vectors
skipped, not a foreign-key error), be recorded, push the rest of the batch, and
leave nothing of X in either store: not the batch it read before the purge.
"""

import json
import os
import subprocess
import sys
import threading
import time
import uuid as uuidlib
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from claude_chats.cli import main

CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]
PURGED, KEPT = "sess-purged-in-flight", "sess-kept-in-flight"
MARK = "quetzalpurgeword"      # only in the purged session's text


def line(kind, text, session, index):
    message = {"role": "user", "content": text} if kind == "user" else {
        "id": f"msg_{uuidlib.uuid4().hex[:12]}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]}
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/inflight",
            "sessionId": session, "version": "2.1.0", "gitBranch": "main", "type": kind, "message": message,
            "uuid": str(uuidlib.uuid4()), "timestamp": f"2026-01-01T00:00:{index:02d}.000Z"}


def write_session(folder, session, words, count):
    path = folder / f"{session}.jsonl"
    rows = [line("user" if i % 2 == 0 else "assistant", f"{words} turn {i} of {session}", session, i)
            for i in range(count)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class GatedOllama:
    """``/api/embed``: answers at once, except a request holding ``gate_word``, held until ``release``."""

    def __init__(self, gate_word):
        self.gate_word, self.held, self.release = gate_word, threading.Event(), threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if any(outer.gate_word in text for text in body["input"]):
                    outer.held.set()
                    outer.release.wait(60)
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


@pytest.fixture
def ollama(monkeypatch):
    pytest.importorskip("httpx")
    server = GatedOllama(MARK)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "all-minilm")
    yield server
    server.close()


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_purge_during_a_sync_batch_neither_kills_the_sync_nor_comes_back(ollama, pg_db_url, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    folder = tmp_path / "projects" / "inflight"
    folder.mkdir(parents=True)
    write_session(folder, PURGED, f"{MARK} secret plans", 6)
    write_session(folder, KEPT, "ordinary kept words", 6)
    chats("import", str(folder))

    sync = subprocess.Popen(CHATS + ["sync", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        assert ollama.held.wait(60), "the sync never asked to embed its batch"
        purged = json.loads(chats("purge", "--session", PURGED, "--yes", "--json"))
        assert purged["local"]["messages"] == 6, purged
    finally:
        ollama.release.set()
    out, err = sync.communicate(timeout=120)
    assert sync.returncode == 0, (out, err)
    assert b"Traceback" not in err, err.decode()
    report = json.loads(out[out.index(b"{"):])
    assert report["ok"] and report["errors"] == [], report
    assert report["pending_after"] == 0

    status = json.loads(chats("status", "--json", "--offline"))
    assert status["sync"]["last"] is not None and status["sync"]["last"].get("ok"), status["sync"]

    with psycopg.connect(pg_db_url) as conn:
        sessions = [r[0] for r in conn.execute("SELECT session_id FROM conversations")]
        marked = conn.execute("SELECT count(*) FROM messages WHERE content LIKE %s", (f"%{MARK}%",)).fetchone()[0]
        kept = conn.execute("SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id "
                            "WHERE c.session_id = %s", (KEPT,)).fetchone()[0]
        space, = conn.execute("SELECT id FROM spaces").fetchone()
        vectors = conn.execute(f"SELECT count(*) FROM vectors_{space}").fetchone()[0]
    assert sessions == [KEPT] and marked == 0
    assert kept == 6 and vectors == 6

    again = json.loads(chats("sync", "--json"))           # a later sync puts nothing back
    assert again["ok"] and again["pushed"] == 0
    found = json.loads(chats("search", "--json", "--mode", "fulltext", MARK))
    assert found["hits"] == [], found
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM conversations WHERE session_id = %s", (PURGED,)).fetchone()[0] == 0
