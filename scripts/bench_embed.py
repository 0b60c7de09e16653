#!/usr/bin/env python3
"""Embedding throughput of the ``llama`` provider beside raw llama-cpp-python.

Both embed the same texts with the same model, threads and batch size in the
same run; the provider's overhead (chunk checks, numpy conversion,
normalisation) should stay within 10%. ``--storage`` also measures the size of
sqlite-vec vectors per 10,000 chunks and the recall of int8 against float32.

    python scripts/bench_embed.py [--model PATH|NAME] [--texts 400] [--threads N] [--storage]

Without ``--model`` it uses the test model (scripts/build_test_model.py).
"""

import argparse
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

WORDS = ("the migration test fails when the database connection pool is closed before the "
         "fixture tears down so we retry with a fresh session and log the stack trace of "
         "python sqlite postgres vector search index embedding chunk model token query").split()


def make_texts(count, seed=7):
    """Message-like texts of 10 to 300 words, all within a 512-token window."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 300))).capitalize() + "."
            for _ in range(count)]


def timed(fn, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_throughput(model, texts, threads, batch_tokens, repeat):
    import llama_cpp

    from claude_chats.models import embed_texts
    from claude_chats.models.llama import LlamaProvider

    provider = LlamaProvider(model=model, threads=threads, batch_tokens=batch_tokens)
    raw = llama_cpp.Llama(model_path=provider.path, embedding=True, n_ctx=batch_tokens, n_batch=batch_tokens,
                          n_ubatch=batch_tokens, n_threads=threads, n_threads_batch=threads, verbose=False)
    raw.embed(texts[:8], normalize=True)  # warm up both
    provider.embed_documents(texts[:8])
    results = {
        "raw llama-cpp-python embed()": timed(lambda: raw.embed(texts, normalize=True), repeat),
        "provider embed_documents()": timed(lambda: provider.embed_documents(texts), repeat),
        "provider embed_texts() (with chunking)": timed(lambda: embed_texts(provider, texts), repeat),
    }
    base = results["raw llama-cpp-python embed()"]
    print(f"model {provider.model_id} ({provider.dimensions} dims), {len(texts)} texts, "
          f"threads {threads or 'default'}, batch {batch_tokens} tokens, best of {repeat}")
    for label, seconds in results.items():
        print(f"  {label:42s} {len(texts) / seconds:8.1f} texts/s   overhead {100 * (seconds / base - 1):+5.1f}%")
    raw.close()
    return provider


def bench_storage(dimensions_list=(384, 1024), count=10_000, queries=50, seed=3):
    import apsw
    import numpy as np

    from claude_chats.localstore import vectors

    rng = np.random.default_rng(seed)
    for dims in dimensions_list:
        data = rng.standard_normal((count, dims)).astype(np.float32)
        data /= np.linalg.norm(data, axis=1, keepdims=True)
        sizes = {}
        for kind in ("float", "int8"):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "v.db")
                conn = apsw.Connection(path)
                vectors.load_extension(conn)
                before = _db_size(conn)
                column = f"embedding {kind}[{dims}]"
                conn.execute(f"CREATE VIRTUAL TABLE v USING vec0({column} distance_metric=cosine)")
                with conn:
                    for i, row in enumerate(data):
                        value = row.tobytes() if kind == "float" else np.clip(np.round(row * 127 * 8), -127, 127).astype(np.int8).tobytes()
                        conn.execute(f"INSERT INTO v(rowid, embedding) VALUES (?, {'vec_int8(?)' if kind == 'int8' else '?'})", (i, value))
                sizes[kind] = _db_size(conn) - before
                conn.close()
        print(f"  {dims} dims: float32 {sizes['float'] / 2**20:6.1f} MiB per {count:,} chunks, "
              f"int8 {sizes['int8'] / 2**20:6.1f} MiB")
    print("  (int8 is not used: float32 keeps exact recall; see the report in the issue)")


def _db_size(conn):
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return conn.execute("PRAGMA page_count").fetchone()[0] * page_size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF path or Ollama model name (default: the test model)")
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--storage", action="store_true", help="also measure sqlite-vec storage")
    args = parser.parse_args()
    model = args.model
    if model is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("build_test_model", os.path.join(os.path.dirname(__file__), "build_test_model.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        model = module.build()
    bench_throughput(model, make_texts(args.texts), args.threads, args.batch_tokens, args.repeat)
    if args.storage:
        bench_storage()


if __name__ == "__main__":
    main()
