#!/usr/bin/env python3
"""Backfill to semantic search: ``chats import`` then ``chats sync`` (journal only), timed end to end.

    .venv/bin/python scripts/bench_backfill.py [--subset NAME] [--compare DIR] [--limit-messages N]
        [--model PATH.gguf] [--env KEY=VALUE ...] [--base-env KEY=VALUE ...] [--new DIR]

Each side (this checkout, or ``--new DIR``; and ``--compare DIR``, e.g. today's main unpacked
with ``git archive 3d1816c | tar -x -C /tmp/base``) runs its own CLI as a subprocess,
``python -c 'from claude_chats.cli import main; main()'`` with that checkout first on
PYTHONPATH, in its own scratch ``CLAUDE_CHATS_HOME`` (no Postgres: DATABASE_URL is removed):

1. ``chats import --json`` of the subset's transcripts (not part of the figures below);
2. with ``--limit-messages N``, every message but a fixed stride sample of about N is marked
   synced in the scratch journal (the same ids in every journal: same files, same import), so
   ``chats sync`` embeds only the sample; the slow baseline needs it on the whole corpus;
3. ``chats sync --json``: wall time, CPU time of the child (user + sys, from
   RUSAGE_CHILDREN), messages/s, chunks/s, and, read back from the scratch journal, the
   characters embedded per message kind (chunk spans; the recipe's prefix is not counted).

With ``--compare`` and ``--limit-messages``, the new code runs on the sample too (the same
messages as the baseline: that ratio is exact) and, with ``--full``, on the whole subset
(its rates compare with the baseline's only as rates; the output says so). The load
average is printed before and after every step, and a fixed CPU loop is timed at the start
and the end of the run (a noisy machine shows in it).

Environment knobs (CLAUDE_CHATS_THREADS, CLAUDE_CHATS_EMBED_TEXT...) are passed through from
this process; ``--env`` adds to both sides, ``--base-env`` to the baseline only.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "transcripts"
if not CORPUS.is_dir():
    CORPUS = pathlib.Path("/work/shared/corpus/transcripts")

# Named subsets: paths relative to the corpus folder (folders import everything below them).
SUBSETS = {
    "all": ["."],
    # Every file of the corpus but the claude-code-log test fixtures: the corpus's real sessions.
    "real": ["agentlogs", "claude-code-log/real_projects", "claude-parser", "cchistory",
             "claude-code-history-viewer", "spotter", "claude-JSONL-browser", "claude-history"],
}
STRIDE_SALT = 7   # the sample is ids with (id * 2654435761 + salt) mod stride == 0: spread over every session

CLI = "import sys; from claude_chats.cli import main; sys.argv[0] = 'chats'; main()"
WHICH = "import claude_chats, sys; print(claude_chats.__file__)"


def load():
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def calibrate(n=3_000_000):
    """Seconds of a fixed pure-Python loop: the same code is slower when the machine is busy."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(n):
        total += i * i % 7
    return time.perf_counter() - wall, time.process_time() - cpu


def child_env(checkout, home, model, extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CLAUDE_CHATS_DB_URL", "PYTHONPATH")}
    env.update({"CLAUDE_CHATS_HOME": str(home), "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1",
                "CLAUDE_CHATS_PROVIDER": env.get("CLAUDE_CHATS_PROVIDER", "llama"),
                "CLAUDE_CHATS_SYNC_INTERVAL": "0"})
    if model:
        env["CLAUDE_CHATS_MODEL"] = str(model)
    env.update(extra)
    return env


def run_child(args, env, label):
    """(stdout, wall s, user s, sys s) of one child process (children run one at a time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # cwd: the scratch home, so that ``python -c`` (which puts the working directory first on
    # sys.path) imports the checkout on PYTHONPATH and not whatever package is where we stand
    proc = subprocess.run([sys.executable, "-c", CLI, *args], env=env, capture_output=True, text=True,
                          cwd=env["CLAUDE_CHATS_HOME"])
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise SystemExit(f"{label}: chats {' '.join(args)} exited {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc.stdout, wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def journal_conn(home):
    import apsw

    return apsw.Connection(str(pathlib.Path(home) / "journal.db"))


def limit_to_sample(home, limit):
    """Mark every message but a stride sample of about ``limit`` synced; returns the sample size."""
    conn = journal_conn(home)
    total = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    stride = max(1, total // limit)
    with conn:
        conn.execute("UPDATE messages SET synced = 1 WHERE (id * 2654435761 + ?) % ? != 0", (STRIDE_SALT, stride))
    left, ids = conn.execute("SELECT count(*), total(id) FROM messages WHERE synced = 0").fetchone()
    conn.close()
    return left, total, int(ids)


def kind_figures(home):
    """Per kind: messages in the run, their content chars, chunks, chars covered by chunks."""
    conn = journal_conn(home)
    rows = conn.execute("""
        SELECT m.kind, count(DISTINCT m.id), sum(length(m.content)),
               (SELECT count(*) FROM chunks c JOIN messages n ON n.id = c.message_id
                WHERE n.kind = m.kind AND n.synced = 0),
               (SELECT coalesce(sum(c.end_char - c.start_char), 0) FROM chunks c
                JOIN messages n ON n.id = c.message_id WHERE n.kind = m.kind AND n.synced = 0)
        FROM messages m WHERE m.synced = 0 GROUP BY m.kind ORDER BY 5 DESC""").fetchall()
    conn.close()
    return rows


def side(label, checkout, corpus, paths, model, extra, limit, scratch):
    """Import then sync with ``checkout``'s code in a fresh scratch home; returns the figures."""
    home = pathlib.Path(tempfile.mkdtemp(prefix=f"backfill-{label}-", dir=scratch))
    env = child_env(checkout, home, model, extra)
    which = subprocess.run([sys.executable, "-c", WHICH], env=env, capture_output=True, text=True,
                           cwd=home).stdout.strip()
    if not which.startswith(str(pathlib.Path(checkout).resolve())):
        raise SystemExit(f"[{label}] imports claude_chats from {which}, not from {checkout}")
    print(f"[{label}] code {which}; scratch {home}")
    out, wall, user, sys_ = run_child(["import", "--json", *[str(corpus / p) for p in paths]], env, label)
    imported = json.loads(out)
    print(f"[{label}] import: {imported['messages']} messages in {imported['sessions']} sessions, "
          f"{imported['bytes'] / 1e6:.1f} MB, {wall:.1f} s wall, {user + sys_:.1f} s CPU")
    if limit:
        sample, total, ids = limit_to_sample(home, limit)
        print(f"[{label}] --limit-messages {limit}: a stride sample of {sample} of {total} messages left pending "
              f"(sum of their ids {ids}: the same in every journal)")
    print(f"[{label}] sync starts, {load()}")
    out, wall, user, sys_ = run_child(["sync", "--json"], env, label)
    report = json.loads(out)
    print(f"[{label}] sync done, {load()}")
    kinds = kind_figures(home)
    figures = {"label": label, "messages": report["pending_before"], "embedded": report["embedded"],
               "chunks": report["chunks"], "wall": wall, "cpu": user + sys_, "user": user, "sys": sys_,
               "sync_seconds": report["seconds"], "errors": report["errors"], "kinds": kinds, "home": home,
               "env": {k: v for k, v in env.items() if k.startswith("CLAUDE_CHATS_") and k != "CLAUDE_CHATS_HOME"}}
    show(figures)
    return figures


def show(f):
    print(f"[{f['label']}] env {' '.join(f'{k}={v}' for k, v in sorted(f['env'].items()))}")
    print(f"[{f['label']}] {f['messages']} messages ({f['embedded']} embedded), {f['chunks']} chunks: "
          f"wall {f['wall']:.1f} s, CPU {f['cpu']:.1f} s (user {f['user']:.1f}, sys {f['sys']:.1f}); "
          f"{f['messages'] / f['wall']:.2f} messages/s, {f['chunks'] / f['wall']:.2f} chunks/s; "
          f"CPU/wall {f['cpu'] / f['wall']:.2f}")
    if f["errors"]:
        print(f"[{f['label']}] errors: {f['errors']}")
    total = sum(r[4] for r in f["kinds"]) or 1
    print(f"  {'kind':16s} {'messages':>8s} {'content chars':>13s} {'chunks':>7s} {'chars embedded':>14s} {'share':>6s}")
    for kind, messages, chars, chunks, embedded in f["kinds"]:
        print(f"  {kind:16s} {messages:8d} {chars or 0:13,d} {chunks:7d} {embedded:14,d} {100 * embedded / total:5.1f}%")


def parse_env(pairs):
    out = {}
    for pair in pairs or ():
        key, _, value = pair.partition("=")
        out[key] = value
    return out


def ratio_line(new, base, what):
    return (f"{what}: {new['label']} vs {base['label']}: messages/s x{(new['messages'] / new['wall']) / (base['messages'] / base['wall']):.2f}, "
            f"chunks/s x{(new['chunks'] / new['wall']) / max(base['chunks'] / base['wall'], 1e-9):.2f}, "
            f"CPU per message x{(base['cpu'] / base['messages']) / (new['cpu'] / new['messages']):.2f} "
            f"(wall {base['wall']:.1f} s -> {new['wall']:.1f} s, CPU {base['cpu']:.1f} s -> {new['cpu']:.1f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS)
    parser.add_argument("--subset", default="all", choices=sorted(SUBSETS))
    parser.add_argument("--model", help="GGUF (default: the test model, scripts/build_test_model.py)")
    parser.add_argument("--new", type=pathlib.Path, default=ROOT, help="checkout of the new code (default: this one)")
    parser.add_argument("--compare", type=pathlib.Path, help="checkout of the baseline code")
    parser.add_argument("--limit-messages", type=int, help="embed only a fixed stride sample of about N messages "
                        "(the baseline always; the new code too, and on everything with --full)")
    parser.add_argument("--full", action="store_true", help="with --limit-messages: also run the new code on everything")
    parser.add_argument("--env", action="append", help="KEY=VALUE for both sides")
    parser.add_argument("--base-env", action="append", help="KEY=VALUE for the baseline only")
    parser.add_argument("--new-env", action="append", help="KEY=VALUE for the new code only")
    parser.add_argument("--variant", nargs="+", action="append", metavar=("LABEL", "KEY=VALUE"),
                        help="another run of the new code with these settings (repeatable): "
                             "--variant lean CLAUDE_CHATS_EMBED_TEXT=context,tool_result=1000,thinking=0")
    parser.add_argument("--keep", action="store_true", help="keep the scratch homes")
    args = parser.parse_args()
    model = args.model
    if model is None:
        sys.path.insert(0, str(ROOT / "scripts"))
        from build_test_model import build

        model = build()
    both = parse_env(args.env)
    scratch = tempfile.mkdtemp(prefix="bench-backfill-")
    paths = SUBSETS[args.subset]
    print(f"subset {args.subset!r} of {args.corpus}: {', '.join(paths)}; model {model}")
    wall, cpu = calibrate()
    print(f"start: {load()}; CPU loop {wall:.3f} s wall for {cpu:.3f} s CPU")
    results = []
    try:
        if args.compare:
            results.append(side("base", args.compare, args.corpus, paths, model,
                                {**both, **parse_env(args.base_env)}, args.limit_messages, scratch))
        new_env = {**both, **parse_env(args.new_env)}
        runs = [("new", new_env)] + [(label, {**new_env, **parse_env(pairs)}) for label, *pairs in args.variant or ()]
        for label, env in runs:
            results.append(side(label, args.new, args.corpus, paths, model, env, args.limit_messages, scratch))
        if args.limit_messages and args.full:
            label, env = runs[-1]
            results.append(side(f"{label}-full", args.new, args.corpus, paths, model, env, None, scratch))
        wall, cpu = calibrate()
        print(f"end: {load()}; CPU loop {wall:.3f} s wall for {cpu:.3f} s CPU")
        if args.compare:
            base = results[0]
            same = "same messages" if args.limit_messages else "same subset"
            print(f"\nagainst {base['label']} ({base['messages']} messages, {base['chunks']} chunks, wall {base['wall']:.1f} s, "
                  f"CPU {base['cpu']:.1f} s):")
            for new in results[1:]:
                full = new["label"].endswith("-full")
                print("  " + ratio_line(new, base, "rates only (everything vs the baseline's sample)" if full else same))
            print("  (on a loaded machine the CPU ratio is the steadier one: wall time depends on what else runs)")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"scratch kept in {scratch}")


if __name__ == "__main__":
    main()
