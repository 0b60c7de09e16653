#!/usr/bin/env python3
"""The hook's cost on the turns that tell Claude something: SessionStart(startup), SessionStart(compact) and
a UserPromptSubmit that gets hints, beside one that gets none, as fresh processes (as Claude Code runs it).

Builds a scratch journal (five sessions of a project whose first prompts hold a token, 2,000 other
messages, one compacted session of 300 messages) and runs each case ``--runs`` times with this code and,
interleaved, with the code of ``--compare DIR`` (a folder holding another ``claude_chats``, e.g.
``git archive <commit> claude_chats | tar -x -C DIR``). Prints p50 / p90 wall time and the load average.
Only these turns render a context (and import ``redact``, hence ``re``); every other turn's cost is
``scripts/bench_hook.py``'s.

    .venv/bin/python scripts/bench_context.py --compare DIR [--runs 40]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKEN = "ghp_" + "Zr8Lk2Vn5Qm9Xw3Tb6Yc1Hd4Jf7Gs0Pa2Ue5Ri8"


def line(session, role, text, i):
    message = {"role": "user", "content": text} if role == "user" else {
        "id": f"m{i}", "role": "assistant", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": role, "uuid": str(uuid.uuid4()), "sessionId": session, "cwd": "/work/proj",
                       "timestamp": f"2026-11-{1 + i % 20:02d}T10:00:{i % 60:02d}Z", "message": message}) + "\n"


def run(code, payload, env):
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=json.dumps(payload).encode(),
                          capture_output=True, env=dict(env, PYTHONPATH=code), cwd=code)
    took = time.perf_counter() - started
    if proc.returncode or proc.stderr:
        raise SystemExit(f"the hook failed: {proc.stderr.decode()[-500:]}")
    return took, proc.stdout


def journal(folder, env, code):
    """The scratch journal, written by the hook of ``code``; the compacted session's transcript."""
    for s in range(5):
        path = folder / f"sess-{s}.jsonl"
        with open(path, "w") as fh:
            fh.write(line(f"sess-{s}", "user", f"deploy {s} with GITHUB_TOKEN={TOKEN} and the heron loader " * 3, s))
            for i in range(1, 400):
                fh.write(line(f"sess-{s}", "user" if i % 2 == 0 else "assistant",
                              f"filler {s} {i} about the pipeline and its stages, nothing else " * 2, i))
        run(code, {"session_id": f"sess-{s}", "transcript_path": str(path), "hook_event_name": "Stop"}, env)
    compacted = folder / "sess-c.jsonl"
    with open(compacted, "w") as fh:
        for i in range(300):
            fh.write(line("sess-c", "user" if i % 2 == 0 else "assistant",
                          f"prompt {i}: password is Zq8!vR2#mK9$wL4x and the kestrel parser " * 2, i))
        fh.write(json.dumps({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                             "uuid": "b1", "sessionId": "sess-c", "timestamp": "2026-11-30T00:00:00Z"}) + "\n")
    run(code, {"session_id": "sess-c", "transcript_path": str(compacted), "hook_event_name": "Stop"}, env)
    return compacted


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--compare", metavar="DIR", required=True, help="a folder holding another claude_chats")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-context-"))
    (work / "proj").mkdir()
    env = dict(os.environ, CLAUDE_CHATS_HOME=str(work / "chats"), CLAUDE_CHATS_SYNC_INTERVAL="0",
               CLAUDE_CONFIG_DIR=str(work / "claude"))
    codes = {"this code": str(ROOT), "--compare": os.path.abspath(args.compare)}
    compacted = journal(work / "proj", env, codes["this code"])
    base = {"transcript_path": "/nowhere/sess-new.jsonl", "session_id": "sess-new", "cwd": "/work/proj"}
    cases = {
        "SessionStart(startup)": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "SessionStart(compact)": {**base, "session_id": "sess-c", "transcript_path": str(compacted),
                                  "hook_event_name": "SessionStart", "source": "compact"},
        "UserPromptSubmit, hints": {**base, "hook_event_name": "UserPromptSubmit",
                                    "prompt": "the heron loader deploy token again"},
        "UserPromptSubmit, none": {**base, "hook_event_name": "UserPromptSubmit",
                                   "prompt": "add a unit test for this function please"},
    }
    load = os.getloadavg()
    times = {(case, code): [] for case in cases for code in codes}
    for r in range(args.runs):
        for case, payload in cases.items():
            for code in (list(codes) if r % 2 else list(codes)[::-1]):
                took, out = run(codes[code], payload, env)
                times[(case, code)].append(took)
    print(f"hook context benchmark: {args.runs} runs each, interleaved; load average "
          f"{load[0]:.1f} before, {os.getloadavg()[0]:.1f} after; {os.cpu_count()} cores")
    for case in cases:
        this, other = (sorted(times[(case, code)]) for code in codes)
        p50, o50 = statistics.median(this), statistics.median(other)
        p90, o90 = this[int(0.9 * len(this))], other[int(0.9 * len(other))]
        print(f"{case:26s} p50 {1e3 * p50:6.1f} ms (--compare {1e3 * o50:6.1f}, x{p50 / o50:.2f})   "
              f"p90 {1e3 * p90:6.1f} ms (--compare {1e3 * o90:6.1f})")


if __name__ == "__main__":
    main()
