"""The ``ollama`` provider's own connections to a daemon on this machine (``ollama._Local``).

Real HTTP/1.1 servers on 127.0.0.1 that keep connections alive as Ollama's does, and daemons that
misbehave: one that closes a kept connection while it is idle, one that drops every request, one
that never answers, one that answers in chunks or with something that is not JSON. Nothing in the
provider is patched.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from claude_chats.errors import ProviderError, ProviderUnavailable
from claude_chats.models import ollama
from claude_chats.models.ollama import OllamaProvider
from tests.support.fakes import fake_vector, unit

MODEL = "all-minilm"   # no query prefix: what is sent is what was asked


class Daemon:
    """An Ollama on 127.0.0.1 speaking HTTP/1.1 with kept-alive connections. ``behaviour``: "answer",
    "close-after" (answers, then closes the connection without saying so), "drop" (reads the request,
    closes without answering), "silent" (reads it, never answers), "chunked", "not-json", "endless" (an
    answer that never ends). Counts the connections it accepted and the requests it read."""

    def __init__(self, behaviour="answer", prefix=""):
        self.behaviour, self.prefix = behaviour, prefix
        self.connections, self.requests, self.auth = 0, [], []
        self.lock, self.stopped = threading.Lock(), threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with outer.lock:
                    outer.connections += 1

            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append((self.path, body))
                    outer.auth.append(self.headers.get("Authorization"))
                if outer.behaviour == "drop":
                    self.close_connection = True
                    return
                if outer.behaviour == "silent":
                    time.sleep(5)
                    self.close_connection = True
                    return
                if self.path != outer.prefix + "/api/embed":
                    return self._send(404, b"404 page not found")
                if outer.behaviour == "not-json":
                    return self._send(200, b"<html>a captive portal</html>")
                if outer.behaviour == "endless":   # chunks of digits until the client hangs up
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    piece = b"[" + b"1," * 32_000
                    try:
                        while not outer.stopped.is_set():
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                vectors = [unit(fake_vector(t, 64)).tolist() for t in body["input"]]
                payload = json.dumps({"model": body["model"], "embeddings": vectors}).encode()
                if outer.behaviour == "chunked":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for at in range(0, len(payload), 700):
                        piece = payload[at:at + 700]
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                    return
                self._send(200, payload)
                if outer.behaviour == "close-after":
                    self.close_connection = True   # no "Connection: close": the client believes it kept

            def _send(self, status, payload):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{prefix}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def provider(url, **kwargs):
    return OllamaProvider(model=MODEL, base_url=url, **kwargs)


def expected(text):
    return unit(fake_vector(text, 64))


@pytest.mark.parametrize("url, local", [
    ("http://localhost:11434", True), ("http://LOCALHOST:11434", True), ("http://127.0.0.1:11434", True),
    ("http://127.8.9.10:11434", True), ("http://[::1]:11434", True), ("http://127.0.0.1:11434/ollama", True),
    ("https://localhost:11434", False), ("http://10.0.0.5:11434", False), ("http://gpu-box:11434", False),
    ("http://user:secret@localhost:11434", False), ("http://localhost.example.com:11434", False),
])
def test_only_plain_http_to_this_machine_goes_through_the_standard_library(url, local):
    assert ollama._Local.serves(url) is local


def test_requests_share_one_kept_connection():
    with Daemon() as daemon:
        p = provider(daemon.url)
        for n in range(20):
            np.testing.assert_allclose(p.embed_query(f"question {n}"), expected(f"question {n}"), atol=1e-6)
        p.close()
    assert len(daemon.requests) == 20 and daemon.connections == 1


def test_a_connection_the_daemon_closed_while_idle_is_replaced_and_nothing_is_sent_twice():
    with Daemon("close-after") as daemon:
        p = provider(daemon.url, retries=0)
        for n in range(5):
            time.sleep(0.05)   # the daemon's close reaches this side first
            np.testing.assert_allclose(p.embed_documents([f"doc {n}"])[0], expected(f"doc {n}"), atol=1e-6)
    assert [body["input"] for _path, body in daemon.requests] == [[f"doc {n}"] for n in range(5)]
    assert daemon.connections == 5


def test_a_daemon_that_drops_every_request_is_an_error_after_the_retries_not_a_hang():
    with Daemon("drop") as daemon:
        p = provider(daemon.url, retries=2, backoff=0.001)
        with pytest.raises(ProviderError, match="Ollama at http://127.0.0.1"):
            p.embed_query("anything")
    assert len(daemon.requests) == 3   # the first try and two retries, each once


def test_a_daemon_that_never_answers_runs_out_of_the_timeout():
    with Daemon("silent") as daemon:
        p = provider(daemon.url, timeout=0.3, retries=3, backoff=0.001)
        started = time.monotonic()
        with pytest.raises(ProviderUnavailable, match="did not answer within 0.3 s"):
            p.embed_query("anything")
        assert time.monotonic() - started < 2.0
    assert len(daemon.requests) == 1   # a timeout is not retried


def test_nothing_listening_is_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]   # bound, not listening: refused
        with pytest.raises(ProviderUnavailable, match="not reachable"):
            provider(f"http://127.0.0.1:{port}", retries=0).embed_query("anything")


def test_a_chunked_answer_reads_whole():
    with Daemon("chunked") as daemon:
        p = provider(daemon.url)
        texts = [f"passage {n} " * 20 for n in range(6)]
        got = p.embed_documents(texts)
        again = p.embed_documents(texts[:1])
    np.testing.assert_allclose(got, np.stack([expected(t) for t in texts]), atol=1e-6)
    np.testing.assert_allclose(again[0], expected(texts[0]), atol=1e-6)
    assert daemon.connections == 1


def test_an_answer_that_is_not_json_is_a_clear_error():
    with Daemon("not-json") as daemon:
        with pytest.raises(ProviderError, match="not JSON.*captive portal"):
            provider(daemon.url, retries=0).embed_query("anything")


def test_a_path_in_the_url_prefixes_every_request():
    with Daemon(prefix="/ollama") as daemon:
        provider(daemon.url).embed_query("behind a reverse proxy")
    assert daemon.requests[0][0] == "/ollama/api/embed"


def test_threads_asking_at_once_each_get_their_own_answer():
    """A search's query and a sync's batches may be in flight together: no answer goes to the wrong asker."""
    with Daemon() as daemon:
        p = provider(daemon.url)
        wrong, errors = [], []

        def ask(worker):
            try:
                for n in range(25):
                    text = f"worker {worker} question {n}"
                    if not np.allclose(p.embed_query(text), expected(text), atol=1e-6):
                        wrong.append(text)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors and not wrong
    assert len(daemon.requests) == 200 and daemon.connections <= 8


def test_credentials_in_the_url_go_through_httpx_and_are_sent():
    pytest.importorskip("httpx")
    with Daemon() as daemon:
        url = daemon.url.replace("http://", "http://someone:secret@", 1)
        p = provider(url)
        assert p._local is None
        np.testing.assert_allclose(p.embed_query("q"), expected("q"), atol=1e-6)
    assert daemon.auth[0] and daemon.auth[0].startswith("Basic ")


def test_a_daemon_gone_between_two_requests_is_unreachable_at_once():
    """The first answer closed its connection ("Connection: close", as an HTTP/1.0 daemon does); the daemon
    then stops: the next request says it is not reachable (``ProviderUnavailable``, which the search's guard
    backs off from), not a dropped request to retry."""
    daemon = Daemon().__enter__()
    daemon.httpd.RequestHandlerClass.protocol_version = "HTTP/1.0"
    p = provider(daemon.url, retries=0)
    np.testing.assert_allclose(p.embed_query("before"), expected("before"), atol=1e-6)
    daemon.__exit__(None, None, None)
    with pytest.raises(ProviderUnavailable, match="not reachable"):
        p.embed_query("after")


def test_an_answer_that_never_ends_is_cut_at_the_bound(monkeypatch):
    """A daemon streaming for ever: read up to ``ANSWER_MAX`` and refused, never held whole in memory (read
    whole, the request would never end)."""
    monkeypatch.setattr(ollama, "ANSWER_MAX", 1 << 20)
    failed = []

    def ask(url):
        try:
            provider(url, retries=0).embed_query("anything")
        except ProviderError as exc:
            failed.append(str(exc))

    with Daemon("endless") as daemon:
        asking = threading.Thread(target=ask, args=(daemon.url,), daemon=True)
        asking.start()
        asking.join(20)
        assert not asking.is_alive(), "still reading an answer that never ends"
    assert failed and "answered more than 1 MB" in failed[0]
