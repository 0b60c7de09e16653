#!/usr/bin/env python3
"""The full-text index in parts (``localstore.ftsparts``) at a year of history: ``chats purge`` of one
session, full-text search and ``chats doctor``, this code against the previous code (``--base``, default
73bf6c4: one FTS5 table) on the same journal, in the same run, as whole processes.

The journal: ``scripts/bench_scale.py``'s corpus of ``--size`` messages (``<data>/<size>/claude``, built by
``bench_scale.py --corpus-only``), imported by the previous code with ``chats import`` into
``<data>/<size>/home-parts`` (reused by later runs with ``--reuse``; the first step rebuilds it). No
vectors: what is measured is the full-text index, and a purge's vector work is the same in both codes.
In this order, on that one journal:

1. the previous code: ``chats purge`` of one session (of ``--victims`` + 1 sessions of about ``--purge-size``
   messages each), then full-text searches (``QUERIES``, the first run of each untimed), ``chats doctor``;
2. this code: ``chats sync`` (no model and no database: it embeds nothing and splits the index into
   parts, once: what an existing journal pays after the upgrade), timed;
3. this code: the same searches (same hits asked), ``chats doctor``, then ``chats purge`` of each other
   victim, then ``chats import`` of a new 1,000-message session and the purge of it (a session in the head).

Prints every figure with the load average beside it, and the ratio of the medians. Run it at ``nice -n 10``.

    nice -n 10 .venv/bin/python scripts/bench_fts_parts.py [--size 1000000] [--reuse] [--victims 3]
"""

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import uuid
from datetime import timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale_corpus  # noqa: E402
from bench_scale import CHATS, QUERIES, ROOT, load, prepare_base, run, say  # noqa: E402


def env_for(home, code):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE_CHATS_", "DATABASE_URL", "OLLAMA_", "CLAUDE_CONFIG_DIR"))}
    env.update(CLAUDE_CHATS_HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, "claude"), HOME=home,
               PYTHONPATH=code, CLAUDE_CHATS_SYNC_INTERVAL="86400",
               CLAUDE_CHATS_PROVIDER="ollama", OLLAMA_BASE_URL="http://127.0.0.1:9")   # no model answers
    return env


def victims(journal, n, size):
    """``n`` sessions of about ``size`` messages (the nearest sizes), spread over the year."""
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT session_id, count(*), min(id) FROM messages JOIN session_numbers ON number = session GROUP BY session_id").fetchall()
    finally:
        conn.close()
    near = sorted(rows, key=lambda r: (abs(r[1] - size), r[0]))[:n * 4]
    near.sort(key=lambda r: r[2])
    step = max(1, len(near) // n)
    return [(s, c) for s, c, _ in near[::step][:n]]


def tables(journal):
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name GLOB "
                            "'messages_fts_[0-9]*' AND sql LIKE 'CREATE VIRTUAL%'").fetchone()[0] + 1
    finally:
        conn.close()


def timed(label, cmd, env):
    before = load()
    r = run(cmd, env)
    status = "" if r["rc"] == 0 else f"  exit {r['rc']}: {r['err'].strip()[-300:]}"
    say(f"  {label:52} {r['wall']:8.2f} s  RSS {r['rss']:6.0f} MB  [load {before} -> {load()}]{status}")
    return r


def searches(label, env):
    """Each query in full-text mode, as ``chats search`` processes: {query: (wall, total ms, hit ids)}."""
    out = {}
    for query, filters in QUERIES:
        args = [CHATS, "search", query, "--mode", "fulltext", "--json", "--limit", "10"]
        if filters.get("project"):
            args += ["--project", filters["project"]]
        for key in ("since", "until"):
            if filters.get(key):
                args += [f"--{key}", filters[key]]
        run(args, env)                                          # the page cache warm: not timed
        r = run(args, env)
        result = json.loads(r["out"]) if r["rc"] == 0 else {}
        total = (result.get("timings_ms") or {}).get("total", float("nan"))
        out[query] = (r["wall"], total, [(h["session_id"], h["seq"]) for h in result.get("hits", [])])
    walls = [w for w, _, _ in out.values()]
    totals = [t for _, t, _ in out.values()]
    say(f"  {label:52} full text p50 {statistics.median(walls):.2f} s wall, {statistics.median(totals):.0f} ms in "
        f"search (max {max(totals):.0f} ms), {len(out)} queries  [load {load()}]")
    return out


def new_session(home, n):
    words = scale_corpus.Words(seed=11, stream=100_000)
    session = str(uuid.uuid4())
    gen = scale_corpus.Session(words, random.Random(session), session, "/home/dev/fts-parts",
                               scale_corpus.START + timedelta(days=364), n, "fts-parts")
    folder = os.path.join(home, "new", "-home-dev-fts-parts")
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, f"{session}.jsonl"), "w") as fh:
        for obj in gen.lines():
            fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
    return session, folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--data", default="/work/scale-data")
    parser.add_argument("--base", default="73bf6c4")
    parser.add_argument("--victims", type=int, default=3, help="sessions purged by this code (one more by the base)")
    parser.add_argument("--purge-size", type=int, default=1000, help="messages of each purged session, about")
    parser.add_argument("--reuse", action="store_true", help="the journal a run left, as it is (already split)")
    args = parser.parse_args()
    base = prepare_base(args.base)
    corpus = os.path.join(args.data, str(args.size), "claude", "projects")
    if not os.path.isdir(corpus):
        raise SystemExit(f"no corpus at {corpus}: run scripts/bench_scale.py --sizes {args.size} --corpus-only")
    home = os.path.join(args.data, str(args.size), "home-parts")
    journal = os.path.join(home, "journal.db")
    prev, this = env_for(home, base), env_for(home, ROOT)
    say(f"this: {ROOT}; base: {args.base} in {base}; {os.cpu_count()} cores; nice {os.nice(0)}; {args.size:,} messages")
    if not args.reuse:
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(os.path.join(home, "claude"))
        r = timed(f"base  chats import ({args.size:,} messages)", [CHATS, "import", corpus, "--json"], prev)
        if r["rc"]:
            raise SystemExit("the import failed")
    picked = victims(journal, args.victims + 1, args.purge_size)
    say(f"  victims: {', '.join(f'{s} ({c:,} messages)' for s, c in picked)}; index tables {tables(journal)}")
    results = {}
    if not args.reuse:   # the base's purge first: both codes then search the same messages
        results["base_purge"] = timed(f"base  chats purge ({picked[0][1]:,} messages)",
                                      [CHATS, "purge", "--session", picked[0][0], "--yes", "--json"], prev)["wall"]
        results["base_search"] = searches("base  chats search --mode fulltext", prev)
        timed("base  chats doctor", [CHATS, "doctor", "--json"], prev)
        r = timed("this  chats sync (splits the index, once)", [CHATS, "sync", "--json"], this)
        say(f"    moved {json.loads(r['out'] or '{}').get('fts_moved')} messages; index tables {tables(journal)}")
    results["this_search"] = searches(f"this  chats search --mode fulltext ({tables(journal)} tables)", this)
    timed("this  chats doctor", [CHATS, "doctor", "--json"], this)
    walls = [timed(f"this  chats purge ({c:,} messages)", [CHATS, "purge", "--session", s, "--yes", "--json"],
                   this)["wall"] for s, c in picked[1:]]
    session, folder = new_session(home, 1000)
    timed("this  chats import (a new 1,000-message session)", [CHATS, "import", folder, "--json"], this)
    walls.append(timed("this  chats purge (that session, in the head)",
                       [CHATS, "purge", "--session", session, "--yes", "--json"], this)["wall"])
    say(f"  this code's purges: {', '.join(f'{w:.2f}' for w in walls)} s")
    if "base_search" in results:
        same = sum(results["base_search"][q][2] == results["this_search"][q][2] for q in results["this_search"])
        b = statistics.median(t for _, t, _ in results["base_search"].values())
        t = statistics.median(t for _, t, _ in results["this_search"].values())
        say(f"  full text in search, p50: this/base {t / b:.2f} ({t:.0f} / {b:.0f} ms); the same hits for {same} of "
            f"{len(QUERIES)} queries (ranked as in one table, localstore/bm25)")
        say(f"  purge: this/base {statistics.median(walls) / results['base_purge']:.3f} "
            f"({statistics.median(walls):.2f} / {results['base_purge']:.2f} s)")


if __name__ == "__main__":
    main()
