#!/usr/bin/env python3
"""Embedding throughput of the ``llama`` provider beside raw llama-cpp-python.

Both embed the same texts with the same model, threads, batch size and flash attention
setting in the same run; the provider's overhead (chunk checks, sorting, numpy
conversion, normalisation) should stay within 10%. Throughput is also given in tokens
per second (wall and CPU) against the model's own limit on this machine: raw llama.cpp
decodes of one full batch (``n_batch`` tokens of one text) and of the shape that runs
fastest here (one 128-token sequence per decode), timed in the same run.
``--storage`` also measures the size of sqlite-vec vectors per 10,000 chunks and the
recall of int8 against float32.

    python scripts/bench_embed.py [--model PATH|NAME] [--texts 200] [--corpus] [--threads N] [--storage]

Without ``--model`` it uses the test model (scripts/build_test_model.py). ``--corpus``
embeds real chunks of the shared corpus as sync makes them (scripts/bench_llama.py's
cache) instead of generated sentences. The load average is printed before and after.
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
    """Message-like texts of 5 to 150 words, all within a 512-token window."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 150))).capitalize() + "."
            for _ in range(count)]


def interleaved(runs, repeat):
    """Best wall and CPU time of each run, alternating them so other processes' load hits all alike.

    CPU time (this process) is the steadier figure on a shared machine.
    """
    best = {label: [float("inf"), float("inf")] for label in runs}
    for _ in range(repeat):
        for label, fn in runs.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            best[label][0] = min(best[label][0], time.perf_counter() - wall)
            best[label][1] = min(best[label][1], time.process_time() - cpu)
    return best


def bench_throughput(model, texts, threads, batch_tokens, repeat):
    import llama_cpp

    from claude_chats.models import embed_texts
    from claude_chats.models.llama import LlamaProvider

    provider = LlamaProvider(model=model, threads=threads, batch_tokens=batch_tokens)
    threads = provider._threads
    n_ctx = provider._llm.n_ctx()
    flash = getattr(provider, "flash_attn", False)
    raw = llama_cpp.Llama(model_path=provider.path, embedding=True, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx,
                          n_threads=threads, n_threads_batch=threads, flash_attn=flash, verbose=False)
    tokens = sum(len(raw.tokenize(t.encode())) for t in texts)
    filler = raw.tokenize((" ".join(WORDS) + " ") .encode() * 40, add_bos=False)
    full = [raw.token_bos(), *filler[:n_ctx - 2], raw.token_eos()]
    short = [raw.token_bos(), *filler[:126], raw.token_eos()]
    raw.embed(texts[:8], normalize=True)  # warm up both
    provider.embed_documents(texts[:8])
    print(f"start: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    best = interleaved({
        "raw llama-cpp-python Llama.embed()": lambda: raw.embed(texts, normalize=True),
        "provider embed_documents()": lambda: provider.embed_documents(texts),
        "provider embed_texts() (chunking too)": lambda: embed_texts(provider, texts),
        f"limit: raw decodes of 1 x {n_ctx} tokens": lambda: _decodes(raw, [full], max(1, tokens // n_ctx)),
        "limit: raw decodes of 1 x 128 tokens": lambda: _decodes(raw, [short], max(1, tokens // 128)),
    }, repeat)
    base = best["raw llama-cpp-python Llama.embed()"]
    limit_tokens = {f"limit: raw decodes of 1 x {n_ctx} tokens": max(1, tokens // n_ctx) * n_ctx,
                    "limit: raw decodes of 1 x 128 tokens": max(1, tokens // 128) * 128}
    peak = max(n / best[k][1] for k, n in limit_tokens.items())
    print(f"model {provider.model_id} ({provider.dimensions} dims), {len(texts)} texts ({tokens} tokens), "
          f"{threads} thread(s), {n_ctx} tokens per decode, flash attention {'on' if flash else 'off'}, best of {repeat}")
    for label, (wall, cpu) in best.items():
        n = limit_tokens.get(label, tokens)
        line = (f"  {label:40s} {n / wall:7.0f} tokens/s wall {n / cpu:7.0f} per CPU s "
                f"({100 * (n / cpu) / peak:5.1f}% of the limit)")
        if label not in limit_tokens:
            line += (f" {len(texts) / wall:6.1f} texts/s; overhead {100 * (wall / base[0] - 1):+5.1f}% wall, "
                     f"{100 * (cpu / base[1] - 1):+5.1f}% CPU")
        print(line)
    print(f"end: load average {os.getloadavg()[0]:.2f}")
    raw.close()
    provider.close()


def _decodes(llm, sequences, count):
    """``count`` decodes of ``sequences`` (token lists) packed into one batch each: llama.cpp alone."""
    batch, ctx = llm._batch, llm._ctx
    for _ in range(count):
        batch.reset()
        for seq, tokens in enumerate(sequences):
            batch.add_sequence(tokens, seq, True)
        ctx.kv_cache_clear()
        ctx.decode(batch)
    batch.reset()


def corpus_texts(model, count):
    """``count`` real chunks of the shared corpus as sync embeds them (bench_llama's cache)."""
    from bench_llama import corpus_chunks, sample

    return [c["text"] for c in sample(corpus_chunks(model)["chunks"], count)]


def bench_storage(dimensions_list=(384, 1024), count=10_000, queries=100, k=10, seed=3):
    """Bytes per 10,000 chunks in a vec0 table, float32 and int8, and int8's recall@k."""
    import numpy as np

    rng = np.random.default_rng(seed)
    print(f"sqlite-vec storage per {count:,} chunks (file growth), recall@{k} of int8 vs float32:")
    for dims in dimensions_list:
        centres = rng.standard_normal((count // 20, dims))  # clustered, like conversations on few topics
        data = centres[rng.integers(0, len(centres), count)] + 0.7 * rng.standard_normal((count, dims))
        data = (data / np.linalg.norm(data, axis=1, keepdims=True)).astype(np.float32)
        probe = data[rng.integers(0, count, queries)] + 0.3 * rng.standard_normal((queries, dims)).astype(np.float32)
        probe /= np.linalg.norm(probe, axis=1, keepdims=True)
        scale = 127 / np.abs(data).max()
        results = {kind: _vec_table(kind, dims, data, probe, k, scale) for kind in ("float", "int8")}
        recall = np.mean([len(set(a) & set(b)) / k for a, b in zip(results["float"][1], results["int8"][1])])
        print(f"  {dims:5d} dims: float32 {results['float'][0] / 2**20:6.1f} MiB, "
              f"int8 {results['int8'][0] / 2**20:6.1f} MiB, int8 recall@{k} {recall:.3f}")


def _vec_table(kind, dims, data, probe, k, scale):
    import apsw
    import numpy as np

    from claude_chats.localstore import vectors

    def encode(v):
        return v.tobytes() if kind == "float" else np.clip(np.round(v * scale), -127, 127).astype(np.int8).tobytes()

    wrap = "vec_int8(?)" if kind == "int8" else "?"
    with tempfile.TemporaryDirectory() as tmp:
        conn = apsw.Connection(os.path.join(tmp, "v.db"))
        vectors.load_extension(conn)
        before = _db_size(conn)
        conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding {kind}[{dims}] distance_metric=cosine)")
        with conn:
            conn.executemany(f"INSERT INTO v(rowid, embedding) VALUES (?, {wrap})",
                             ((i, encode(row)) for i, row in enumerate(data)))
        size = _db_size(conn) - before
        hits = [[r[0] for r in conn.execute(f"SELECT rowid FROM v WHERE embedding MATCH {wrap} AND k = ?",
                                            (encode(q), k))] for q in probe]
        conn.close()
    return size, hits


def _db_size(conn):
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return conn.execute("PRAGMA page_count").fetchone()[0] * page_size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF path or Ollama model name (default: the test model)")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: the model's context")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--storage", action="store_true", help="also measure sqlite-vec storage")
    parser.add_argument("--corpus", action="store_true", help="real corpus chunks instead of generated texts")
    args = parser.parse_args()
    model = args.model
    if model is None:
        from build_test_model import build  # beside this script

        model = build()
    texts = corpus_texts(model, args.texts) if args.corpus else make_texts(args.texts)
    bench_throughput(model, texts, args.threads, args.batch_tokens, args.repeat)
    if args.storage:
        bench_storage()


if __name__ == "__main__":
    main()
