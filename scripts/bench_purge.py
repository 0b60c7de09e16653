#!/usr/bin/env python3
"""``chats purge --session X --yes`` at 100k and 1M messages, as a whole process: this code against the
previous code (d9302fe) in the same run, on a copy of the journal each.

The journals are those of ``scripts/bench_doctor.py`` (``--source``, default /work/doctor-data: synthetic
Claude Code transcripts imported with ``chats import``, 2,000 messages a session), copied under ``--data``
(default /work/storage-data) and never written in place. On the copy, in this order:

1. the previous code purges one session (FTS ``optimize`` and a whole-file ``VACUUM``, every time);
2. this code purges a second: the copy was written before migration 0006, so this first purge rewrites
   the file once (what an existing journal pays once, after the upgrade);
3. this code purges ``--purges`` more sessions: the purge of a journal erased in place (no rewrite);
4. this code imports a new 2,000-message session (``chats import``): the file does not grow, the free
   pages the purges left are reused.

``--upgraded`` replaces step 2 by marking the copy as this code's own journal (migrated, clean since its
first migration), for the steady state alone; ``--keep`` leaves the copy, ``--reuse`` starts from it
(steps 1 and 2 skipped). Prints the wall time of each process, the journal's size and free pages after it, and the load average
beside every figure. Run it at ``nice -n 10``, one benchmark at a time.

    nice -n 10 .venv/bin/python scripts/bench_purge.py [--sizes 100000,1000000] [--purges 3]
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
import uuid

import apsw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_doctor import chats, env_for, line, text_of, vocabulary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE_REV = "d9302fe"
BASE = "/tmp/storage-base"


def previous_code(folder, rev=BASE_REV):
    """The package as it was at ``rev``, unpacked into ``folder`` (run it with PYTHONPATH there)."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    subprocess.run(f"git -C {ROOT} archive {rev} claude_chats | tar -x -C {folder}", shell=True, check=True)


def load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def sessions(journal, n):
    """``n`` sessions of the journal, the largest first (what a person purges: a whole session)."""
    conn = apsw.Connection(journal, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [r[0] for r in conn.execute("SELECT session_id FROM messages JOIN session_numbers ON number = session GROUP BY session_id "
                                           "ORDER BY count(*) DESC, session_id LIMIT ?", (n,))]
    finally:
        conn.close()


def pages(journal):
    conn = apsw.Connection(journal, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [conn.execute(f"PRAGMA {p}").fetchall()[0][0] for p in ("page_count", "freelist_count", "page_size")]
    finally:
        conn.close()


def run(label, what, cmd, env, journal):
    started = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=env["PYTHONPATH"])
    wall = time.perf_counter() - started
    count, free, size = pages(journal)
    note = "" if out.returncode == 0 else f"  FAILED rc={out.returncode}: {out.stderr.strip()[-200:]}"
    print(f"  {label:5} {what:34} {wall:8.2f} s  file {count * size / 1e9:6.3f} GB, {free:>8,} free pages  "
          f"load {load()}{note}", flush=True)
    return wall


def new_session(home, messages=2000):
    """A transcript of a new session under ``home``/new-projects, for ``chats import``."""
    rng = random.Random(messages)
    words = vocabulary(rng, 5000)
    folder = os.path.join(home, "new-projects", "-home-dev-fresh")
    shutil.rmtree(os.path.dirname(folder), ignore_errors=True)
    os.makedirs(folder)
    session, parent = str(uuid.UUID(int=rng.getrandbits(128))), None
    with open(os.path.join(folder, f"{session}.jsonl"), "w") as fh:
        for i in range(messages):
            uid = str(uuid.UUID(int=rng.getrandbits(128)))
            fh.write(line("user" if i % 2 == 0 else "assistant", session, uid, parent,
                          f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z", "/home/dev/fresh",
                          text_of(rng, words, i)))
            parent = uid
    return os.path.dirname(folder)


def mark_upgraded(journal):
    """The copy as this code's own journal is (clean since its first migration): migrated, the state
    key set, so the first purge does not rewrite the file (``--upgraded``: the steady state alone)."""
    env = env_for(os.path.dirname(journal), ROOT)
    subprocess.run([sys.executable, "-c", "import sys; from claude_chats.localstore import db, erase; "
                    "c = db.connect(sys.argv[1]); db.set_state(c, erase.ERASED_IN_PLACE, 'bench_purge --upgraded')",
                    journal], env=env, cwd=ROOT, check=True)


def bench(n, source, data, purges, upgraded=False, reuse=False, keep=False):
    src = os.path.join(source, str(n), "journal.db")
    home = os.path.join(data, f"purge-{n}")
    journal = os.path.join(home, "journal.db")
    if not (reuse and os.path.exists(journal)):
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(home)
        started = time.perf_counter()
        shutil.copyfile(src, journal)
        print(f"\n{n:,} messages: {src} copied to {journal} in {time.perf_counter() - started:.0f} s", flush=True)
    count, free, size = pages(journal)
    print(f"\n{n:,} messages: {journal} ({count * size / 1e9:.2f} GB, {free:,} free pages)", flush=True)
    subprocess.run(f"cat {journal} > /dev/null", shell=True, check=True)   # the page cache warm for both
    victims = sessions(journal, 2 + purges)
    base, this = env_for(home, BASE), env_for(home, ROOT)
    purge = [chats(), "purge", "--yes", "--session"]
    if not reuse:
        run("prev", "purge (VACUUM each time)", purge + [victims[0]], base, journal)
    if upgraded:
        mark_upgraded(journal)
    else:
        run("this", "purge, first after the upgrade", purge + [victims[1]], this, journal)
    walls = [run("this", f"purge {i + 1} (erased in place)", purge + [victim], this, journal)
             for i, victim in enumerate(victims[2:])]
    run("this", "import a new 2,000-message session", [chats(), "import", new_session(home)], this, journal)
    if walls:
        print(f"  this code, purge of a clean journal: best {min(walls):.2f} s, worst {max(walls):.2f} s")
    if not keep:
        shutil.rmtree(home, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--purges", type=int, default=3)
    parser.add_argument("--source", default="/work/doctor-data")
    parser.add_argument("--data", default="/work/storage-data")
    parser.add_argument("--upgraded", action="store_true",
                        help="Mark the copy as this code's own journal instead of timing its one-time rewrite.")
    parser.add_argument("--reuse", action="store_true",
                        help="Reuse the copy a run left (no copy, no purge by the previous code).")
    parser.add_argument("--keep", action="store_true", help="Keep the copy for --reuse.")
    args = parser.parse_args()
    previous_code(BASE)
    print(f"this code: {ROOT}; previous: {BASE_REV} in {BASE}; nice {os.nice(0)}; SQLite {apsw.sqlite_lib_version()}")
    for n in (int(s) for s in args.sizes.split(",")):
        bench(n, args.source, args.data, args.purges, args.upgraded, args.reuse, args.keep)


if __name__ == "__main__":
    main()
