#!/usr/bin/env python3
"""LoCoMo retrieval benchmark: turn-level and session-level recall of each search mode.

    python scripts/bench_locomo.py ../shared/bench/locomo/locomo10.json \\
        --model "$(python scripts/build_test_model.py)" [--conversations conv-26,conv-30]

Each LoCoMo conversation becomes Claude Code transcripts (one session per
LoCoMo session; the two speakers as user and assistant; the session's date as
the timestamps; image captions kept as text), imported through the real import
path (``Journal.import_files``) into a fresh journal, embedded by the sync
engine with the configured (or ``--model``) embedding model, and searched with
the real ``Searcher`` over the journal in each mode. ``--changes`` picks which of
``claude_chats.retrieval``'s changes apply (default: all of them; ``none``: the
search code as it is): ``or`` (full text matches any query term), ``header``
(each turn embedded as "<speaker> (<date>): <text>"), ``context`` (the same after
the session's previous text message), ``neighbours`` (a turn's
full-text score borrows from the turns around it), ``weights`` (semantic leg
at half the full-text leg's weight in the fusion).

Scores (see ../shared/bench/locomo/README.md): questions of categories 1-4 with
evidence (adversarial excluded), evidence ids normalised; turn recall@k =
|gold turns in the top k| / |gold turns|, averaged; session recall@5 = the same
over sessions ordered by their best-ranked turn.

Embeddings are cached by (space, text) under ``--cache`` (default
``~/.cache/claude-chats-bench``): re-runs only pay for texts not seen before.
"""

import argparse
import hashlib
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
import uuid as uuidlib
from datetime import datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from claude_chats import evaluate, retrieval  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("fulltext", "semantic", "hybrid")
CHANGES = ("or", "header", "context", "neighbours", "weights")   # see claude_chats.retrieval
DEFAULT_CHANGES = ("or", "header", "neighbours", "weights")
NAMESPACE = uuidlib.UUID("6d4c2b3a-6f1e-4e0b-9a57-1c0c3b1e2d10")
DEPTH = 50          # turns ranked per question (enough for session recall@5 and turn recall@25)


# -- LoCoMo -> transcripts ---------------------------------------------------------------

def session_numbers(conversation):
    """Session numbers that have turns (conv-26 has dates for sessions without turns)."""
    return sorted(int(k.split("_")[1]) for k, v in conversation.items()
                  if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v)


def session_start(text):
    """``"1:56 pm on 8 May, 2023"`` -> datetime."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")


def turn_text(turn):
    text = turn.get("text") or ""
    caption = turn.get("blip_caption")
    return f"{text}\n[image: {caption}]" if caption else text


def session_id(sample_id, number):
    return str(uuidlib.uuid5(NAMESPACE, f"{sample_id}/session_{number}"))


def turn_uuid(sample_id, dia_id):
    return str(uuidlib.uuid5(NAMESPACE, f"{sample_id}/{dia_id}"))


def transcript_lines(sample, number):
    """Claude Code JSONL objects of one LoCoMo session (speaker_a as user, speaker_b as assistant)."""
    conv = sample["conversation"]
    sid, start = session_id(sample["sample_id"], number), session_start(conv[f"session_{number}_date_time"])
    cwd = f"/locomo/{sample['sample_id']}"
    lines = []
    for i, turn in enumerate(conv[f"session_{number}"]):
        stamp = (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
                "version": "2.1.0", "gitBranch": "main", "uuid": turn_uuid(sample["sample_id"], turn["dia_id"]),
                "timestamp": stamp}
        if turn["speaker"] == conv["speaker_a"]:
            lines.append({**base, "type": "user", "message": {"role": "user", "content": turn_text(turn)}})
        else:
            lines.append({**base, "type": "assistant", "message": {
                "id": f"msg_{base['uuid'][:12]}", "type": "message", "role": "assistant", "model": "locomo",
                "content": [{"type": "text", "text": turn_text(turn)}]}})
    return lines


def write_transcripts(sample, folder):
    """One ``<session>.jsonl`` per LoCoMo session under ``folder``; returns the paths."""
    project = os.path.join(folder, "-locomo-" + sample["sample_id"])
    os.makedirs(project, exist_ok=True)
    paths = []
    for number in session_numbers(sample["conversation"]):
        path = os.path.join(project, session_id(sample["sample_id"], number) + ".jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for line in transcript_lines(sample, number):
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        paths.append(path)
    return paths


def labels(sample, mode):
    """What the embedded header calls each role: the LoCoMo speakers' names, or the roles themselves."""
    if mode == "roles":
        return None
    return {"user": sample["conversation"]["speaker_a"], "assistant": sample["conversation"]["speaker_b"]}


# -- questions ---------------------------------------------------------------------------

_ID = re.compile(r"D(\d+):(\d+)")


def normalise_evidence(raw, known):
    """Evidence ids as ``D<session>:<turn>`` that exist: splits "D8:6; D9:17" and "D9:1 D4:4",
    repairs "D:11:26" and "D30:05", drops bare "D" and ids of turns that do not exist."""
    out = []
    for item in raw:
        for match in _ID.finditer(str(item).replace("D:", "D")):
            dia = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia in known and dia not in out:
                out.append(dia)
    return out


def questions(sample):
    """``[(question, gold dia_ids, category)]`` of categories 1-4 that have evidence."""
    known = {t["dia_id"] for n in session_numbers(sample["conversation"])
             for t in sample["conversation"][f"session_{n}"]}
    out = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        gold = normalise_evidence(qa.get("evidence") or [], known)
        if gold:
            out.append((qa["question"], gold, qa["category"]))
    return out


def dia_session(dia_id):
    return int(dia_id.split(":")[0][1:])


# -- embedding cache --------------------------------------------------------------------

class CachedProvider:
    """An embedding provider whose vectors are cached on disk by (space, kind, text).

    Honest reuse: the same model embeds the same text to the same vector. Every
    other attribute (space, input window, chunking) is the wrapped provider's.
    """

    def __init__(self, provider, folder):
        import numpy as np

        self._np, self.provider = np, provider
        os.makedirs(folder, exist_ok=True)
        key = hashlib.sha256(provider.space.key.encode()).hexdigest()[:16]
        self._db = sqlite3.connect(os.path.join(folder, f"embeddings-{key}.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, blob BLOB)")
        self.computed = self.reused = 0

    def __getattr__(self, name):
        return getattr(self.provider, name)

    def _cached(self, texts, kind, embed):
        keys = [hashlib.sha256(f"{kind}\0{t}".encode()).hexdigest() for t in texts]
        found = {}
        for i in range(0, len(keys), 500):
            batch = keys[i:i + 500]
            found.update(self._db.execute(f"SELECT k, blob FROM v WHERE k IN ({','.join('?' * len(batch))})",
                                          batch).fetchall())
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in found}.items())
        if todo:
            vectors = embed([t for _, t in todo])
            self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)",
                                 [(k, v.astype("float32").tobytes()) for (k, _), v in zip(todo, vectors)])
            self._db.commit()
            found.update((k, v.astype("float32").tobytes()) for (k, _), v in zip(todo, vectors))
        self.computed += len(todo)
        self.reused += len(texts) - len(todo)
        return self._np.stack([self._np.frombuffer(found[k], dtype="float32") for k in keys]) if keys else \
            self._np.zeros((0, self.provider.dimensions), dtype="float32")

    def embed_documents(self, texts):
        return self._cached(list(texts), "document", self.provider.embed_documents)

    def embed_query(self, text):
        return self._cached([text], "query", lambda ts: [self.provider.embed_query(t) for t in ts])[0]

    def close(self):
        self._db.close()
        self.provider.close()


# -- one conversation ---------------------------------------------------------------------

def build(sample, folder, provider, changes, label_mode="names"):
    """A journal holding the conversation, embedded: (journal, {message uuid: dia_id})."""
    from claude_chats.localstore.journal import Journal

    files = write_transcripts(sample, os.path.join(folder, "projects"))
    journal = Journal.open(os.path.join(folder, "journal.db"))
    stats = journal.import_files(files)
    if stats.errors:
        raise SystemExit(f"{sample['sample_id']}: import failed: {stats.errors[:3]}")
    embed(journal, provider, changes, labels(sample, label_mode))
    by_uuid = {turn_uuid(sample["sample_id"], t["dia_id"]): t["dia_id"]
               for n in session_numbers(sample["conversation"]) for t in sample["conversation"][f"session_{n}"]}
    stored = [uuid for uuid, in journal.conn.execute("SELECT uuid FROM messages")]
    return journal, {uuid: by_uuid.get(uuid.split("#")[0]) for uuid in stored}


def recipe(changes):
    if "context" in changes:
        return retrieval.CONTEXT
    return retrieval.HEADER if "header" in changes else None


def embed(journal, provider, changes, names=None):
    if recipe(changes):
        retrieval.index_journal(journal, provider, labels=names, recipe=recipe(changes))
    else:
        evaluate.embed_journal(journal, provider)     # what `chats sync` embeds: the content


def searcher_for(journal, provider, changes):
    """The stock ``Searcher`` (no change), or one with ``changes`` of ``claude_chats.retrieval``."""
    from claude_chats.localstore.search import LocalSearch
    from claude_chats.search import Searcher

    if not changes:
        return Searcher(LocalSearch(journal), None, lambda: provider)
    return retrieval.searcher(
        journal, lambda: provider, recipe=recipe(changes), match="any" if "or" in changes else "all",
        weight=retrieval.NEIGHBOUR_WEIGHT if "neighbours" in changes else 0,
        weights=retrieval.LEG_WEIGHTS if "weights" in changes else {"fulltext": 1.0, "semantic": 1.0})


def rank_turns(searcher, question, mode, dia_of):
    result = searcher.search(question, mode=mode, limit=DEPTH, per_session=0, context=0, max_chars=None,
                             candidates=200)
    return [d for d in (dia_of.get(h["uuid"]) for h in result["hits"]) if d]


def score(ranked, gold):
    sessions = evaluate.distinct(dia_session(d) for d in ranked)
    gold_sessions = {dia_session(d) for d in gold}
    return {"turn@5": evaluate.recall_at(ranked, gold, 5), "turn@10": evaluate.recall_at(ranked, gold, 10),
            "turn@25": evaluate.recall_at(ranked, gold, 25),
            "session@5": evaluate.recall_at(sessions, gold_sessions, 5)}


def run_sample(sample, provider, changes, modes, workdir, label_mode="names"):
    folder = tempfile.mkdtemp(prefix=sample["sample_id"] + "-", dir=workdir)
    started = time.perf_counter()
    journal, dia_of = build(sample, folder, provider, changes, label_mode)
    built = time.perf_counter() - started
    searcher = searcher_for(journal, provider, changes)
    rows = []
    try:
        for question, gold, category in questions(sample):
            for mode in modes:
                rows.append({"sample": sample["sample_id"], "mode": mode, "category": category,
                             **score(rank_turns(searcher, question, mode, dia_of), gold)})
    finally:
        journal.close()
    return rows, built


# -- the person's own kind of queries ----------------------------------------------------------

def run_own(queries, transcripts, provider, changes, modes, workdir):
    """Session-level ``evaluate.ModeResult`` per mode of a ``chats eval`` query file over Claude Code
    transcripts, imported and embedded like a LoCoMo conversation (roles as labels)."""
    from claude_chats.localstore.journal import Journal, discover

    journal = Journal.open(os.path.join(tempfile.mkdtemp(prefix="own-", dir=workdir), "journal.db"))
    try:
        journal.import_files(discover([transcripts]))
        embed(journal, provider, changes)
        return evaluate.evaluate(searcher_for(journal, provider, changes), evaluate.load_queries(queries), modes)
    finally:
        journal.close()


# -- report --------------------------------------------------------------------------------

def summary(rows, modes):
    out = {}
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        out[mode] = {"questions": len(mine), **evaluate.mean([_metrics(r) for r in mine]),
                     "turn@5 by category": {CATEGORIES[c]: round(evaluate.mean(
                         [_metrics(r) for r in mine if r["category"] == c]).get("turn@5", 0), 3)
                         for c in CATEGORIES if any(r["category"] == c for r in mine)}}
    return out


def _metrics(row):
    return {k: row[k] for k in ("turn@5", "turn@10", "turn@25", "session@5")}


def render(result):
    headers = ["mode", "questions", "turn R@5", "turn R@10", "turn R@25", "session R@5"]
    body = [[mode, s["questions"], *(f"{s[k]:.3f}" for k in ("turn@5", "turn@10", "turn@25", "session@5"))]
            for mode, s in result["modes"].items()]
    lines = [evaluate.table(headers, body), ""]
    for mode, s in result["modes"].items():
        cats = ", ".join(f"{name} {value:.3f}" for name, value in s["turn@5 by category"].items())
        lines.append(f"turn R@5 by category ({mode}): {cats}")
    return "\n".join(lines)


def open_provider(model):
    from claude_chats.models import get_provider

    return get_provider(None, model=model, threads=int(os.environ.get("CLAUDE_CHATS_THREADS", "2"))) \
        if model else get_provider()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="path of locomo10.json")
    parser.add_argument("--model", help="embedding model (GGUF path or name; default: the configured model)")
    parser.add_argument("--conversations", help="comma-separated sample ids (default: all 10)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--changes", default=",".join(DEFAULT_CHANGES),
                        help=f"retrieval changes to apply, comma-separated, from {', '.join(CHANGES)} "
                             f"(default: {','.join(DEFAULT_CHANGES)}; 'none': the search code as it is)")
    parser.add_argument("--labels", choices=("names", "roles"), default="names",
                        help="with 'header': embed a turn as '<speaker name> (<date>): ...' or '<role> (<date>): ...'")
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/claude-chats-bench"),
                        help="embedding cache folder ('' to disable)")
    parser.add_argument("--own", metavar="QUERIES.jsonl", help="also score a `chats eval` query file "
                        "(session recall, MRR, nDCG) over --own-transcripts with the same changes")
    parser.add_argument("--own-transcripts", metavar="DIR", help="Claude Code transcripts for --own")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    with open(args.data, encoding="utf-8") as fh:
        samples = json.load(fh)
    if bool(args.own) != bool(args.own_transcripts):
        parser.error("--own and --own-transcripts go together")
    if args.conversations:
        wanted = args.conversations.split(",")
        samples = [s for s in samples if s["sample_id"] in wanted]
    modes = [m for m in args.modes.split(",") if m]
    changes = [c for c in args.changes.split(",") if c and c != "none"]
    unknown = set(changes) - set(CHANGES)
    if unknown:
        parser.error(f"unknown change(s) {', '.join(sorted(unknown))}; choose from {', '.join(CHANGES)}")
    provider = open_provider(args.model)
    if args.cache:
        provider = CachedProvider(provider, args.cache)
    rows, seconds = [], 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as workdir:
        for sample in samples:
            sample_rows, built = run_sample(sample, provider, changes, modes, workdir, args.labels)
            rows += sample_rows
            seconds += built
            print(f"{sample['sample_id']}: {len(sample_rows) // len(modes)} questions, built in {built:.1f} s",
                  file=sys.stderr)
    own = None
    if args.own:
        with tempfile.TemporaryDirectory(prefix="own-") as workdir:
            own = run_own(args.own, args.own_transcripts, provider, changes, modes, workdir)
    result = {"changes": changes, "labels": args.labels if recipe(changes) else None, "model": provider.space.describe(),
              "conversations": [s["sample_id"] for s in samples], "modes": summary(rows, modes),
              "embedded_now": getattr(provider, "computed", None), "from_cache": getattr(provider, "reused", None),
              "own": [r.as_dict() for r in own] if own else None}
    provider.close()
    print(json.dumps(result, indent=2) if args.json else render(result))
    if own and not args.json:
        print(f"\n{args.own} over {args.own_transcripts}:\n{evaluate.results_table(own)}")


if __name__ == "__main__":
    main()
