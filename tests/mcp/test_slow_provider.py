"""MCP search with an embedding server that accepts and never answers (issue 16, item 7).

The journal holds vectors of the configured space (embedded once through a
server that answered); then the provider's URL points at a socket that
accepts connections and never sends a byte, with the default ``embed_timeout``
(30 s). Every ``search_memory`` call must answer within 3 s, from the first
one on, with full-text hits and a note; the searcher backs off from the
provider that just failed instead of waiting on it again at each call.
"""

import asyncio
import json
import socket
import threading
import time
import uuid as uuidlib
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner
from fastmcp import Client
from fastmcp.exceptions import ToolError

from claude_chats.cli import main
from claude_chats.mcp.server import create_server

BOUND = 3.0      # seconds, each call
CALLS = 4


class Answering:
    """Ollama's ``/api/embed`` and OpenAI's ``/v1/embeddings``, answering at once (16 dimensions)."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                vectors = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(16).tolist()
                           for t in body["input"]]
                if self.path == "/api/embed":
                    answer = {"model": body["model"], "embeddings": vectors}
                else:
                    answer = {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 1},
                              "data": [{"object": "embedding", "index": i, "embedding": v}
                                       for i, v in enumerate(vectors)]}
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

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Silent:
    """A socket that accepts every connection and never sends a byte."""

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


def env_for(name, url):
    if name == "ollama":
        return {"CLAUDE_CHATS_PROVIDER": "ollama", "OLLAMA_BASE_URL": url, "CLAUDE_CHATS_MODEL": "all-minilm"}
    return {"CLAUDE_CHATS_PROVIDER": "openai", "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test",
            "CLAUDE_CHATS_DIMENSIONS": "16"}


def history(folder):
    rows = []
    for i in range(8):
        kind = "user" if i % 2 == 0 else "assistant"
        text = f"the osprey cache eviction bug, step {i}"
        message = {"role": "user", "content": text} if kind == "user" else {
            "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": text}]}
        rows.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/work/osprey",
                     "sessionId": "sess-osprey", "version": "2.1.0", "gitBranch": "main", "type": kind,
                     "message": message, "uuid": str(uuidlib.uuid4()), "timestamp": f"2026-01-01T00:00:0{i}.000Z"})
    folder.mkdir(parents=True)
    (folder / "sess-osprey.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


async def _calls():
    times, answers = [], []
    async with Client(create_server()) as client:
        for i in range(CALLS):
            started = time.monotonic()
            result = await asyncio.wait_for(client.call_tool(
                "search_memory", {"query": f"osprey cache eviction step {i}", "mode": "hybrid"}), 20)
            times.append(time.monotonic() - started)
            answers.append(result.structured_content)
        started = time.monotonic()
        with pytest.raises(ToolError) as semantic:
            await asyncio.wait_for(client.call_tool("search_memory", {"query": "osprey", "mode": "semantic"}), 20)
        times.append(time.monotonic() - started)
    return times, answers, str(semantic.value)


@pytest.mark.parametrize("name", ["ollama", "openai"])
def test_mcp_search_with_a_silent_embedding_server_answers_within_3_s_every_call(name, tmp_path, monkeypatch):
    pytest.importorskip({"ollama": "httpx", "openai": "openai"}[name])
    history(tmp_path / "projects" / "osprey")
    chats("import", str(tmp_path / "projects"))
    answering = Answering()
    try:
        for key, value in env_for(name, answering.url).items():
            monkeypatch.setenv(key, value)
        assert json.loads(chats("sync", "--json"))["embedded"] == 8        # vectors of the configured space
    finally:
        answering.close()
    silent = Silent()
    try:
        for key, value in env_for(name, silent.url).items():
            monkeypatch.setenv(key, value)
        times, answers, semantic = asyncio.run(_calls())
    finally:
        silent.close()
    print(f"[silent provider] {name}: MCP calls took " + ", ".join(f"{t:.2f} s" for t in times)
          + f"; {silent.accepted} connection(s) to the silent server")
    assert max(times) < BOUND, times
    for answer in answers:
        assert answer["hits"] and answer["modes_run"] == ["fulltext"], answer
        assert any("embedding model" in note for note in answer["notes"]), answer["notes"]
    assert "embedding model" in semantic
    assert silent.accepted <= 2, f"{silent.accepted} connections: the searcher did not back off"
