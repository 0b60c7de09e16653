#!/usr/bin/env python3
"""FTS5's secure-delete cost a document, on an index as inserted against the same index after
``optimize`` (one segment), built the journal's way (external content, its tokenizer, secure-delete on,
``PRAGMA secure_delete``): does keeping the index merged bring ``chats purge`` to its budget?

Documents: 20-300 words drawn from 50,000 with Zipf weights (seeded). Each variant is built once under
``--data`` and reused; then 200 consecutive documents (a session's rows are consecutive) are deleted in
one transaction, as a purge does. Prints ms a document and the load average.

    nice -n 10 .venv/bin/python scripts/bench_fts_delete.py [--documents 100000] [--data /tmp/fts-delete]
"""

import argparse
import os
import random
import time

import apsw

WORDS = [f"w{i}" for i in range(50_000)]
WEIGHTS = [1 / (i + 1) for i in range(50_000)]
DELETED = 200


def load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def build(path, documents, merged):
    rng = random.Random(1)
    conn = apsw.Connection(path)
    conn.execute("PRAGMA journal_mode = WAL; PRAGMA secure_delete = ON")
    conn.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, content TEXT)")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(content, content='m', content_rowid='id', "
                 "tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO f(f, rank) VALUES ('secure-delete', 1)")
    for _ in range(documents // 1000):
        with conn:
            for _ in range(1000):
                text = " ".join(rng.choices(WORDS, WEIGHTS, k=rng.randint(20, 300)))
                conn.execute("INSERT INTO m(content) VALUES (?)", (text,))
                conn.execute("INSERT INTO f(rowid, content) VALUES (last_insert_rowid(), ?)", (text,))
    if merged:
        conn.execute("INSERT INTO f(f) VALUES ('optimize')")
    conn.close()


def delete_some(path, documents):
    conn = apsw.Connection(path)
    conn.execute("PRAGMA secure_delete = ON")
    pages = conn.execute("SELECT count(*) FROM f_data").fetchall()[0][0]
    first = random.Random(2).randint(1, documents - DELETED)
    started = time.perf_counter()
    with conn:
        for rid, text in conn.execute("SELECT id, content FROM m WHERE id BETWEEN ? AND ?",
                                      (first, first + DELETED - 1)).fetchall():
            conn.execute("INSERT INTO f(f, rowid, content) VALUES ('delete', ?, ?)", (rid, text))
            conn.execute("DELETE FROM m WHERE id = ?", (rid,))
    conn.close()
    return (time.perf_counter() - started) / DELETED * 1000, pages


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--data", default="/tmp/fts-delete")
    args = parser.parse_args()
    os.makedirs(args.data, exist_ok=True)
    print(f"{args.documents:,} documents; load {load()}")
    for merged in (False, True):
        name = "optimized" if merged else "as inserted"
        path = os.path.join(args.data, f"{args.documents}-{'merged' if merged else 'plain'}.db")
        if not os.path.exists(path):
            started = time.perf_counter()
            build(path + ".part", args.documents, merged)
            os.replace(path + ".part", path)
            for suffix in ("-wal", "-shm"):
                if os.path.exists(path + ".part" + suffix):
                    os.remove(path + ".part" + suffix)
            print(f"  built {name} in {time.perf_counter() - started:.0f} s")
        scratch = path + ".scratch"
        with open(path, "rb") as src, open(scratch, "wb") as dst:   # each run deletes from a fresh copy
            dst.write(src.read())
        ms, pages = delete_some(scratch, args.documents)
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(scratch + suffix):
                os.remove(scratch + suffix)
        print(f"  {name}: secure-delete {ms:.1f} ms a document ({pages:,} index pages); load {load()}")


if __name__ == "__main__":
    main()
