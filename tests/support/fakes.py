"""Stand-ins for what is not the subject of a test, each speaking the real interface.

``HashEmbedder`` and ``OtherEmbedder``: deterministic embedders on the real provider
base class. ``Proxy``: a TCP proxy in front of the test Postgres that can be taken
down and brought back. ``_Fixed``: a remote that is always one search backend.
``Server``: a local HTTP server whose routes speak the OpenAI (``openai_embeddings``)
and Ollama (``ollama_embed``, ``ollama_legacy``) wire formats and record the requests.
"""

import base64
import json
import os
import socket
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from claude_chats.errors import ProviderError
from claude_chats.models import EmbeddingProvider

# -- embedders ---------------------------------------------------------------------------


class HashEmbedder(EmbeddingProvider):
    """A deterministic bag-of-words embedder for tests where the model is not the subject.

    Built on the real provider base class (batching, normalisation, space);
    ``fail=True`` makes it raise ProviderError like a provider that is down.
    """

    name, model_id, dimensions, max_input_chars, batch_size = "test-hash", "hash-32", 32, 400, 64

    def __init__(self, fail=False):
        self.fail, self.calls = fail, 0

    @staticmethod
    def settings_kwargs(settings):
        return {}

    def embed_batch(self, texts, kind):
        if self.fail:
            raise ProviderError("test-hash: provider is down (test)")
        self.calls += 1
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, zlib.crc32(word.encode()) % self.dimensions] += 1.0
            out[row, 0] += 0.5  # never a zero vector
        return out


class OtherEmbedder(HashEmbedder):
    """Same dimensions, another model: its canary differs."""

    model_id = "hash-32-other"

    def embed_batch(self, texts, kind):
        return super().embed_batch([t[::-1] for t in texts], kind)


# -- Postgres -------------------------------------------------------------------------------


class Proxy:
    """A TCP proxy in front of the test Postgres: ``stop()`` makes it unreachable (connections
    dropped, new ones refused), ``start()`` brings it back on the same port."""

    def __init__(self, url):
        params = conninfo_to_dict(url)
        host, port = params.get("host") or "localhost", int(params.get("port") or 5432)
        self.upstream = (socket.AF_UNIX, os.path.join(host, f".s.PGSQL.{port}")) if host.startswith("/") \
            else (socket.AF_INET, (host, port))
        self.port = None
        self.url = make_conninfo(**{**params, "host": "127.0.0.1", "port": "0"})
        self._sockets, self._listener = [], None

    def start(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port or 0))
        listener.listen()
        self.port = listener.getsockname()[1]
        self.url = make_conninfo(**{**conninfo_to_dict(self.url), "port": str(self.port)})
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.socket(self.upstream[0])
            server.connect(self.upstream[1])
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the other thread
        except OSError:
            pass
        self._listener.close()
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self._sockets = []


class _Fixed:
    """A remote that is always this backend (the link is tested separately)."""

    def __init__(self, backend):
        self._backend = backend

    def backend(self):
        return self._backend


# -- embedding APIs over HTTP ---------------------------------------------------------------


def fake_vector(text, dims):
    """A deterministic, not normalised, vector for ``text``."""
    return np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dims).astype(np.float32) * 3


def unit(vector):
    return vector / np.linalg.norm(vector)


class Server:
    """A threaded HTTP server whose routes are ``{(method, path): handler(server, body) -> (status, obj, headers)}``."""

    def __init__(self, routes):
        self.routes, self.requests, self.failures = routes, [], {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw) if raw else None
                outer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                route = outer.routes.get(self.path)
                status, obj, headers = route(outer, body) if route else (404, "404 page not found", {})
                payload = obj.encode() if isinstance(obj, str) else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(obj, str) else "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def fail_next(self, path, status, obj, headers=None, times=1):
        self.failures[path] = [(status, obj, headers or {})] * times

    def failure(self, path):
        pending = self.failures.get(path)
        return pending.pop() if pending else None

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def openai_embeddings(server, body):
    """``POST /v1/embeddings`` as OpenAI answers it."""
    if failed := server.failure("/v1/embeddings"):
        return failed
    dims = body.get("dimensions", 1536)
    data = []
    for i, text in enumerate(body["input"]):
        vector = unit(fake_vector(text, dims))  # the API returns normalised vectors
        encoded = (base64.b64encode(vector.astype("<f4").tobytes()).decode()
                   if body.get("encoding_format") == "base64" else vector.tolist())
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    data.reverse()  # clients must order by index
    return 200, {"object": "list", "data": data, "model": body["model"],
                 "usage": {"prompt_tokens": 5, "total_tokens": 5}}, {}


def ollama_embed(server, body):
    """``POST /api/embed`` as Ollama answers it (only ``mxbai-embed-large`` is pulled)."""
    if failed := server.failure("/api/embed"):
        return failed
    if body["model"] != "mxbai-embed-large":
        return 404, {"error": f'model "{body["model"]}" not found, try pulling it first'}, {}
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    dims = body.get("dimensions", 1024)
    return 200, {"model": body["model"], "embeddings": [unit(fake_vector(t, dims)).tolist() for t in inputs],
                 "total_duration": 1000, "load_duration": 10, "prompt_eval_count": 4}, {}


def ollama_legacy(server, body):
    """``POST /api/embeddings``, the endpoint of older Ollama versions."""
    return 200, {"embedding": fake_vector(body["prompt"], 1024).tolist()}, {}
