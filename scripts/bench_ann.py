#!/usr/bin/env python3
"""Vector search that does not load the corpus per process: candidates measured side by side (issue 22 item 1).

    PYTHONPATH=/work/ann-libs:. /work/main/.venv/bin/python scripts/bench_ann.py \
        [--sizes 100000,1000000] [--only usearch-f16,faiss-ivf,...] [--data /work/ann-data]

The ANN libraries are not dependencies of the product: install them aside
(``python -m pip install --target /work/ann-libs usearch faiss-cpu hnswlib``) and
put that folder on PYTHONPATH.

Vectors (cached in ``--data``, made once):

* ``REAL`` message texts of the real transcripts (``--corpus``, parsed by
  ``claude_chats.transcript``, chunked like ``chats sync``) embedded by the real
  model (the test GGUF of all-MiniLM-L6-v2, ``scripts/build_test_model.py``);
* queries: real-looking query text (the first words of the user prompts and of
  the assistant's first sentences) from sessions held out of the index, embedded
  as queries by the same model;
* synthetic vectors for the rest, in the same space and clustered like it: each
  is a real anchor moved towards one of its 10 nearest real neighbours
  (``a ~ U(0, 0.5)``), plus a random difference of two other real vectors
  (``s ~ N(0, 0.25)``: directions the data has, not isotropic noise), plus a
  little isotropic noise, normalised. Every vector is distinct (checked on a
  random projection). Rows are shuffled so the real ones are spread through ids.

Per candidate and size: build (a subprocess: time, peak RSS, file size), then
fresh processes that open the file and search (open time, first query, p50/p95 of
single-threaded queries, recall@10 against exact float32 brute force over the same
rows, peak RSS after one query and after all), add 1,000 vectors and save, and
delete 1,000 and save. Candidates that keep quantised vectors re-rank their
candidates exactly from float32 (a memory-mapped .npy by row, a stand-in; what fetching
float vectors by rowid costs from sqlite-vec is measured with the sqlite-vec candidate, and
from a plain table with ``--fetch-plain N``).

Candidates: usearch-f16 / usearch-i8 (HNSW, ``Index.restore(view=True)``), faiss-ivf
(IndexIVFFlat, ``IO_FLAG_MMAP``), hnswlib, sqlite-vec-bit (bit[384] brute force + re-rank),
signindex (today's ``localstore.search.SignIndex`` loaded from sqlite-vec), own-ivf-i8 (a
compact file of our own: k-means lists of int8 codes) and own-ivf-i8-pread (the same file read
per list with pread). ``--zeroing usearch-i8:100000`` measures purge by zeroing vector slots in a
usearch file in place. Findings and the design chosen from them: docs/vector-index.md.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DIM = 384
REAL = 5000
QUERIES = 200
EXTRA = 1000          # rows past the largest size: what "add 1,000" adds
K = 10
RERANK = 50           # candidates taken from an index and re-ranked exactly
WIDE = 640            # what the product's vector leg asks: search.core.CANDIDATES (40) x 16 chunks
CANDIDATES = ["usearch-f16", "faiss-ivf", "sqlite-vec-bit", "signindex", "usearch-i8", "hnswlib", "own-ivf-i8", "own-ivf-i8-pread"]


def maxrss_mb():
    """Peak RSS of this process. ``getrusage(RUSAGE_SELF).ru_maxrss`` would do in a process started by a
    small parent, but Linux carries the parent's peak into a forked+exec'd child's ru_maxrss (the
    orchestrator holds ~500 MB while it computes the exact neighbours), so VmHWM is read instead;
    ru_maxrss is kept beside it (``ru_maxrss_mb``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# -- the vectors -----------------------------------------------------------------------------

def corpus_texts(corpus):
    """(session id, role, text) of every record of every transcript under ``corpus``."""
    from claude_chats.transcript import FileContext, parse_lines
    out = []
    for folder, _, files in sorted(os.walk(corpus)):
        for name in sorted(files):
            if not name.endswith(".jsonl"):
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                result = parse_lines(f.read(), FileContext.for_path(path), final=True)
            for record in result.records:
                text = (record.text or "").strip()
                if len(text) >= 20:
                    out.append((record.session_id, record.role, text))
    return out


def query_text(text, rng):
    words = text.replace("\n", " ").split()
    return " ".join(words[:rng.randint(4, 12)])


def make_vectors(args):
    os.makedirs(args.data, exist_ok=True)
    real_path, query_path = os.path.join(args.data, "real.npy"), os.path.join(args.data, "queries.npy")
    if not os.path.exists(real_path):
        from claude_chats.models.chunking import chunk_text
        from claude_chats.models.llama import LlamaProvider
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import build_test_model
        rng = random.Random(22)
        records = corpus_texts(args.corpus)
        sessions = sorted({r[0] for r in records})
        rng.shuffle(sessions)
        held = set(sessions[:max(1, len(sessions) // 8)])
        indexed = [r[2] for r in records if r[0] not in held]
        indexed = list(dict.fromkeys(indexed))
        rng.shuffle(indexed)
        queries = []
        for session, role, text in records:
            if session in held and role == "user" or session in held and rng.random() < 0.05:
                q = query_text(text, rng)
                if len(q) > 15 and q not in queries and not q.startswith(("<", "{", "[", "/")):
                    queries.append(q)
        rng.shuffle(queries)
        queries = queries[:QUERIES]
        provider = LlamaProvider(model=str(build_test_model.build()), threads=2)
        started, chunks = time.time(), []
        for text in indexed:
            chunks.extend(c for _, _, c in chunk_text(text, provider))
            if len(chunks) >= REAL:
                break
        chunks = chunks[:REAL]
        real = np.concatenate([provider.embed_documents(chunks[i:i + 64]) for i in range(0, len(chunks), 64)])
        qv = np.stack([provider.embed_query(q) for q in queries])
        provider.close()
        print(f"embedded {len(real)} real chunks of {len(indexed)} texts ({len(records)} records, "
              f"{len(sessions)} sessions, {len(held)} held out) and {len(qv)} queries in "
              f"{time.time() - started:.0f} s", flush=True)
        np.save(query_path, qv.astype(np.float32))
        with open(os.path.join(args.data, "queries.json"), "w") as f:
            json.dump(queries, f, indent=1)
        np.save(real_path, real.astype(np.float32))
    base_path = os.path.join(args.data, "base.npy")
    total = max(args.sizes) + EXTRA
    done_path = os.path.join(args.data, "is_real.npy")   # written last: the base is complete
    if os.path.exists(done_path) and np.load(base_path, mmap_mode="r").shape[0] >= total:
        return
    real = np.load(real_path)
    rng = np.random.default_rng(22)
    sims = real @ real.T
    np.fill_diagonal(sims, -1)
    neighbours = np.argsort(-sims, axis=1)[:, :10]
    base = np.lib.format.open_memmap(base_path, mode="w+", dtype=np.float32, shape=(total, DIM))
    order = rng.permutation(total)
    real_rows = np.sort(order[:len(real)])   # where the real vectors go
    is_real = np.zeros(total, bool)
    is_real[real_rows] = True
    synthetic = np.flatnonzero(~is_real)
    base[real_rows] = real[rng.permutation(len(real))]
    for start in range(0, len(synthetic), 100_000):
        rows = synthetic[start:start + 100_000]
        n = len(rows)
        anchor = rng.integers(0, len(real), n)
        towards = neighbours[anchor, rng.integers(0, 10, n)]
        a = rng.uniform(0, 0.5, n)[:, None]
        p, q = rng.integers(0, len(real), n), rng.integers(0, len(real), n)
        s = rng.normal(0, 0.25, n)[:, None]
        v = (1 - a) * real[anchor] + a * real[towards] + s * (real[p] - real[q])
        v += rng.normal(0, 0.02, v.shape).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        base[rows] = v.astype(np.float32)
    base.flush()
    projection = np.asarray(base, dtype=np.float64) @ rng.normal(size=DIM)   # float64: no birthday ties
    distinct = len(np.unique(projection))
    np.save(done_path, is_real)
    print(f"base: {total} vectors, {distinct} distinct (by a random projection)", flush=True)


def space_stats(args):
    """How like the real vectors the synthetic ones are: nearest-neighbour similarity, real vs synthetic."""
    base = np.load(os.path.join(args.data, "base.npy"), mmap_mode="r")
    is_real = np.load(os.path.join(args.data, "is_real.npy"))
    n = min(100_000, base.shape[0])
    block = np.asarray(base[:n])
    rng = np.random.default_rng(5)
    out = {}
    for label, rows in (("real", np.flatnonzero(is_real[:n])), ("synthetic", np.flatnonzero(~is_real[:n]))):
        pick = rng.choice(rows, min(300, len(rows)), replace=False)
        sims = block[pick] @ block.T
        sims[np.arange(len(pick)), pick] = -1
        top = np.sort(sims, axis=1)[:, -10:]
        out[label] = {"nn1": round(float(np.median(top[:, -1])), 3), "nn10": round(float(np.median(top[:, 0])), 3)}
    queries = np.load(os.path.join(args.data, "queries.npy"))
    qs = np.sort(queries @ block.T, axis=1)[:, -10:]
    out["query"] = {"nn1": round(float(np.median(qs[:, -1])), 3), "nn10": round(float(np.median(qs[:, 0])), 3)}
    return out


def truth(args, n):
    path = os.path.join(args.data, f"truth_{n}.npy")
    if os.path.exists(path):
        return np.load(path)
    base = np.load(os.path.join(args.data, "base.npy"), mmap_mode="r")
    queries = np.load(os.path.join(args.data, "queries.npy"))
    best_ids = np.zeros((len(queries), 0), np.int64)
    best_sims = np.zeros((len(queries), 0), np.float32)
    for start in range(0, n, 100_000):
        block = np.asarray(base[start:min(n, start + 100_000)])
        sims = queries @ block.T
        top = np.argpartition(-sims, K, axis=1)[:, :K]
        best_ids = np.concatenate([best_ids, top + start], axis=1)
        best_sims = np.concatenate([best_sims, np.take_along_axis(sims, top, axis=1)], axis=1)
    order = np.argsort(-best_sims, axis=1)[:, :K]
    ids = np.take_along_axis(best_ids, order, axis=1) + 1     # ids are rowids: row + 1
    np.save(path, ids)
    return ids


# -- the candidates (each runs in a subprocess: build / query / add / delete) ----------------

def paths(args, cand, n):
    return os.path.join(args.data, f"{cand}_{n}")


def rerank(base, query, ids):
    """Exact float32 re-rank of candidate ids (rowids) from the memory-mapped base."""
    ids = np.asarray(ids, dtype=np.int64)
    ids = ids[ids > 0]
    rows = np.sort(ids - 1)
    sims = np.asarray(base[rows]) @ query
    return (rows[np.argsort(-sims)[:K]] + 1)


class UsearchCand:
    @staticmethod
    def imports():
        import usearch.index  # noqa: F401, E401

    def __init__(self, dtype):
        self.dtype = dtype

    def build(self, path, base, n):
        from usearch.index import Index
        index = Index(ndim=DIM, metric="ip", dtype=self.dtype, connectivity=16, expansion_add=128)
        for start in range(0, n, 50_000):
            stop = min(n, start + 50_000)
            index.add(np.arange(start + 1, stop + 1), np.asarray(base[start:stop]), threads=2)
        index.save(path)

    def open(self, path):
        from usearch.index import Index
        return Index.restore(path, view=True)

    def settings(self):
        return [50, 100, 200, 400, 800]

    def search(self, index, query, setting, count=RERANK):
        index.expansion_search = max(setting, count)
        return index.search(query, count, threads=1).keys

    def add(self, path, ids, vectors):
        from usearch.index import Index
        index = Index.restore(path, view=False)
        index.add(ids, vectors, threads=1)
        index.save(path + ".new")
        os.replace(path + ".new", path)

    def delete(self, path, ids):
        from usearch.index import Index
        index = Index.restore(path, view=False)
        index.remove(ids)
        index.save(path + ".new")
        os.replace(path + ".new", path)


class FaissIvf:
    @staticmethod
    def imports():
        import faiss  # noqa: F401, E401

    def build(self, path, base, n):
        import faiss
        faiss.omp_set_num_threads(2)
        nlist = 1024 if n >= 300_000 else 256
        quantizer = faiss.IndexFlatIP(DIM)
        index = faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(1)
        index.train(np.asarray(base[np.sort(rng.choice(n, min(n, 40 * nlist), replace=False))]))
        for start in range(0, n, 50_000):
            stop = min(n, start + 50_000)
            index.add_with_ids(np.asarray(base[start:stop]), np.arange(start + 1, stop + 1))
        faiss.write_index(index, path)

    def open(self, path):
        import faiss
        faiss.omp_set_num_threads(1)
        return faiss.read_index(path, faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)

    def settings(self):
        return [8, 16, 32, 64, 128]

    def search(self, index, query, setting, count=RERANK):
        index.nprobe = setting
        return index.search(query[None, :], count)[1][0]

    def add(self, path, ids, vectors):
        import faiss
        index = faiss.read_index(path)
        index.add_with_ids(vectors, ids)
        faiss.write_index(index, path + ".new")
        os.replace(path + ".new", path)

    def delete(self, path, ids):
        import faiss
        index = faiss.read_index(path)
        index.remove_ids(np.asarray(ids, dtype=np.int64))
        faiss.write_index(index, path + ".new")
        os.replace(path + ".new", path)


class Hnswlib:
    @staticmethod
    def imports():
        import hnswlib  # noqa: F401, E401

    def build(self, path, base, n):
        import hnswlib
        index = hnswlib.Index(space="ip", dim=DIM)
        index.init_index(max_elements=n, ef_construction=128, M=16)
        for start in range(0, n, 50_000):
            stop = min(n, start + 50_000)
            index.add_items(np.asarray(base[start:stop]), np.arange(start + 1, stop + 1), num_threads=2)
        index.save_index(path)

    def open(self, path):
        import hnswlib
        index = hnswlib.Index(space="ip", dim=DIM)
        index.load_index(path)
        index.set_num_threads(1)
        return index

    def settings(self):
        return [50, 100, 200, 400, 800]

    def search(self, index, query, setting, count=RERANK):
        index.set_ef(max(setting, count))
        return index.knn_query(query, k=count)[0][0]

    def add(self, path, ids, vectors):
        import hnswlib
        index = hnswlib.Index(space="ip", dim=DIM)
        index.load_index(path, allow_replace_deleted=False)
        index.resize_index(index.get_current_count() + len(ids))
        index.add_items(vectors, ids, num_threads=1)
        index.save_index(path + ".new")
        os.replace(path + ".new", path)

    def delete(self, path, ids):
        import hnswlib
        index = hnswlib.Index(space="ip", dim=DIM)
        index.load_index(path)
        for i in ids:
            index.mark_deleted(int(i))   # a mark: the vector stays in the file
        index.save_index(path + ".new")
        os.replace(path + ".new", path)


class OwnIvf:
    """A compact file of our own: spherical k-means lists (numpy), int8 codes grouped by list with their
    rowids, memory-mapped; the probed lists scanned with numpy, candidates re-ranked exactly."""

    @staticmethod
    def imports():
        pass

    @staticmethod
    def train(sample, nlist):
        from claude_chats.localstore.ivf import train   # the product's k-means (seed 2, 8 rounds)

        return train(sample, nlist)

    @staticmethod
    def write(path, centroids, ids, vectors):
        assign = np.concatenate([np.argmax(vectors[i:i + 50_000] @ centroids.T, axis=1)
                                 for i in range(0, len(vectors), 50_000)]) if len(vectors) else np.zeros(0, int)
        order = np.argsort(assign, kind="stable")
        offsets = np.searchsorted(assign[order], np.arange(len(centroids) + 1)).astype(np.int64)
        codes = np.clip(np.round(vectors[order] * 127), -127, 127).astype(np.int8)
        header = json.dumps({"nlist": len(centroids), "n": len(ids), "dim": DIM}).encode().ljust(4096)
        with open(path + ".tmp", "wb") as f:
            f.write(header)
            for part in (centroids, offsets, np.asarray(ids, np.int64)[order], codes):
                f.write(np.ascontiguousarray(part).tobytes())
            f.flush()
            os.fsync(f.fileno())
        os.replace(path + ".tmp", path)

    def build(self, path, base, n):
        nlist = 1024 if n >= 300_000 else 256
        rng = np.random.default_rng(1)
        centroids = self.train(np.asarray(base[np.sort(rng.choice(n, min(n, 40 * nlist), replace=False))]), nlist)
        self.write(path, centroids, np.arange(1, n + 1), np.asarray(base[:n]))

    def open(self, path):
        with open(path, "rb") as f:
            head = json.loads(f.read(4096))
        nlist, n = head["nlist"], head["n"]
        at = 4096
        centroids = np.memmap(path, np.float32, "r", at, (nlist, DIM))
        at += nlist * DIM * 4
        offsets = np.memmap(path, np.int64, "r", at, (nlist + 1,))
        at += (nlist + 1) * 8
        ids = np.memmap(path, np.int64, "r", at, (n,))
        at += n * 8
        codes = np.memmap(path, np.int8, "r", at, (n, DIM)) if n else np.zeros((0, DIM), np.int8)
        return centroids, offsets, ids, codes

    def settings(self):
        return [8, 16, 32, 64, 128]

    def search(self, index, query, setting, count=RERANK):
        centroids, offsets, ids, codes = index
        probe = np.argpartition(-(centroids @ query), setting)[:setting]
        spans = [(int(offsets[p]), int(offsets[p + 1])) for p in probe]
        rows = np.concatenate([np.arange(a, b) for a, b in spans])
        sims = np.concatenate([codes[a:b].astype(np.float32) @ query for a, b in spans])
        top = np.argpartition(-sims, min(count, len(sims) - 1))[:count]
        return np.asarray(ids[rows[top]])

    def _all(self, path):
        centroids, offsets, ids, codes = self.open(path)
        return np.array(centroids), np.array(ids), np.asarray(codes, np.float32) / 127

    def add(self, path, new_ids, vectors):
        centroids, ids, approx = self._all(path)   # a rewrite: simple, the whole file read once
        self.write(path, centroids, np.concatenate([ids, new_ids]), np.concatenate([approx, vectors]))

    def delete(self, path, gone):
        centroids, ids, approx = self._all(path)
        keep = ~np.isin(ids, gone)
        self.write(path, centroids, ids[keep], approx[keep])


class OwnIvfPread(OwnIvf):
    """The same file as ``own-ivf-i8``, its probed lists read with pread (``np.fromfile``) instead of a
    memory map: the page cache keeps them warm without counting in the searching process's RSS."""

    def source(self, args, n):
        return paths(args, "own-ivf-i8", n)

    def build(self, path, base, n):
        if not os.path.exists(path):
            OwnIvf.build(self, path, base, n)

    def open(self, path):
        centroids, offsets, ids, codes = OwnIvf.open(self, path)
        n = len(ids)
        ids_at = 4096 + len(centroids) * DIM * 4 + len(offsets) * 8
        f = open(path, "rb")
        return np.array(centroids), np.array(offsets), (f, ids_at, ids_at + n * 8)

    def search(self, index, query, setting, count=RERANK):
        centroids, offsets, (f, ids_at, codes_at) = index
        probe = np.argpartition(-(centroids @ query), setting)[:setting]
        found, sims = [], []
        for p in probe.tolist():
            a, b = int(offsets[p]), int(offsets[p + 1])
            if b > a:
                found.append(np.frombuffer(os.pread(f.fileno(), (b - a) * 8, ids_at + a * 8), np.int64))
                codes = np.frombuffer(os.pread(f.fileno(), (b - a) * DIM, codes_at + a * DIM), np.int8)
                sims.append(codes.reshape(b - a, DIM).astype(np.float32) @ query)
        ids, sims = np.concatenate(found), np.concatenate(sims)
        top = np.argpartition(-sims, min(count, len(sims) - 1))[:count]
        return ids[top]

    def add(self, path, new_ids, vectors):
        pass   # the same file as own-ivf-i8: measured there

    def delete(self, path, gone):
        pass


def vec_conn(path):
    import apsw
    import sqlite_vec
    conn = apsw.Connection(path)
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    return conn


class SqliteVecBit:
    """bit[384] brute force in sqlite-vec, float32 re-rank by rowid from a float[384] vec0 table."""
    @staticmethod
    def imports():
        import apsw, sqlite_vec  # noqa: F401, E401


    def build(self, path, base, n):
        conn = vec_conn(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE VIRTUAL TABLE vf USING vec0(embedding float[384] distance_metric=cosine)")
        conn.execute("CREATE VIRTUAL TABLE vb USING vec0(embedding bit[384])")
        for start in range(0, n, 20_000):
            stop = min(n, start + 20_000)
            block = np.asarray(base[start:stop])
            with conn:
                conn.executemany("INSERT INTO vf(rowid, embedding) VALUES (?, ?)",
                                 ((start + 1 + i, block[i].tobytes()) for i in range(len(block))))
                conn.executemany("INSERT INTO vb(rowid, embedding) VALUES (?, vec_quantize_binary(?))",
                                 ((start + 1 + i, block[i].tobytes()) for i in range(len(block))))
        conn.close()

    def open(self, path):
        return vec_conn(path)

    def settings(self):
        return [200, 1000]

    max_queries = 40   # brute force: about a second per query at 1M

    def search(self, conn, query, setting):
        rows = conn.execute("SELECT rowid FROM vb WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
                            (query.tobytes(), setting)).fetchall()
        ids = [r[0] for r in rows]
        got = conn.execute("SELECT rowid, embedding FROM vf WHERE rowid IN (SELECT value FROM json_each(?))",
                           (json.dumps(ids),)).fetchall()
        vecs = np.frombuffer(b"".join(g[1] for g in got), np.float32).reshape(len(got), DIM)
        order = np.argsort(-(vecs @ query))[:RERANK]
        return np.array([got[i][0] for i in order])

    def add(self, path, ids, vectors):
        conn = vec_conn(path)
        with conn:
            conn.executemany("INSERT INTO vf(rowid, embedding) VALUES (?, ?)",
                             ((int(i), v.tobytes()) for i, v in zip(ids, vectors)))
            conn.executemany("INSERT INTO vb(rowid, embedding) VALUES (?, vec_quantize_binary(?))",
                             ((int(i), v.tobytes()) for i, v in zip(ids, vectors)))

    def delete(self, path, ids):
        conn = vec_conn(path)
        with conn:
            conn.executemany("DELETE FROM vf WHERE rowid = ?", ((int(i),) for i in ids))
            conn.executemany("DELETE FROM vb WHERE rowid = ?", ((int(i),) for i in ids))


class Signindex:
    """Today's product index: the whole float table read out of sqlite-vec into ``SignIndex``."""
    @staticmethod
    def imports():
        import apsw, sqlite_vec, claude_chats.localstore.search  # noqa: F401, E401


    def source(self, args, n):
        return paths(args, "sqlite-vec-bit", n)

    def build(self, path, base, n):
        pass   # nothing on disk: built in every process from the sqlite-vec table

    def open(self, path):
        from claude_chats.localstore.search import SignIndex
        conn = vec_conn(path)
        return SignIndex.load(conn.execute("SELECT rowid, embedding FROM vf"))

    def settings(self):
        return [0]

    def search(self, index, query, setting, count=K):
        return index.nearest(query, count)[0]    # int8 similarities, as the product ranks them (no float re-rank)

    def add(self, path, ids, vectors):
        index = self.open(path)
        index.add(np.asarray(ids), vectors)   # in memory only: lost with the process

    def delete(self, path, ids):
        self.open(path)   # the product rebuilds the whole index on a deletion


def candidate(name):
    return {"usearch-f16": lambda: UsearchCand("f16"), "usearch-i8": lambda: UsearchCand("i8"),
            "faiss-ivf": FaissIvf, "hnswlib": Hnswlib, "sqlite-vec-bit": SqliteVecBit,
            "signindex": Signindex, "own-ivf-i8": OwnIvf, "own-ivf-i8-pread": OwnIvfPread}[name]()


def index_path(args, name, n):
    cand = candidate(name)
    return cand.source(args, n) if hasattr(cand, "source") else paths(args, name, n)


def file_size(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def child(args):
    """One measurement in this (fresh) process; prints one JSON line."""
    os.nice(19) if os.nice(0) < 19 else None
    name, n, what = args.child
    n = int(n)
    cand = candidate(name)
    path = index_path(args, name, n)
    base = np.load(os.path.join(args.data, "base.npy"), mmap_mode="r")
    out = {"rss_start_mb": round(maxrss_mb())}
    if what == "build":
        if os.path.exists(path) and name not in ("signindex", "own-ivf-i8-pread"):
            os.remove(path)
        started = time.perf_counter()
        cand.build(path, base, n)
        out.update(build_s=time.perf_counter() - started, build_rss_mb=maxrss_mb(), size_mb=file_size(path) / 2**20)
    elif what == "query":
        queries = np.load(os.path.join(args.data, "queries.npy"))
        exact = truth(args, n)
        if n >= 300_000 and getattr(cand, "max_queries", None):
            queries, exact = queries[:cand.max_queries], exact[:cand.max_queries]
            out["queries"] = len(queries)
        started = time.perf_counter()
        cand.imports()
        out["import_ms"] = (time.perf_counter() - started) * 1000
        started = time.perf_counter()
        index = cand.open(path)
        out["open_ms"] = (time.perf_counter() - started) * 1000
        out["rss_open_mb"] = maxrss_mb()
        settings = cand.settings()
        if args.setting is not None:
            settings = [args.setting]
        per = {}
        for setting in settings:
            times, hits = [], 0
            for i, q in enumerate(queries):
                t = time.perf_counter()
                found = cand.search(index, q, setting)
                if name != "signindex":
                    found = rerank(base, q, found)
                times.append(time.perf_counter() - t)
                hits += len(set(np.asarray(found)[:K].tolist()) & set(exact[i].tolist()))
                if i == 0 and "first_query_ms" not in out:
                    out["first_query_ms"] = times[0] * 1000
                    out["rss_one_query_mb"] = maxrss_mb()
            per[setting] = {"recall": hits / (K * len(queries)), "p50_ms": float(np.percentile(times, 50)) * 1000,
                            "p95_ms": float(np.percentile(times, 95)) * 1000}
        out["settings"] = per
        if args.setting is not None and name in ("usearch-f16", "usearch-i8", "faiss-ivf", "hnswlib", "own-ivf-i8",
                                                  "own-ivf-i8-pread") or \
                name == "signindex":
            # what the product asks: CANDIDATES x 16 = 640 nearest chunks, re-ranked exactly
            times, hits = [], 0
            for i, q in enumerate(queries):
                t = time.perf_counter()
                found = cand.search(index, q, args.setting or 0, WIDE)
                found = found[:K] if name == "signindex" else rerank(base, q, found)
                times.append(time.perf_counter() - t)
                hits += len(set(found[:K].tolist()) & set(exact[i].tolist()))
            out["wide"] = {"recall": hits / (K * len(queries)), "p50_ms": float(np.percentile(times, 50)) * 1000,
                           "p95_ms": float(np.percentile(times, 95)) * 1000}
        if name == "sqlite-vec-bit":   # the re-rank source of the product: RERANK float vectors by rowid
            rng, times = np.random.default_rng(3), []
            for i, q in enumerate(queries):
                ids = np.concatenate([exact[i], rng.integers(1, n + 1, (WIDE if i % 2 else RERANK) - K)])
                t = time.perf_counter()
                got = index.execute("SELECT rowid, embedding FROM vf WHERE rowid IN (SELECT value FROM json_each(?))",
                                    (json.dumps(ids.tolist()),)).fetchall()
                np.frombuffer(b"".join(g[1] for g in got), np.float32).reshape(len(got), DIM) @ q
                times.append(time.perf_counter() - t)
            out["fetch50_p50_ms"] = float(np.percentile(times[0::2], 50)) * 1000
            out["fetch640_p50_ms"] = float(np.percentile(times[1::2], 50)) * 1000
        out["rss_all_mb"] = maxrss_mb()
        out["rss_now_mb"] = current_rss_mb()
    elif what in ("add", "delete"):
        ids = np.arange(n + 1, n + EXTRA + 1)
        started = time.perf_counter()
        if what == "add":
            cand.add(path, ids, np.asarray(base[n:n + EXTRA]))
        else:
            marks = vector_marks(name, np.asarray(base[n]))
            before = bytes_found(path, marks)
            started = time.perf_counter()
            cand.delete(path, ids)
        out[f"{what}_s"] = time.perf_counter() - started
        out[f"{what}_rss_mb"] = maxrss_mb()
        if what == "delete":
            # does the file still hold a deleted vector's bytes? (what a purge must not leave on disk)
            out["deleted_bytes_before"], out["deleted_bytes_after"] = before, bytes_found(path, marks)
    out["ru_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out), flush=True)


def vector_marks(name, vector):
    """Byte patterns a deleted vector would leave in the candidate's file (its first 16 dimensions)."""
    head = vector[:16]
    if name == "usearch-f16":
        return [head.astype(np.float16).tobytes()]
    if name in ("usearch-i8", "own-ivf-i8"):
        return [np.clip(np.round(head * 127), -127, 127).astype(np.int8).tobytes()]
    return [head.astype(np.float32).tobytes()]


def bytes_found(path, marks):
    import mmap
    found = False
    for p in (path, path + "-wal"):
        if os.path.exists(p) and os.path.getsize(p):
            with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                found = found or any(m.find(mark) >= 0 for mark in marks)
    return found


def zeroing(args, name, n):
    """Purge without a rebuild: find each key's slot in a usearch file (``get`` gives the stored code,
    matched against the file's vector matrix: uint32 rows, uint32 bytes a row, then the rows), zero
    the slots of 1,000 keys in place, and check the bytes are gone and the rest still searches."""
    import shutil
    from usearch.index import Index
    source = index_path(args, name, n)
    path = source + ".zeroing"
    shutil.copy(source, path)
    out = {"candidate": name, "n": n}
    started = time.perf_counter()
    index = Index.restore(path, view=True)
    data = np.memmap(path, dtype=np.uint8, mode="r")
    rows, width = (int(x) for x in np.frombuffer(data[:8].tobytes(), np.uint32))
    matrix = np.asarray(data[8:8 + rows * width]).reshape(rows, width)
    keys = np.asarray(index.keys, dtype=np.int64)
    codes = np.asarray(index.get(keys, dtype=index.dtype)).view(np.uint8).reshape(len(keys), -1)
    slot_of_row = {bytes(row): slot for slot, row in enumerate(matrix)}
    slots = np.array([slot_of_row.get(bytes(c), -1) for c in codes])
    out["slot_map_s"] = time.perf_counter() - started
    out["slots_matched"] = int((slots >= 0).sum())
    out["keys"] = len(keys)
    base = np.load(os.path.join(args.data, "base.npy"), mmap_mode="r")
    rng = np.random.default_rng(7)
    purged = np.sort(rng.choice(keys, EXTRA, replace=False))
    by_key = dict(zip(keys.tolist(), slots.tolist()))
    position = {k: i for i, k in enumerate(keys.tolist())}
    marks = [codes[position[k]].tobytes() for k in purged[:20].tolist()]
    del index, data, matrix
    started = time.perf_counter()
    zero = bytes(width)
    with open(path, "r+b") as f:
        for k in purged.tolist():
            f.seek(8 + by_key[k] * width)
            f.write(zero)
        f.flush()
        os.fsync(f.fileno())
    out["zero_1k_s"] = time.perf_counter() - started
    with open(path, "rb") as f:
        blob = f.read()
    out["purged_bytes_left"] = sum(blob.find(m) >= 0 for m in marks)
    out["purged_checked"] = len(marks)
    del blob
    index = Index.restore(path, view=True)
    queries = np.load(os.path.join(args.data, "queries.npy"))
    exact = truth(args, n)
    gone, hits, want = set(purged.tolist()), 0, 0
    for i, q in enumerate(queries):
        index.expansion_search = 640
        found = rerank(base, q, [k for k in index.search(q, 640, threads=1).keys.tolist() if k not in gone])
        kept = [k for k in exact[i].tolist() if k not in gone]
        hits += len(set(found.tolist()) & set(kept))
        want += len(kept)
        out.setdefault("purged_found", 0)
        out["purged_found"] += len(set(index.search(q, 640, threads=1).keys.tolist()) & gone)
    out["recall_after"] = hits / max(1, want)
    os.remove(path)
    return out


def fetch_plain(args, n):
    """The re-rank source an own index would use: float16 vectors in a plain rowid table (a B-tree, not
    vec0's chunked layout), fetched by rowid for 50 and 640 candidates, in a fresh connection."""
    import apsw
    path = os.path.join(args.data, f"plain_{n}.db")
    base = np.load(os.path.join(args.data, "base.npy"), mmap_mode="r")
    out = {"candidate": "plain-f16-table", "n": n}
    if not os.path.exists(path):
        started = time.perf_counter()
        conn = apsw.Connection(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, e BLOB NOT NULL)")
        for start in range(0, n, 50_000):
            block = np.asarray(base[start:min(n, start + 50_000)]).astype(np.float16)
            with conn:
                conn.executemany("INSERT INTO v VALUES (?, ?)", ((start + 1 + i, block[i].tobytes())
                                                                 for i in range(len(block))))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        out["build_s"] = time.perf_counter() - started
    out["size_mb"] = os.path.getsize(path) / 2**20
    conn = apsw.Connection(path)
    queries = np.load(os.path.join(args.data, "queries.npy"))
    rng = np.random.default_rng(3)
    for count in (RERANK, WIDE):
        times = []
        for q in queries:
            ids = rng.integers(1, n + 1, count)
            t = time.perf_counter()
            got = conn.execute("SELECT id, e FROM v WHERE id IN (SELECT value FROM json_each(?))",
                               (json.dumps(ids.tolist()),)).fetchall()
            np.frombuffer(b"".join(g[1] for g in got), np.float16).reshape(len(got), DIM).astype(np.float32) @ q
            times.append(time.perf_counter() - t)
        out[f"fetch{count}_p50_ms"] = float(np.percentile(times, 50)) * 1000
        out[f"fetch{count}_p95_ms"] = float(np.percentile(times, 95)) * 1000
    return out


def run_child(args, name, n, what, setting=None):
    cmd = [sys.executable, os.path.abspath(__file__), "--data", args.data, "--sizes", ",".join(map(str, args.sizes)),
           "--child", name, str(n), what]
    if setting is not None:
        cmd += ["--setting", str(setting)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"error": (proc.stderr or proc.stdout)[-600:]}


def previous_build(results_path, name, n):
    """The build figures of an earlier run of this candidate and size (its file is still there)."""
    found = None
    if os.path.exists(results_path):
        for line in open(results_path):
            row = json.loads(line)
            if row.get("candidate") == name and row.get("n") == n and "build_s" in row:
                found = {k: row[k] for k in ("build_s", "build_rss_mb", "size_mb") if k in row}
    return found


def pick_setting(settings, target=0.98):
    """The cheapest setting that reaches the target recall (else the best one)."""
    ok = [(v["p50_ms"], k) for k, v in settings.items() if v["recall"] >= target]
    if ok:
        return min(ok)[1]
    return max(settings.items(), key=lambda kv: kv[1]["recall"])[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--only", default=",".join(CANDIDATES))
    parser.add_argument("--data", default="/work/ann-data")
    parser.add_argument("--corpus", default="/work/shared/corpus/transcripts")
    parser.add_argument("--results", default=None, help="JSON file the figures are appended to")
    parser.add_argument("--child", nargs=3, default=None)
    parser.add_argument("--setting", type=int, default=None)
    parser.add_argument("--zeroing", default=None, metavar="CANDIDATE:N",
                        help="purge by zeroing 1,000 vector slots of a usearch file in place, measured")
    parser.add_argument("--fetch-plain", type=int, default=None, metavar="N",
                        help="fetch float16 vectors by rowid from a plain SQLite table of N rows, measured")
    parser.add_argument("--table", action="store_true", help="print the table of the results file and stop")
    parser.add_argument("--rebuild", action="store_true", help="build again although an earlier run's file is there")
    parser.add_argument("--vectors-only", action="store_true", help="make (or check) the vectors and stop")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        return child(args)
    if args.zeroing:
        os.nice(19)
        name, n = args.zeroing.split(":")
        row = zeroing(args, name, int(n))
        with open(args.results or os.path.join(args.data, "results.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        return print(json.dumps(row))
    if args.fetch_plain:
        os.nice(19)
        row = fetch_plain(args, args.fetch_plain)
        with open(args.results or os.path.join(args.data, "results.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        return print(json.dumps(row))
    if args.table:
        rows = {}
        for line in open(args.results or os.path.join(args.data, "results.jsonl")):
            row = json.loads(line)
            if "load_before" not in row:
                continue
            rows[(row["n"], row["candidate"])] = row     # the latest run of each
        return print_table([rows[k] for k in sorted(rows, key=lambda k: (k[0], CANDIDATES.index(k[1])))])
    os.nice(19)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    make_vectors(args)
    if args.vectors_only:
        return
    print(f"space: median similarity of the nearest / 10th nearest neighbour: {json.dumps(space_stats(args))}",
          flush=True)
    results_path = args.results or os.path.join(args.data, "results.jsonl")
    rows = []
    for n in sorted(args.sizes):
        truth(args, n)
        for name in args.only.split(","):
            row = {"candidate": name, "n": n, "load_before": os.getloadavg()[0]}
            if name == "signindex" and not os.path.exists(index_path(args, name, n)):
                run_child(args, "sqlite-vec-bit", n, "build")
            before = previous_build(results_path, name, n)
            if before and os.path.exists(index_path(args, name, n)) and not args.rebuild:
                row.update(before, build_reused=True)
            else:
                row.update(run_child(args, name, n, "build"))
            if "error" not in row:
                query = run_child(args, name, n, "query")
                row.update(query)
                if "settings" in query:
                    best = pick_setting(query["settings"])
                    row["setting"] = best
                    row.update({k: query["settings"][best][k] for k in ("recall", "p50_ms", "p95_ms")})
                    # open + one query at the chosen setting in a fresh process: what a CLI search pays
                    once = run_child(args, name, n, "query", best) if len(query["settings"]) > 1 else query
                    row["cli_open_ms"], row["cli_first_query_ms"] = once.get("open_ms"), once.get("first_query_ms")
                    row["cli_rss_one_query_mb"] = once.get("rss_one_query_mb")
                    row["wide"] = once.get("wide")
                row.update(run_child(args, name, n, "add"))
                row.update(run_child(args, name, n, "delete"))
            row["load_after"] = os.getloadavg()[0]
            row.pop("settings_all", None)
            rows.append(row)
            with open(results_path, "a") as f:
                f.write(json.dumps(row) + "\n")
            print(format_row(row), flush=True)
    print()
    print_table(rows)
    print(f"load average at end: {os.getloadavg()}")


HEADER = ("| candidate | N | build s | file MB | open ms (fresh) | 1st query ms | p50 ms | p95 ms | recall@10 "
          "| setting | p50 ms / recall@10, 640 asked | RSS 1 query MB | RSS all MB | add 1k s (RSS MB) "
          "| delete 1k s | deleted bytes gone | load |")


def format_row(r):
    if "error" in r and "p50_ms" not in r:
        return f"| {r['candidate']} | {r['n']:,} | error: {r['error'][-200:]!r} |"
    f = lambda key, fmt="{:.0f}": fmt.format(r[key]) if r.get(key) is not None else "-"  # noqa: E731
    w = r.get("wide")
    wide = f"{w['p50_ms']:.1f} / {w['recall']:.3f}" if w else "-"
    gone = ("-" if not r.get("deleted_bytes_before") else "no" if r.get("deleted_bytes_after") else "yes")
    return (f"| {r['candidate']} | {r['n']:,} | {f('build_s')} | {f('size_mb')} | {f('cli_open_ms', '{:.1f}')} "
            f"| {f('cli_first_query_ms', '{:.1f}')} | {f('p50_ms', '{:.2f}')} | {f('p95_ms', '{:.2f}')} "
            f"| {f('recall', '{:.3f}')} | {r.get('setting', '-')} | {wide} | {f('cli_rss_one_query_mb')} "
            f"| {f('rss_all_mb')} | {f('add_s', '{:.2f}')} ({f('add_rss_mb')}) | {f('delete_s', '{:.2f}')} | {gone} "
            f"| {r['load_before']:.1f}-{r['load_after']:.1f} |")


def print_table(rows):
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1))
    for r in rows:
        print(format_row(r))


if __name__ == "__main__":
    main()
