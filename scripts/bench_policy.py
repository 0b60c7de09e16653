#!/usr/bin/env python3
"""What each kind of message is worth embedding: the per-kind ablation behind the ``embed_text`` default.

    .venv/bin/python scripts/bench_policy.py [--variant LABEL=EMBED_TEXT ...] [--modes hybrid,semantic]
        [--model PATH.gguf] [--threads 1] [--json OUT]

The shared corpus is imported once into a scratch journal. Each variant (an ``embed_text``
value) is embedded by the sync engine, journal only, into its own space (the value is part of
the space), exactly as ``chats sync`` would; then every labelled query set is searched through
the product's ``Searcher`` (what ``chats eval`` runs), per split:

- ``eval_queries.jsonl`` (35 queries, no split: the set the search was tuned on),
- ``general_heldout.jsonl`` dev / heldout (25 / 25),
- ``tool_output.jsonl`` dev / heldout (38 / 37), whose answers sit mostly in tool output.

Session recall@1 / @10 and MRR per mode, per set and split, then pooled over the dev queries
(98) and the held-out ones (62). The default (``lean``) is the cheapest variant whose pooled
dev figures, hybrid and semantic, are each within 0.01 of embedding everything; the held-out
split is reported, never tuned on. A variant may end in ``;bare=KIND+KIND``: those kinds
embedded after their header only, without the previous message (``Recipe.bare``). Cost per variant: chunks, tokens embedded (the
model's tokenizer, the recipe's prefixes included) and the CPU seconds of embedding them.
A text embedded once is not embedded again for another variant (the same string gives the
same vector): each text's CPU time is measured when it is first embedded (its share of its
batch's, by tokens) and charged to every variant that embeds it, so the CPU column is what
each variant alone would cost, measured under one load. The load average is printed
before and after.
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_llama import CORPUS, ROOT  # noqa: E402 - the corpus where the other issue-14 benchmarks find it

QUERIES = ROOT / "tests" / "data" / "queries"

OFF = "meta=0,command=0,interrupt=0,compact_boundary=0"   # kinds search leaves out by default
BASE = f"context,thinking=0,{OFF}"
VARIANTS = [
    ("all kinds whole (3d1816c's default)", "context"),
    ("thinking=0", "context,thinking=0"),
    ("searched kinds only", BASE),
    ("+ tool_result=2000", f"{BASE},tool_result=2000"),
    ("+ tool_result=1000", f"{BASE},tool_result=1000"),
    ("+ tool_result=500", f"{BASE},tool_result=500"),
    ("+ tool_result=300: lean (the default)", "lean"),
    ("+ tool_result=0", f"{BASE},tool_result=0"),
    ("text and summaries only", f"{BASE},tool_result=0,tool_use=0"),
    ("tool_result=500, results bare", f"{BASE},tool_result=500;bare=tool_result"),
    ("tool_result=1000, tools bare", f"{BASE},tool_result=1000;bare=tool_result+tool_use"),
    ("tool_result=500, tools bare", f"{BASE},tool_result=500;bare=tool_result+tool_use"),
    ("tool_result=300, tools bare", f"{BASE},tool_result=300;bare=tool_result+tool_use"),
    ("tool_result=0, tool calls bare", f"{BASE},tool_result=0;bare=tool_use"),
]
DEV = (("own (eval_queries)", "all"), ("general_heldout", "dev"), ("tool_output", "dev"))   # the default's choice
HELDOUT = (("general_heldout", "heldout"), ("tool_output", "heldout"))                       # reported, not tuned on


def load():
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


class Cached:
    """``provider`` whose document vectors are kept by text, with each text's tokens and CPU seconds.

    ``seen`` collects the texts asked for since the last ``reset`` (a variant's cost)."""

    def __init__(self, provider):
        self.provider, self.cache, self.seen = provider, {}, []

    def __getattr__(self, name):
        return getattr(self.provider, name)

    def reset(self):
        self.seen = []

    def embed_documents(self, texts):
        import numpy as np

        texts = list(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if todo:
            tokens = [self.provider.count_tokens(t) for t in todo]
            started = time.process_time()
            vectors = self.provider.embed_documents(todo)
            cpu = time.process_time() - started
            total = sum(tokens) or 1
            for text, vector, count in zip(todo, vectors, tokens):
                self.cache[text] = (vector, count, cpu * count / total)
        self.seen += texts
        if not texts:
            return np.zeros((0, self.provider.dimensions), dtype=np.float32)
        return np.stack([self.cache[t][0] for t in texts])

    def cost(self):
        """(texts, tokens, CPU seconds) of what was asked for since ``reset``."""
        return (len(self.seen), sum(self.cache[t][1] for t in self.seen), sum(self.cache[t][2] for t in self.seen))


def query_sets():
    """``[(name, split, [evaluate.Query])]``."""
    from claude_chats import evaluate

    out = [("own (eval_queries)", "all", evaluate.load_queries(QUERIES / "eval_queries.jsonl"))]
    for name in ("general_heldout", "tool_output"):
        path = QUERIES / f"{name}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for split in ("dev", "heldout"):
            chosen = [evaluate.parse_query(json.dumps(r), f"{path}:{r['id']}", r["id"]) for r in records
                      if r["split"] == split]
            out.append((name, split, chosen))
    return out


def provider_for(cached, value):
    """``cached`` embedding with the recipe of ``value``: an ``embed_text`` setting, optionally followed
    by ``;bare=KIND+KIND`` (those kinds embedded without the previous message: ``Recipe.bare``)."""
    from dataclasses import replace

    from claude_chats import config
    from claude_chats.models import with_text
    from claude_chats.models.recipe import RecipeProvider

    text, _, bare = value.partition(";bare=")
    settings = config.load({"embed_text": text}, environ={}, path=os.devnull)
    provider = with_text(cached, settings)
    if not bare:
        return settings, provider
    kinds = tuple(sorted(bare.split("+")))
    recipe = replace(provider.recipe, name=f"{provider.recipe.name},bare={'+'.join(kinds)}", bare=kinds)
    return settings, RecipeProvider(cached, recipe)


def run_variant(journal, cached, value, sets, modes):
    from claude_chats import evaluate
    from claude_chats.localstore.vectors import LocalVectors
    from claude_chats.localstore.search import LocalSearch
    from claude_chats.search.searcher import Searcher
    from claude_chats.sync.runner import run_sync

    settings, provider = provider_for(cached, value)
    cached.reset()
    started = time.perf_counter()
    report = run_sync(settings, journal=journal, provider=provider, store=None, local=LocalVectors(journal.conn),
                      lock=False)
    wall = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"{value}: {report.errors}")
    texts, tokens, cpu = cached.cost()
    texts -= 1   # the canary
    searcher = Searcher(LocalSearch(journal), None, lambda: provider)
    scores = {}
    for name, split, queries in sets:
        for result in evaluate.evaluate(searcher, queries, modes):
            scores[(name, split, result.mode)] = result.metrics
    return {"value": value, "space": provider.space.key, "chunks": report.chunks, "messages": report.embedded,
            "tokens": tokens, "cpu": cpu, "wall": wall, "scores": scores}


def table(rows, sets, modes):
    head = ["variant", "chunks", "tokens", "CPU s"]
    for name, split, queries in sets:
        for mode in modes:
            head.append(f"{name.split(' ')[0]} {split} {mode} R@1/R@10/MRR ({len(queries)})")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, r in rows:
        cells = [label, f"{r['chunks']:,}", f"{r['tokens']:,}", f"{r['cpu']:.0f}"]
        for name, split, _ in sets:
            for mode in modes:
                m = r["scores"][(name, split, mode)]
                cells.append(f"{m['recall@1']:.3f} / {m['recall@10']:.3f} / {m['mrr']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pooled_table(rows, sets, modes):
    """R@1 / R@10 / MRR per mode over the dev queries, then over the held-out ones (each query counts once)."""
    sizes = {(name, split): len(queries) for name, split, queries in sets}

    def pooled(row, keys, mode, metric):
        return sum(row["scores"][(*key, mode)][metric] * sizes[key] for key in keys) / sum(sizes[k] for k in keys)

    groups = [("dev", DEV), ("heldout", HELDOUT)]
    head = ["variant", "tokens", "CPU s", *(f"{g} {m} R@1/R@10/MRR" for g, _ in groups for m in modes)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, r in rows:
        cells = [label, f"{r['tokens']:,}", f"{r['cpu']:.0f}"]
        cells += [" / ".join(f"{pooled(r, keys, mode, m):.3f}" for m in ("recall@1", "recall@10", "mrr"))
                  for _, keys in groups for mode in modes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    parser.add_argument("--model", help="GGUF (default: the test model, scripts/build_test_model.py)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", default="hybrid,semantic")
    parser.add_argument("--variant", action="append", metavar="LABEL=EMBED_TEXT",
                        help="instead of the built-in list (repeatable)")
    parser.add_argument("--json", type=pathlib.Path, help="write every figure here")
    args = parser.parse_args()
    from build_test_model import build
    from claude_chats.localstore.journal import Journal, discover
    from claude_chats.models.llama import LlamaProvider

    variants = [tuple(v.split("=", 1)) for v in args.variant] if args.variant else VARIANTS
    modes = tuple(args.modes.split(","))
    model = args.model or build()
    print(f"model {model}; threads {args.threads}; corpus {args.corpus}; start: {load()}", flush=True)
    folder = tempfile.mkdtemp(prefix="bench-policy-")
    journal = Journal.open(os.path.join(folder, "journal.db"))
    stats = journal.import_files(discover([str(args.corpus)]))
    print(f"imported {stats.messages} messages ({journal.counts()})", flush=True)
    sets = query_sets()
    rows = []
    with LlamaProvider(model=model, threads=args.threads) as llama:
        cached = Cached(llama)
        for label, value in variants:
            row = run_variant(journal, cached, value, sets, modes)
            rows.append((label, row))
            print(f"{label} ({value}): {row['chunks']:,} chunks, {row['tokens']:,} tokens, {row['cpu']:.0f} s CPU; "
                  f"{load()}", flush=True)
    print(f"end: {load()}\n")
    print(table(rows, sets, modes))
    print("\npooled\n")
    print(pooled_table(rows, sets, modes))
    if args.json:
        args.json.write_text(json.dumps([{**r, "label": label, "scores": {" ".join(k): v for k, v in r["scores"].items()}}
                                         for label, r in rows], indent=1))


if __name__ == "__main__":
    main()
