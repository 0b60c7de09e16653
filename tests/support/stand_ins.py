"""Stand-ins for what claude-chats talks to, for the tests of issue 16: Claude Code's transcript
lines, an embedding server that answers, holds or never answers, and ``chats`` through click.

``EmbedServer`` speaks Ollama's ``/api/embed`` and OpenAI's ``/v1/embeddings`` (16-dimension
vectors, a fixed function of the text). It answers at once, except: a request holding
``gate_word`` waits until ``release`` is set (``held`` is set when one arrives), and after
``answers`` requests every later one waits likewise. ``Silent`` accepts connections and never
sends a byte.
"""

import json
import socket
import threading
import uuid as uuidlib
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from click.testing import CliRunner

from claude_chats.cli import main

DIMENSIONS = 16


def line(kind, text, session, index, cwd="/work/proj", branch="main", **extra):
    """One transcript line: a user message, or an assistant message with one text block."""
    message = {"role": "user", "content": text} if kind == "user" else {
        "id": f"msg_{uuidlib.uuid4().hex[:12]}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]}
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.0", "gitBranch": branch, "type": kind, "message": message,
            "uuid": str(uuidlib.uuid4()),
            "timestamp": f"2026-01-{1 + index // 3600:02d}T00:{index // 60 % 60:02d}:{index % 60:02d}.000Z", **extra}


def turns(texts, session, **fields):
    """Alternating user and assistant lines of ``texts``."""
    return [line("user" if i % 2 == 0 else "assistant", text, session, i, **fields) for i, text in enumerate(texts)]


def write(path, rows):
    """``rows`` (dicts) as the JSON lines of the transcript at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def chats(*args):
    """``chats ARGS`` through click's runner; its output (the command must succeed)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def vectors(texts):
    return [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIMENSIONS).tolist() for t in texts]


class EmbedServer:
    """See the module docstring. ``texts``: how many texts it answered."""

    def __init__(self, gate_word=None, answers=None):
        self.gate_word, self.left = gate_word, answers
        self.held, self.release = threading.Event(), threading.Event()
        self.texts = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if outer._holds(body["input"]):
                    outer.held.set()
                    outer.release.wait(60)
                    if outer.left is not None:
                        return             # never answered
                outer.texts += len(body["input"])
                self._send(outer.answer(self.path, body))

            def _send(self, answer):
                payload = json.dumps(answer).encode()
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

    def _holds(self, texts):
        if self.gate_word is not None and any(self.gate_word in t for t in texts):
            return True
        if self.left is None:
            return False
        self.left -= 1
        return self.left < 0

    @staticmethod
    def answer(path, body):
        found = vectors(body["input"])
        if path == "/api/embed":
            return {"model": body["model"], "embeddings": found}
        return {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 1},
                "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(found)]}

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class Silent:
    """A socket that accepts every connection and never sends a byte; ``accepted`` counts them."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted, self._held = 0, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self._held.append(conn)

    def close(self):
        self.sock.close()
        for conn in self._held:
            conn.close()


def provider_env(name, url):
    """The settings pointing ``name`` (ollama, openai) at the server at ``url``."""
    if name == "ollama":
        return {"CLAUDE_CHATS_PROVIDER": "ollama", "OLLAMA_BASE_URL": url, "CLAUDE_CHATS_MODEL": "all-minilm"}
    return {"CLAUDE_CHATS_PROVIDER": "openai", "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test",
            "CLAUDE_CHATS_DIMENSIONS": str(DIMENSIONS)}
