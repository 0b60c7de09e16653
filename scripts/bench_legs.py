#!/usr/bin/env python3
"""Where a warm search's time goes, step by step, on bench_scale's journal (issue 22: the MCP server's warm
hybrid p50, budget 30 ms at 1M messages).

The searcher is opened in this process over the journal alone (``stores.open_searcher``; with
``--for-model`` exactly as ``chats mcp`` opens it: results redacted, the embedding on a deadline); the embedding model answers over the Ollama wire from a child process (bench_scale's stand-in,
the real model for queries), so its CPU competes with the search's as it does beside ``chats mcp``. Each
step is timed by wrapping the method that does it: its time (summed over its calls in one search) and
when it ended, from the search's start, as p50 over bench_scale's queries. Three passes, each warmed
first: full text alone, semantic alone, hybrid (the query embedded and the vector leg run while the
full-text leg runs). The step that ends last before ``fuse`` is the hybrid search's critical path. Each pass
also says the CPU a search took, in this process and in the model's (its searches' CPU over their wall: how
many of the machine's cores they kept busy; two busy cores mean only less work makes them faster).

    nice -n 5 .venv/bin/python scripts/bench_legs.py [--size 1000000] [--data /work/scale-data]
        [--rounds 3] [--code DIR] [--for-model] [--modes fulltext,semantic,hybrid] [--home DIR]

The journal is bench_scale's (``<data>/<size>/home-this``, made by ``bench_scale.py --sizes SIZE``), or
``--home``'s (a copy in another layout, searched by the code of ``--code``)."""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_scale  # noqa: E402

MODES = ("fulltext", "semantic", "hybrid")
# (module, class or None, method, label) of the steps timed; the modules are imported from --code
STEPS = [
    ("claude_chats.localstore.search", "LocalSearch", "fulltext", "full-text leg"),
    ("claude_chats.localstore.search", "LocalSearch", "_any_match", "  its words chosen (_any_match)"),
    ("claude_chats.localstore.search", "LocalSearch", "_cut", "  its tables cut (_cut)"),
    ("claude_chats.localstore.search", "LocalSearch", "_fulltext", "  its matches ranked (_fulltext)"),
    ("claude_chats.localstore.search", "LocalSearch", "_around", "  their neighbours found (_around)"),
    ("claude_chats.search.core", "Plan", "query_vector", "query vector waited for"),
    ("claude_chats.localstore.search", "LocalSearch", "semantic", "vector leg"),
    ("claude_chats.localstore.ivf", "Reader", "refresh", "  index state (refresh)"),
    ("claude_chats.localstore.ivf", "Reader", "_probe", "  lists chosen (_probe)"),
    ("claude_chats.localstore.ivf", "Reader", "_scan", "  lists read and scored (_scan)"),
    ("claude_chats.localstore.ivf", "Query", "coarse", "    of which scored (coarse)"),
    ("claude_chats.localstore.ivf", "Reader", "_fine", "  fine codes read (_fine)"),
    ("claude_chats.localstore.search", "LocalSearch", "_preselected", "  messages of the best (_preselected)"),
    ("claude_chats.localstore.search", None, "fuse", "fuse"),
    ("claude_chats.localstore.search", "LocalSearch", "hydrate", "hydrate"),
    ("claude_chats.localstore.search", "LocalSearch", "neighbours", "neighbours"),
    ("claude_chats.search.searcher", None, "render", "render"),
]


def serve_model(folder):
    """The child: bench_scale's Ollama stand-in in query mode, its port on stdout, until stdin closes."""
    import numpy as np
    vectors = bench_scale.Vectors()
    vectors.use(np.load(os.path.join(os.path.dirname(folder), "anchors.npy")), os.path.join(folder, "document-keys.npy"))
    vectors.mode = "queries"
    vectors.real(["a first query loads the model"])
    print(bench_scale.serve(vectors), flush=True)
    sys.stdin.read()


class Spans:
    """Each wrapped step's (start, end) in the search running now, from any thread."""

    def __init__(self):
        self.now = defaultdict(list)

    def wrap(self, owner, name, label):
        original = getattr(owner, name)
        now = self.now

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                now[label].append((started, time.perf_counter()))   # list.append: one step, whatever the thread
        setattr(owner, name, timed)


def search_kwargs(filters):
    kwargs = {"project_path": filters["project"]} if "project" in filters else {}
    kwargs.update({k: filters[k] for k in ("since", "until") if k in filters})
    return kwargs


def cpu_seconds(pid=None):
    """CPU seconds (user and system) this process (``pid`` None) or process ``pid`` has used so far."""
    if pid is None:
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_utime + used.ru_stime
    fields = bench_scale.proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_pass(searcher, spans, mode, rounds, model_pid, cpu):
    """Each search's wall, its steps' (times, ends), its ``timings_ms``; ``cpu`` gets the pass's CPU per
    search, this process's and the model's (``model_pid``), and the wall they were spent in."""
    walls, steps = [], defaultdict(lambda: ([], []))   # label -> (times, ends), one each a search
    timings = defaultdict(list)
    searcher.search("a first search of this mode", mode=mode)
    own, model = cpu_seconds(), cpu_seconds(model_pid)
    for _ in range(rounds):
        for query, filters in bench_scale.QUERIES:
            spans.now.clear()
            started = time.perf_counter()
            result = searcher.search(query, mode=mode, **search_kwargs(filters))
            walls.append((time.perf_counter() - started) * 1e3)
            for key, value in result.get("timings_ms", {}).items():
                timings[key].append(value)
            for label, seen in list(spans.now.items()):
                steps[label][0].append(sum(end - start for start, end in seen) * 1e3)
                steps[label][1].append((max(end for _, end in seen) - started) * 1e3)
    cpu.update(own=(cpu_seconds() - own) * 1e3 / len(walls), model=(cpu_seconds(model_pid) - model) * 1e3 / len(walls),
               wall=statistics.mean(walls))
    return walls, steps, timings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--data", default="/work/scale-data")
    parser.add_argument("--rounds", type=int, default=3, help="passes over bench_scale's queries per mode")
    parser.add_argument("--code", default=os.path.dirname(HERE), help="the claude_chats tree measured")
    parser.add_argument("--for-model", action="store_true",
                        help="open the searcher as the MCP server does (results redacted, the embedding on a deadline)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated: fulltext,semantic,hybrid")
    parser.add_argument("--home", help="the home whose journal is searched (default: <data>/<size>/home-this)")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = os.path.join(args.data, str(args.size))
    if args.serve_model:
        return serve_model(folder)
    home = args.home or os.path.join(folder, "home-this")
    if not os.path.exists(os.path.join(home, "journal.db")):
        raise SystemExit(f"no journal at {home}: make it with scripts/bench_scale.py --sizes {args.size}")
    model = subprocess.Popen([sys.executable, __file__, "--serve-model", "--size", str(args.size), "--data", args.data],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(model.stdout.readline())
        os.environ.update(bench_scale.env_for(home, args.code, port))
        sys.path.insert(0, args.code)
        import importlib

        from claude_chats import stores
        spans = Spans()
        for module, owner, name, label in STEPS:
            found = importlib.import_module(module)
            spans.wrap(getattr(found, owner) if owner else found, name, label)
        print(f"{args.code}: {args.size:,} messages, {len(bench_scale.QUERIES)} queries x {args.rounds}, "
              f"the model in process {model.pid}"
              f"{', opened for the model' if args.for_model else ''}; load {bench_scale.load()}", flush=True)
        searcher = stores.open_searcher(use_postgres=False, for_model=args.for_model)
        try:
            for mode in args.modes.split(","):
                cpu = {}
                walls, steps, timings = run_pass(searcher, spans, mode, args.rounds, model.pid, cpu)
                print(f"\n{mode}: wall p50 {statistics.median(walls):.1f} ms, mean {statistics.mean(walls):.1f}; "
                      + ", ".join(f"timings_ms.{k} p50 {statistics.median(v):.1f}" for k, v in timings.items())
                      + f"; load {bench_scale.load()}")
                print(f"  CPU a search: this process {cpu['own']:.1f} ms, the model's {cpu['model']:.1f} ms: "
                      f"{(cpu['own'] + cpu['model']) / cpu['wall']:.2f} of {os.cpu_count()} cores busy over the mean wall")
                print(f"  {'step':42} {'searches':>8} {'time p50':>9} {'ends p50':>9}")
                for _module, _owner, _name, label in STEPS:
                    if label in steps:
                        times, ends = steps[label]
                        print(f"  {label:42} {len(times):8} {statistics.median(times):9.2f} {statistics.median(ends):9.2f}")
        finally:
            searcher.close()
    finally:
        model.stdin.close()
        model.wait()


if __name__ == "__main__":
    main()
