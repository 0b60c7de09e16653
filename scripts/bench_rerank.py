#!/usr/bin/env python3
"""How many candidates the journal's vector index re-ranks by its fine codes (``ivf.RERANK_SHARE``):
``Reader.nearest`` p50 and its answers for each share, interleaved, against brute force over every
decoded vector of the space.

Queries: ``bench_scale.QUERIES`` and the first ten words of sampled user prompts of the journal
(``--sampled``), embedded by the real model (bench_scale's stand-in for Ollama: the test GGUF of
all-MiniLM-L6-v2). Asks 160 (an unfiltered search), 640 (a filtered one) and 2,560 at twice the lists
(a filter's second try). Share 1 is the ask twice (the rule before 2026-12-06).

    nice -n 5 .venv/bin/python scripts/bench_rerank.py [--journal /work/scale-data/1000000/home-this/journal.db]
        [--shares 1,4] [--sampled 40] [--rounds 2]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench_scale  # noqa: E402 - the model stand-in and the queries

from claude_chats.localstore import ivf  # noqa: E402
from claude_chats.localstore.journal import Journal  # noqa: E402

ASKS = ((160, 1), (640, 1), (2560, 2))


def sampled_prompts(conn, n):
    rows = conn.execute("SELECT chats_text(content) FROM messages WHERE role = 'user' AND id % 7919 = 11 "
                        "LIMIT 400").fetchall()
    out = []
    for (text,) in rows:
        text = " ".join((text or "").split())
        if len(text) > 20 and not text.startswith(("[", "{", "<")):
            out.append(" ".join(text.split()[:10]))
    return out[:n]


def brute_force(conn, space_id, queries, k=10):
    ids = np.array([i for (i,) in conn.execute("SELECT id FROM chunks WHERE space_id = ?", (space_id,))], np.int64)
    sims = np.full((len(queries), len(ids)), -np.inf, np.float32)
    locator = ivf.Locator()
    for start in range(0, len(ids), 100_000):
        part = ids[start:start + 100_000]
        found = ivf.vectors_of(conn, space_id, part.tolist(), locator)
        dims = queries.shape[1]
        matrix = np.stack([found.get(int(i), np.zeros(dims, np.float32)) for i in part])
        sims[:, start:start + len(part)] = queries @ matrix.T
    return [set(ids[np.argsort(-row)[:k]].tolist()) for row in sims], len(ids)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", default="/work/scale-data/1000000/home-this/journal.db")
    parser.add_argument("--shares", default="1,4")
    parser.add_argument("--sampled", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    shares = [int(s) for s in args.shares.split(",")]
    conn = Journal.open(args.journal).conn
    space_id = conn.execute("SELECT id FROM spaces ORDER BY id DESC LIMIT 1").fetchall()[0][0]
    texts = [q for q, _ in bench_scale.QUERIES] + sampled_prompts(conn, args.sampled)
    vectors = bench_scale.Vectors().real(texts)
    queries = np.stack([v / np.linalg.norm(v) for v in vectors]).astype(np.float32)
    started = time.perf_counter()
    truth, chunks = brute_force(conn, space_id, queries)
    print(f"{len(texts)} queries; brute force over {chunks:,} decoded vectors in {time.perf_counter() - started:.0f} s; "
          f"load {open('/proc/loadavg').read().split()[:3]}")
    reader = ivf.Reader(conn, space_id)
    for count, widen in ASKS:
        answers, times = {}, {s: [] for s in shares}
        for _ in range(args.rounds):
            for share in shares:
                ivf.RERANK_SHARE = share
                answers[share] = []
                for q in queries:
                    t = time.perf_counter()
                    answers[share].append(reader.nearest(q, count, widen=widen)[0])
                    times[share].append((time.perf_counter() - t) * 1e3)
        first = answers[shares[0]]
        for share in shares:
            same = np.mean([np.array_equal(a, b) for a, b in zip(first, answers[share])])
            overlap = np.mean([len(set(a.tolist()) & set(b.tolist())) / count for a, b in zip(first, answers[share])])
            recall = np.mean([len(set(a[:10].tolist()) & t) / 10 for a, t in zip(answers[share], truth)])
            print(f"ask {count:5} widen {widen}: share {share} (re-ranks {count + max(count // share, ivf.RERANK_MIN)}) "
                  f"p50 {statistics.median(times[share]):5.1f} ms; as share {shares[0]}: same order {same:.3f}, "
                  f"same ids {overlap:.4f}; recall@10 {recall:.4f}")
    print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
