#!/usr/bin/env python3
"""Precision and recall of the hook's recall hints on a labelled set of prompts.

Imports the corpus (default ../shared/corpus/transcripts) into a scratch journal
with the product's import path, then runs ``localstore.recall.recall_hints`` (what
the UserPromptSubmit hook runs) on every prompt of the labelled set
(tests/data/queries/recall_hints.jsonl: prompts typed in a project, some in an
existing session, labelled whether they should get a hint and to which sessions).

A hinted prompt is right when one of its pointers is a relevant session (or that
session's parent, or a subagent of it); precision = right / hinted, recall =
right / prompts that should be hinted. The threshold is chosen on the ``dev``
split (``--grid`` prints dev only); ``heldout`` is reported, never tuned on.

    .venv/bin/python scripts/bench_hints.py [--corpus DIR] [--set FILE] [--grid]
"""

import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_chats.localstore import recall  # noqa: E402
from claude_chats.localstore.journal import Journal, discover  # noqa: E402


def root(session):
    return session.split(":agent-")[0]


def score(records, conn, split, strength):
    hinted = right = wanted = found = 0
    for r in records:
        if r["split"] != split:
            continue
        hints = recall.recall_hints(conn, r["prompt"], r["current_session_id"], strength=strength)
        relevant = set(r["relevant_session_ids"])
        ok = any(h["session_id"] in relevant or root(h["session_id"]) in {root(x) for x in relevant}
                 for h in hints)
        hinted += bool(hints)
        right += bool(hints) and ok
        wanted += r["should_hint"]
        found += r["should_hint"] and ok
    return {"hinted": hinted, "precision": right / hinted if hinted else 1.0,
            "recall": found / wanted if wanted else 0.0, "prompts": sum(r["split"] == split for r in records)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "transcripts"))
    parser.add_argument("--set", default=str(ROOT / "tests" / "data" / "queries" / "recall_hints.jsonl"))
    parser.add_argument("--grid", action="store_true", help="also the dev split over thresholds")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in open(args.set, encoding="utf-8") if line.strip()]
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal.open(os.path.join(folder, "journal.db"))
        stats = journal.import_files(discover([args.corpus]))
        print(f"corpus: {len(stats.sessions)} sessions, {stats.messages:,} messages; "
              f"set: {len(records)} prompts ({sum(r['should_hint'] for r in records)} should be hinted)")
        if args.grid:
            for strength in (1.0, 1.3, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.2, 2.5):
                s = score(records, journal.conn, "dev", strength)
                print(f"  dev     strength {strength:4.2f}: precision {s['precision']:.2f}  recall "
                      f"{s['recall']:.2f}  ({s['hinted']} of {s['prompts']} prompts hinted)")
        for split in ("dev", "heldout"):
            s = score(records, journal.conn, split, recall.HINT_STRENGTH)
            print(f"{split:8s} strength {recall.HINT_STRENGTH:4.2f} (shipped): precision {s['precision']:.2f}  "
                  f"recall {s['recall']:.2f}  ({s['hinted']} of {s['prompts']} prompts hinted)")
        started = time.perf_counter()
        for r in records:
            recall.recall_hints(journal.conn, r["prompt"], r["current_session_id"])
        per = (time.perf_counter() - started) / len(records) * 1e3
        print(f"probe cost: {per:.2f} ms per prompt (in process; the hook's figures: scripts/bench_hook.py)")
        journal.close()


if __name__ == "__main__":
    main()
