#!/usr/bin/env python3
"""Precision and recall of the hook's recall hints on a labelled set of prompts.

Imports the corpus (default ../shared/corpus/transcripts) into a scratch journal
with the product's import path, then runs ``localstore.hints.recall_hints`` (what
the UserPromptSubmit hook runs) on every prompt of the labelled set
(tests/data/queries/recall_hints.jsonl: prompts typed in a project, some in an
existing session, labelled whether they should get a hint and to which sessions).

A hinted prompt is right when one of its pointers is a relevant session (or that
session's parent, or a subagent of it); precision = right / hinted, recall =
right / prompts that should be hinted. The threshold is chosen on the ``dev``
split (``--grid`` prints dev only); ``heldout`` is reported, never tuned on.

It then measures the ``startup_sessions`` list (what a new session is told on SessionStart:
``localstore.recall.startup_context``) on the prompts typed as a session's first (no current
session): how often the list names a session the prompt continues (a relevant one), against
how often the recall hints on that same prompt point at one. The labelled prompts carry no
time, so "most recent" is taken at the corpus's end: a relevant session may be listed that
came after the moment the prompt stands for (an upper bound for the list).

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

from claude_chats.localstore import hints as hintsmod  # noqa: E402
from claude_chats.localstore import recall  # noqa: E402
from claude_chats.config import SETTINGS  # noqa: E402
from claude_chats.localstore.journal import Journal, discover  # noqa: E402

STARTUP_DEFAULT = SETTINGS["startup_sessions"].default


def root(session):
    return session.split(":agent-")[0]


def score(records, conn, split, strength):
    hinted = right = wanted = found = 0
    for r in records:
        if r["split"] != split:
            continue
        hints = hintsmod.recall_hints(conn, r["prompt"], r["current_session_id"], strength=strength)
        relevant = set(r["relevant_session_ids"])
        ok = any(h["session_id"] in relevant or root(h["session_id"]) in {root(x) for x in relevant}
                 for h in hints)
        hinted += bool(hints)
        right += bool(hints) and ok
        wanted += r["should_hint"]
        found += r["should_hint"] and ok
    return {"hinted": hinted, "precision": right / hinted if hinted else 1.0,
            "recall": found / wanted if wanted else 0.0, "prompts": sum(r["split"] == split for r in records)}


def startup_score(records, conn, split, count):
    """For the first prompts of new sessions: lists shown, lists naming a relevant session, and the
    same prompts' hints pointing at one."""
    starts = shown = useful = wanted = hinted_right = 0
    for r in records:
        if r["split"] != split or r["current_session_id"]:
            continue
        starts += 1
        wanted += r["should_hint"]
        relevant = {root(x) for x in r["relevant_session_ids"]}
        context = recall.startup_context(conn, None, r["cwd"], count) or ""
        listed = {root(line.split('session_id "', 1)[1].split('"', 1)[0]) for line in context.splitlines()[1:]
                  if 'session_id "' in line}
        shown += bool(listed)
        useful += bool(listed & relevant)
        hints = hintsmod.recall_hints(conn, r["prompt"], None)
        hinted_right += any(root(h["session_id"]) in relevant for h in hints)
    return {"starts": starts, "shown": shown, "useful": useful, "wanted": wanted, "hinted_right": hinted_right}


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
            s = score(records, journal.conn, split, hintsmod.HINT_STRENGTH)
            print(f"{split:8s} strength {hintsmod.HINT_STRENGTH:4.2f} (shipped): precision {s['precision']:.2f}  "
                  f"recall {s['recall']:.2f}  ({s['hinted']} of {s['prompts']} prompts hinted)")
        for split in ("dev", "heldout"):
            for count in (1, 3, 5):
                s = startup_score(records, journal.conn, split, count)
                shipped = " (shipped)" if count == STARTUP_DEFAULT else ""
                print(f"{split:8s} startup_sessions {count}{shipped}: {s['starts']} new sessions, a list shown in "
                      f"{s['shown']}, naming a session the first prompt continues in {s['useful']} "
                      f"({s['useful'] / max(s['shown'], 1):.2f}); of the {s['wanted']} that continue one, the list "
                      f"names it for {s['useful']}, the hints on the first prompt for {s['hinted_right']}")
        started = time.perf_counter()
        for r in records:
            hintsmod.recall_hints(journal.conn, r["prompt"], r["current_session_id"])
        per = (time.perf_counter() - started) / len(records) * 1e3
        print(f"probe cost: {per:.2f} ms per prompt (in process; the hook's figures: scripts/bench_hook.py)")
        started = time.perf_counter()
        for r in records:
            recall.startup_context(journal.conn, None, r["cwd"], STARTUP_DEFAULT)
        per = (time.perf_counter() - started) / len(records) * 1e3
        print(f"startup list cost: {per:.2f} ms per new session (in process)")
        journal.close()


if __name__ == "__main__":
    main()
