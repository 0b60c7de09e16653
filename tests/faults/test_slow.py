"""Slow and silent embedding providers, at the wire: ollama, openai and bedrock against a local server.

The server speaks each API (Ollama ``/api/embed``, OpenAI ``/v1/embeddings``,
the Bedrock runtime's ``/model/<id>/invoke``, reached through botocore's own
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``) and either answers at once, answers
after the client's timeout ("slow"), or accepts the request and never answers
("silent"). With ``embed_timeout`` at 1 s: ``chats sync`` ends in bounded
time, says why in one line and leaves the messages pending; the next sync,
the server fast again, embeds and pushes them once; a hybrid search through
the CLI and the MCP server falls back to full text with a note.
"""

import asyncio
import json
import os
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner
from fastmcp import Client

from claude_chats.cli import main
from claude_chats.mcp.server import create_server
from tests.support import lines

TIMEOUT = 1          # embed_timeout of these tests, seconds
LATE = 2.5           # a slow server answers this long after the request
BOUND = 10.0         # a sync or a search must end within this (seconds)


def vector(text, dims):
    return np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dims).tolist()


def ollama(body):
    return {"model": body["model"], "embeddings": [vector(t, 16) for t in body["input"]]}, body["input"]


def openai(body):
    data = [{"object": "embedding", "index": i, "embedding": vector(t, body.get("dimensions", 1536))}
            for i, t in enumerate(body["input"])]
    return {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1}}, body["input"]


def bedrock(body):
    return {"embedding": vector(body["inputText"], body["dimensions"]), "inputTextTokenCount": 3}, [body["inputText"]]


class EmbeddingServer:
    """One HTTP server for the three APIs; ``mode`` is "fast", "slow" or "silent"."""

    def __init__(self):
        self.mode, self.answered, self.requests = "fast", [], 0
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"null")
                outer.requests += 1
                mode = outer.mode
                if mode == "silent":
                    outer.release.wait(60)   # the request was read; no answer ever comes
                    return
                if mode == "slow":
                    time.sleep(LATE)
                answer, texts = outer.route(self.path)(body)
                payload = json.dumps(answer).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    return  # the client gave up
                if mode == "fast":
                    outer.answered.extend(texts)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @staticmethod
    def route(path):
        if path == "/api/embed":
            return ollama
        if path.endswith("/embeddings"):
            return openai
        if path.startswith("/model/") and path.endswith("/invoke"):
            return bedrock
        raise AssertionError(f"unexpected request {path}")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def provider_env(name, url):
    if name == "ollama":
        return {"CLAUDE_CHATS_PROVIDER": "ollama", "OLLAMA_BASE_URL": url, "CLAUDE_CHATS_MODEL": "all-minilm"}
    if name == "openai":
        return {"CLAUDE_CHATS_PROVIDER": "openai", "OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test",
                "CLAUDE_CHATS_DIMENSIONS": "16"}
    return {"CLAUDE_CHATS_PROVIDER": "bedrock", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url, "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": "test-secret-not-real",
            "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true", "CLAUDE_CHATS_DIMENSIONS": "256"}


@pytest.fixture(params=["ollama", "openai", "bedrock"])
def provider(request, monkeypatch):
    pytest.importorskip({"ollama": "httpx", "openai": "openai", "bedrock": "boto3"}[request.param])
    with EmbeddingServer() as server:
        for key, value in provider_env(request.param, server.url).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("CLAUDE_CHATS_EMBED_TIMEOUT", str(TIMEOUT))
        yield request.param, server


def chats(*args):
    started = time.monotonic()
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result, time.monotonic() - started


def import_history(tmp_path, count=6):
    path = tmp_path / "proj" / "s-slow.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lines.encode(*lines.conversation(count, session="s-slow", prefix="docker port clash")))
    result, _ = chats("import", str(path.parent))
    assert result.exit_code == 0, result.output
    return count


def sync_json():
    result, seconds = chats("sync", "--json")
    start = result.output.index("{")
    return json.loads(result.output[start:]), result, seconds


@pytest.mark.parametrize("mode", ["slow", "silent"])
def test_sync_with_a_provider_past_its_timeout_ends_reports_and_recovers(provider, mode, tmp_path, pg_db_url,
                                                                         monkeypatch):
    name, server = provider
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    count = import_history(tmp_path)
    server.mode = mode
    result, seconds = chats("sync")
    print(f"[slow provider] {name} {mode}: the sync ended in {seconds:.2f} s (timeout {TIMEOUT} s)")
    assert seconds < BOUND, (name, mode, seconds)
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"did not answer within {TIMEOUT} s" in errors[0], result.output
    assert "embedding failed, messages stay pending" in errors[0]
    assert f"{count} still pending" in result.output
    assert server.requests >= 1 and server.answered == []

    server.mode = "fast"
    report, result, seconds = sync_json()
    assert report["ok"] and report["errors"] == [], result.output
    assert (report["embedded"], report["pushed"], report["pending_after"]) == (count, count, 0)
    assert len([t for t in server.answered if "docker port clash" in t]) == count   # each message once
    answered = len(server.answered)
    report, _, _ = sync_json()                           # nothing left: nothing embedded or pushed again
    assert (report["embedded"], report["pushed"]) == (0, 0)
    assert not [t for t in server.answered[answered:] if "docker port clash" in t]
    import psycopg
    with psycopg.connect(pg_db_url) as conn:
        messages, = conn.execute("SELECT count(*) FROM messages").fetchone()
        without = conn.execute("SELECT count(*) FROM messages m WHERE NOT EXISTS "
                               "(SELECT 1 FROM chunks c WHERE c.message_id = m.id)").fetchone()[0] \
            if _has_chunks_table(conn) else 0
    assert messages == count and without == 0


def _has_chunks_table(conn):
    return conn.execute("SELECT to_regclass('chunks') IS NOT NULL").fetchone()[0]


def test_hybrid_search_with_a_slow_provider_falls_back_to_full_text(provider, tmp_path):
    name, server = provider
    import_history(tmp_path)
    report, result, _ = sync_json()                      # vectors in the journal: hybrid will embed the query
    assert report["embedded"] == 6, result.output
    server.mode = "slow"

    result, seconds = chats("search", "--json", "docker port clash number 3")
    assert seconds < BOUND and result.exit_code == 0, result.output
    answer = json.loads(result.output[result.output.index("{"):])
    assert answer["hits"] and answer["hits"][0]["text"].endswith("number 3")
    assert any(f"did not answer within {TIMEOUT} s" in note and "full text" in note for note in answer["notes"])

    server.mode = "silent"
    started = time.monotonic()
    answer = asyncio.run(_mcp_search("docker port clash number 4"))
    assert time.monotonic() - started < BOUND
    assert answer["hits"] and answer["hits"][0]["text"].endswith("number 4")
    # the search waited for the provider and timed out, or (on a loaded machine the server's warm-up asked the
    # silent provider first) found it already waited on and did not wait again: full text, said either way
    timed_out = f"did not answer within {TIMEOUT} s"
    waited_on = "has not answered for its embedding space"
    assert any((timed_out in note or waited_on in note) and "full text" in note for note in answer["notes"]), \
        answer["notes"]


async def _mcp_search(query):
    async with Client(create_server()) as client:
        result = await client.call_tool("search_memory", {"query": query, "mode": "hybrid"})
        return result.structured_content
