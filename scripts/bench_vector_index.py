#!/usr/bin/env python3
"""The journal's vector index (``localstore.ivf``) at 100k and 1M vectors: build (through the product's
own ``ivf.add`` + ``ivf.retrain``, as ``chats sync`` does), then as fresh processes: open + first search,
p50/p95 of 82 real queries asking 640 candidates (the product's ask), recall@10 against exact brute
force, peak RSS; and the on-disk bytes per vector.

Vectors: ``/work/ann-data`` of ``scripts/bench_ann.py`` (real MiniLM vectors + distinct clustered ones,
with exact top-10 truth files); run bench_ann once to make them.

    nice -n 10 .venv/bin/python scripts/bench_vector_index.py [--sizes 100000,1000000] [--data /work/ivf-data]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

QUERY = r"""
import json, os, sys, time
import numpy as np
started = time.perf_counter()
import apsw
from claude_chats.localstore import ivf
path, ann, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
reader = ivf.Reader(conn, 1)
queries = np.load(os.path.join(ann, "queries.npy"))
truth = np.load(os.path.join(ann, f"truth_{sys.argv[4]}.npy"))
opened = time.perf_counter()
times, recall = [], []
for i, q in enumerate(queries):
    t = time.perf_counter()
    ids, _ = reader.nearest(q, count)
    times.append(time.perf_counter() - t)
    if i == 0:
        first = time.perf_counter() - started
    recall.append(len(set(ids[:10].tolist()) & set(truth[i].tolist())) / 10)
hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")][0] / 1024
print(json.dumps({"open_ms": (opened - started) * 1000, "first_query_process_ms": first * 1000,
                  "p50_ms": float(np.median(times)) * 1000, "p95_ms": float(np.percentile(times, 95)) * 1000,
                  "recall_at_10": float(np.mean(recall)), "rss_mb": hwm}))
"""


def build(path, base, n):
    import apsw
    import numpy as np

    from claude_chats.localstore import ivf
    from claude_chats.localstore.db import Immediate

    conn = apsw.Connection(path + ".tmp")
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, space_id INTEGER)")
    with conn:
        ivf.create(conn, 1)
        ivf.set_dimensions(conn, 1, base.shape[1])
        ivf.mark_ready(conn, 1)
    started = time.perf_counter()
    for start in range(0, n, 50_000):
        with conn:
            conn.executemany("INSERT INTO chunks(id, space_id) VALUES (?, 1)",
                             [(i,) for i in range(start + 1, min(n, start + 50_000) + 1)])
            ivf.add(conn, 1, np.arange(start + 1, min(n, start + 50_000) + 1), np.asarray(base[start:min(n, start + 50_000)]))
    added = time.perf_counter() - started
    ivf.retrain(conn, 1, lambda: Immediate(conn))
    trained = time.perf_counter() - started - added
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    os.replace(path + ".tmp", path)
    return {"add_s": added, "retrain_s": trained}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--data", default="/work/ivf-data")
    parser.add_argument("--ann", default="/work/ann-data")
    parser.add_argument("--count", type=int, default=640)
    args = parser.parse_args()
    import apsw
    import numpy as np

    sys.path.insert(0, ROOT)
    os.makedirs(args.data, exist_ok=True)
    base = np.load(os.path.join(args.ann, "base.npy"), mmap_mode="r")
    for n in (int(s) for s in args.sizes.split(",")):
        path = os.path.join(args.data, f"ivf_{n}.db")
        built = {}
        if not os.path.exists(path):
            built = build(path, base, n)
        size = os.path.getsize(path)
        pages = apsw.Connection(path).execute("SELECT (SELECT page_count FROM pragma_page_count) - "
                                              "(SELECT freelist_count FROM pragma_freelist_count)").fetchall()[0][0]
        index_bytes = pages * 4096 - n * 9   # less the benchmark's own chunks table (about 9 bytes a row)
        env = {**os.environ, "PYTHONPATH": ROOT}
        runs = [json.loads(subprocess.run([sys.executable, "-c", QUERY, path, args.ann, str(args.count), str(n)],
                                          env=env, capture_output=True, text=True, check=True).stdout)
                for _ in range(2)]
        best = min(runs, key=lambda r: r["p50_ms"])
        print(json.dumps({"n": n, **built, "file_bytes_per_vector": round(size / n, 1),
                          "used_bytes_per_vector": round(index_bytes / n, 1), **{k: round(v, 3) for k, v in best.items()},
                          "load": os.getloadavg()}), flush=True)


if __name__ == "__main__":
    main()
