#!/usr/bin/env python3
"""Hook latency: 2 new lines appended to a 3 MB and a 30 MB transcript.

Runs the installed ``record-conversation`` as Claude Code does (a new process,
the payload on stdin) and, interleaved in the same run, the floor
``python -c "import apsw"``. Prints p50/p90 wall time and peak RSS of each,
and the ratios the budget is stated in (DESIGN.md: hook p50 within 1.3x of the
floor; 30 MB within 1.15x of 3 MB). A third case stores into a journal with
the ``journal_redact`` setting on (the budget is stated for the default, off).
Stop payloads carry ``last_assistant_message`` (the text of the last assistant
line appended, as when the line is there in time: the hook checks it is stored).
Three more cases run ``UserPromptSubmit`` with a prompt sharing words with the
journal: with the ``recall_hints`` probe on (the default; budget 1.5x the floor),
the same with the journal's memo of common words emptied before each run (the
first prompt with those words: they are counted again, and remembered), and off
(1.3x). One more stores with the ``exclude_projects`` setting in the config file (a folder
and a glob that do not match: what every turn of someone who uses the setting pays).
``--compare DIR`` adds a case running the hook from another copy of the
package (``git archive HEAD claude_chats | tar -x -C DIR``), interleaved, so a
change is measured against its baseline under the same load. ``--packed`` packs the journals' old
texts first (``outbox.pack_old_texts``), as ``chats sync`` does a day after a message is written.

    .venv/bin/python scripts/bench_hook.py [--runs 40] [--compare DIR] [--packed]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

WORDS = ("the build fails because postgres is not listening on port 5433 so the sync retries with backoff "
         "and the journal keeps every message pending until the database answers again").split()


def synthetic_line(i, session, rng_words=WORDS):
    """A realistic mix: prompts, assistant prose, tool calls, long tool results."""
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/home/dev/project",
            "sessionId": session, "version": "2.1.0", "gitBranch": "main", "uuid": str(uuid.uuid4()),
            "timestamp": f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"}
    text = line_text(i, rng_words)
    kind = i % 4
    if kind == 0:
        base.update(type="user", message={"role": "user", "content": text})
    elif kind == 1:
        base.update(type="assistant", message={"id": f"msg_{i}", "role": "assistant", "content": [
            {"type": "text", "text": text}]})
    elif kind == 2:
        base.update(type="assistant", message={"id": f"msg_{i}", "role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": f"grep -rn {i} src"}}]})
    else:
        output = "\n".join(f"src/module_{k}.py:{k}: {text[:120]}" for k in range(30))
        base.update(type="user", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i - 1}", "content": output}]},
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False})
    return json.dumps(base) + "\n"


def line_text(i, rng_words=WORDS):
    return " ".join(rng_words[(i + k) % len(rng_words)] for k in range(40 + i % 200))


def last_answer(count):
    """The text of the last assistant text line among lines 0..count-1 (line i is one when i % 4 == 1)."""
    last = count - 1 - ((count - 1 - 1) % 4)
    return line_text(last) if last >= 1 else ""


PROMPT = "why does the sync keep retrying when postgres is not listening on port 5433"


def make_transcript(path, size, session):
    written, i = 0, 0
    with open(path, "w") as fh:
        while written < size:
            line = synthetic_line(i, session)
            fh.write(line)
            written += len(line)
            i += 1
    return i


def timed(cmd, stdin_bytes, env):
    """Wall seconds, peak RSS (KiB) and CPU seconds (user + system) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    proc.stdin.write(stdin_bytes)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} exited {proc.returncode}")
    return wall, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def payload_of(case):
    base = {"session_id": case["session"], "transcript_path": case["path"], "cwd": "/home/dev/project"}
    if case["prompt"]:
        return json.dumps({**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}).encode()
    return json.dumps({**base, "hook_event_name": "Stop", "last_assistant_message": last_answer(case["next"])}).encode()


def forget_common_words(home):
    """Empty the journal's memo of common words (``localstore.hints``), as before a prompt whose words no
    prompt had before: the rows, to put back after the run (the other prompt cases find them as they were)."""
    import apsw
    conn = apsw.Connection(os.path.join(home, "journal.db"))
    conn.set_busy_timeout(5000)
    with conn:
        rows = conn.execute("SELECT word, at_least FROM common_words").fetchall()
        conn.execute("DELETE FROM common_words")
    conn.close()
    return rows


def remember_common_words(home, rows):
    import apsw
    conn = apsw.Connection(os.path.join(home, "journal.db"))
    conn.set_busy_timeout(5000)
    with conn:
        conn.execute("DELETE FROM common_words")
        conn.executemany("INSERT INTO common_words (word, at_least) VALUES (?, ?)", rows)
    conn.close()


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--compare", metavar="DIR", help="a folder holding another claude_chats package")
    parser.add_argument("--packed", action="store_true", help="pack the journal's old texts (what `chats sync` "
                                                              "does to messages a day old) before the timed runs: "
                                                              "the hook then reads packed texts (hints, the last answer)")
    args = parser.parse_args()
    hook = shutil.which("record-conversation", path=os.path.dirname(sys.executable)) or \
        shutil.which("record-conversation")
    if not hook:
        raise SystemExit("record-conversation is not installed (pip install -e .)")
    # An installed package has its .pyc files (pip compiles them); an editable
    # install under PYTHONDONTWRITEBYTECODE would compile the source on every run.
    import claude_chats
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(claude_chats.__file__)], check=True)
    work = tempfile.mkdtemp(prefix="bench-hook-")
    # Background sync on, as people run it, with a sync started just now: the
    # hook's check is then what it costs on almost every turn.
    home = os.path.join(work, "home")
    os.makedirs(home, mode=0o700)
    open(os.path.join(home, "sync.started"), "w").close()
    env = dict(os.environ, CLAUDE_CHATS_HOME=home, CLAUDE_CHATS_SYNC_INTERVAL="86400")
    cases = {}
    redacting = dict(env, CLAUDE_CHATS_JOURNAL_REDACT="1")
    excluding = dict(env, CLAUDE_CHATS_HOME=os.path.join(work, "home-exclude"))
    os.makedirs(excluding["CLAUDE_CHATS_HOME"], mode=0o700)
    open(os.path.join(excluding["CLAUDE_CHATS_HOME"], "sync.started"), "w").close()
    with open(os.path.join(excluding["CLAUDE_CHATS_HOME"], "config.toml"), "w") as fh:
        fh.write('exclude_projects = ["/home/dev/clients/acme", "/home/dev/clients/*/secret"]\n')
    variants = [("3MB", 3 << 20, env), ("30MB", 30 << 20, env), ("3MB, journal_redact on", 3 << 20, redacting),
                ("3MB, exclude_projects set", 3 << 20, excluding),
                ("3MB, UserPromptSubmit, recall hints on", 3 << 20, env),
                ("3MB, UserPromptSubmit, recall hints on, words not remembered", 3 << 20, env),
                ("3MB, UserPromptSubmit, recall hints off", 3 << 20, dict(env, CLAUDE_CHATS_RECALL_HINTS="off"))]
    if args.compare:
        subprocess.run([sys.executable, "-m", "compileall", "-q", args.compare], check=True)
        # its own journal: how one version treats the journal's WAL must not help or hurt the other
        other = os.path.join(work, "home-compare")
        os.makedirs(other, mode=0o700)
        open(os.path.join(other, "sync.started"), "w").close()
        variants.append(("3MB, code from --compare", 3 << 20,
                         dict(env, PYTHONPATH=os.path.abspath(args.compare), CLAUDE_CHATS_HOME=other)))
    for label, size, case_env in variants:
        session = str(uuid.uuid4())
        path = os.path.join(work, f"{session}.jsonl")
        count = make_transcript(path, size, session)
        cases[label] = {"path": path, "session": session, "next": count, "env": case_env,
                        "prompt": "UserPromptSubmit" in label, "wall": [], "rss": [], "cpu": []}
        timed([hook], payload_of(cases[label]), case_env)  # first run imports the whole file (not measured)
    if args.packed:   # the transcripts' lines are of 2026-01-01: every text the journal can pack is packed
        # (in a process of its own: a child's peak RSS counts what it shares with this one until its exec; and
        # not the --compare code's journal: a version before this one cannot write a journal this one migrated)
        pack = ("import sys; from claude_chats.localstore import db, outbox; conn = db.connect(sys.argv[1]); "
                "print(f'packed {outbox.pack_old_texts(conn)[0]:,} texts in', sys.argv[1])")
        for folder in {case["env"]["CLAUDE_CHATS_HOME"] for case in cases.values() if "PYTHONPATH" not in case["env"]}:
            subprocess.run([sys.executable, "-c", pack, os.path.join(folder, "journal.db")], check=True)
    floor = {"wall": [], "rss": [], "cpu": []}
    for _ in range(args.runs):
        w, r, c = timed([sys.executable, "-c", "import apsw"], b"", env)
        floor["wall"].append(w)
        floor["rss"].append(r)
        floor["cpu"].append(c)
        for label, case in cases.items():
            with open(case["path"], "a") as fh:
                for _ in range(2):
                    fh.write(synthetic_line(case["next"], case["session"]))
                    case["next"] += 1
            kept = forget_common_words(home) if "not remembered" in label else None
            w, r, c = timed([hook], payload_of(case), case["env"])
            if kept is not None:
                remember_common_words(home, kept)
            case["wall"].append(w)
            case["rss"].append(r)
            case["cpu"].append(c)
    print(f"hook benchmark: {args.runs} runs each, interleaved; python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print(f"{'what':50} {'p50 ms':>8} {'p90 ms':>8} {'CPU p50 ms':>11} {'peak RSS MiB':>13}")
    rows = [("floor: python -c 'import apsw'", floor)] + [(f"hook, 2 lines appended to {k}", v)
                                                         for k, v in cases.items()]
    for name, data in rows:
        print(f"{name:50} {1000 * pct(data['wall'], .5):8.1f} {1000 * pct(data['wall'], .9):8.1f} "
              f"{1000 * pct(data['cpu'], .5):11.1f} {max(data['rss']) / 1024:13.1f}")
    f50 = statistics.median(floor["wall"])
    h3, h30 = statistics.median(cases["3MB"]["wall"]), statistics.median(cases["30MB"]["wall"])
    print(f"ratio hook(3MB) / floor   p50: {h3 / f50:.2f}x  (budget 1.30x)")
    print(f"ratio hook(30MB) / floor  p50: {h30 / f50:.2f}x  (budget 1.30x)")
    print(f"ratio hook(30MB) / hook(3MB) p50: {h30 / h3:.2f}x  (budget 1.15x)")
    hr = statistics.median(cases["3MB, journal_redact on"]["wall"])
    print(f"ratio hook(3MB, journal_redact on) / floor p50: {hr / f50:.2f}x  (+{1000 * (hr - h3):.1f} ms over off)")
    he = statistics.median(cases["3MB, exclude_projects set"]["wall"])
    print(f"ratio hook(3MB, exclude_projects set) / floor p50: {he / f50:.2f}x  (+{1000 * (he - h3):.1f} ms over unset)")
    on = statistics.median(cases["3MB, UserPromptSubmit, recall hints on"]["wall"])
    off = statistics.median(cases["3MB, UserPromptSubmit, recall hints off"]["wall"])
    cold = statistics.median(cases["3MB, UserPromptSubmit, recall hints on, words not remembered"]["wall"])
    print(f"ratio hook(UserPromptSubmit, hints on) / floor p50: {on / f50:.2f}x  (budget 1.50x); "
          f"hints off: {off / f50:.2f}x  (budget 1.30x); on / off {on / off:.2f}x; "
          f"its common words not remembered: {cold / f50:.2f}x")
    if args.compare:
        hc = statistics.median(cases["3MB, code from --compare"]["wall"])
        print(f"ratio hook(3MB, --compare) / floor p50: {hc / f50:.2f}x  (this code: {h3 / f50:.2f}x)")
        cpu = {k: statistics.median(cases[k]["cpu"]) for k in ("3MB", "3MB, code from --compare")}
        print(f"CPU p50, this code / --compare: {1000 * cpu['3MB']:.1f} / {1000 * cpu['3MB, code from --compare']:.1f} ms "
              f"(floor {1000 * statistics.median(floor['cpu']):.1f} ms)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
