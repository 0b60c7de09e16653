#!/usr/bin/env python3
"""What a journal holds per message, table by table: this code against the previous code (d9302fe) in
the same run, and ``chats import``'s throughput.

Writes ``--messages`` synthetic Claude Code 2.x messages of transcripts once (``bench_doctor``'s
generator: ~1.8 KB of text a message, 2,000 a session, 40 projects, a year), then for each code, into
a fresh journal: ``chats import`` as a whole process (messages/s), the bytes per message of every
table and index (SQLite's ``dbstat``: the pages each b-tree holds, and their payload) and of the file;
then the kept lines compressed as ``chats sync`` does first (``outbox.pack_raw_lines``) and the same
figures again (the pages freed by that are reused by later writes, the file does not shrink: hence
its size and the live bytes both). Prints the load average beside every timing; run it at
``nice -n 10``.

    nice -n 10 .venv/bin/python scripts/bench_journal_size.py [--messages 20000]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import apsw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_doctor import chats, env_for, write_transcripts  # noqa: E402
from bench_purge import BASE_REV, load, previous_code  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = "/tmp/storage-size-base"
PACK = ("import sys; from claude_chats.localstore import db, outbox; "
        "conn = db.connect(sys.argv[1]); print(outbox.pack_raw_lines(conn))")


def per_table(journal):
    """{name: (bytes of its pages, payload bytes)}, plus ``(file)`` and ``(free pages)``; and the message count."""
    conn = apsw.Connection(journal, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        n = conn.execute("SELECT count(*) FROM messages").fetchall()[0][0]
        sizes = {name: (size, payload) for name, size, payload in conn.execute(
            "SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name")}
        count, free, page = (conn.execute(f"PRAGMA {p}").fetchall()[0][0]
                             for p in ("page_count", "freelist_count", "page_size"))
    finally:
        conn.close()
    sizes["(free pages)"] = (free * page, 0)
    sizes["(file)"] = (count * page, 0)
    return n, sizes


def measure(label, code, home, projects, messages):
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    env = env_for(home, code)
    journal = os.path.join(home, "journal.db")
    started = time.perf_counter()
    out = subprocess.run([chats(), "import", projects, "--json"], env=env, capture_output=True, text=True,
                         cwd=code, check=True)
    wall = time.perf_counter() - started
    stored = json.loads(out.stdout)["messages"]
    print(f"  {label:5} chats import: {stored:,} messages in {wall:.1f} s = {stored / wall:,.0f} msgs/s  "
          f"load {load()}", flush=True)
    n, imported = per_table(journal)
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", PACK, journal], env=env, capture_output=True, text=True, cwd=code,
                         check=True)
    print(f"  {label:5} kept lines compressed as sync does: {out.stdout.strip()} rows in "
          f"{time.perf_counter() - started:.1f} s  load {load()}", flush=True)
    _, packed = per_table(journal)
    return n, imported, packed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--data", default="/work/storage-data/size")
    args = parser.parse_args()
    previous_code(BASE)
    print(f"this code: {ROOT}; previous: {BASE_REV} in {BASE}; nice {os.nice(0)}")
    projects = os.path.join(args.data, f"transcripts-{args.messages}")
    if not os.path.isdir(projects):
        write_transcripts(projects, args.messages)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(projects) for f in files)
    print(f"{args.messages:,} messages of transcripts, {size / args.messages:,.0f} B a message, in {projects}")
    results = {label: measure(label, code, os.path.join(args.data, label), projects, args.messages)
               for label, code in (("prev", BASE), ("this", ROOT))}
    columns = [(label, stage) for label in results for stage in ("import", "packed")]
    names = sorted({name for _, imported, packed in results.values() for name in (*imported, *packed)},
                   key=lambda name: -max(r[1].get(name, (0,))[0] for r in results.values()))
    print(f"\nbytes per message (pages; payload in brackets) {'':10}" +
          "".join(f"{label + ' ' + stage:>22}" for label, stage in columns))
    for name in names:
        cells = []
        for label, stage in columns:
            n, imported, packed = results[label]
            size, payload = (imported if stage == "import" else packed).get(name, (0, 0))
            cells.append(f"{size / n:>10,.0f} ({payload / n:>7,.0f})" if payload else f"{size / n:>10,.0f} {'':9}")
        if any(c.split()[0] != "0" for c in cells):
            print(f"  {name:55}" + "".join(f"{c:>22}" for c in cells))
    for label, stage in columns:
        n, imported, packed = results[label]
        sizes = imported if stage == "import" else packed
        live = sizes["(file)"][0] - sizes["(free pages)"][0]
        print(f"  {label} {stage:7}: file {sizes['(file)'][0] / n:,.0f} B/msg, live pages {live / n:,.0f} B/msg")


if __name__ == "__main__":
    main()
