"""A hook command that observes what Claude Code hands a hook, and when.

Usage (as a hook command in settings.json):

    python3 -S probe_hook.py LOG_JSONL [--journal DB --snapshots DIR] [--replay DIR] [-- COMMAND ...]

It reads the hook payload from stdin and, before anything else, looks at the
transcript named in it (size, line count, the uuid and text of the last
assistant line, whether ``last_assistant_message`` is already in the file).
With a COMMAND (the hook ``chats install`` registered) it then runs that
command with the same stdin and records its exit status, time and stderr;
with ``--journal`` it finally takes a consistent copy of the journal (SQLite's
backup API) into ``DIR/NNN-EVENT.db``: the journal exactly as that hook run
left it. One JSON line per run goes to LOG_JSONL. Stdlib only, exits 0 always
(or the command's status), prints only what the command printed.

``--replay DIR``: when Claude Code fired the event before writing the turn's
final assistant line (it is not in the transcript when the probe starts), the
probe also replays that hook run deterministically: the transcript as it was
at that moment and the journal as it was then are copied to ``DIR/NNN/``, and
COMMAND runs again on the copies (payload ``transcript_path`` and
``CLAUDE_CHATS_HOME`` pointed at them) while the bytes Claude Code wrote later
are appended to the copy ``REPLAY_DELAY`` seconds after that run started: Claude
Code's late write, at a fixed delay instead of whenever a busy machine lets it
land. ``entry["replay"]["journal"]`` is the journal as the replayed run left it.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

REPLAY_DELAY = 1.0  # seconds; Claude Code's own late write lands within ~0.12 s


def transcript_state(path, needle=None, prompt=None):
    state = {"path": path, "exists": False}
    # a transcript not there yet holds neither the answer nor the prompt (under load, Claude Code
    # can fire the first turn's Stop before it has created the file)
    if needle is not None:
        state["has_last_assistant_message"] = False
    if prompt is not None:
        state["has_prompt"] = False
    if not path:
        return state
    try:
        with open(path, "rb") as fh:
            state["inode"] = os.fstat(fh.fileno()).st_ino
            data = fh.read()
    except OSError:
        return state
    lines = data.split(b"\n")
    complete = lines[:-1]
    state.update(exists=True, size=len(data), lines=len(complete), torn=bool(lines[-1]))
    last_assistant = None
    found = False
    has_prompt = False
    types = []
    for raw in complete:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        types.append(rec.get("type"))
        if prompt and rec.get("type") == "user":
            content = (rec.get("message") or {}).get("content")
            texts = [content] if isinstance(content, str) else [
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            has_prompt = has_prompt or any(prompt.strip() == t.strip() for t in texts)
        if rec.get("type") == "assistant":
            content = (rec.get("message") or {}).get("content")
            texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            if texts:
                last_assistant = {"uuid": rec.get("uuid"), "text": "\n".join(texts)}
                if needle and needle.strip() and needle.strip() in last_assistant["text"]:
                    found = True
    state["last_assistant"] = last_assistant
    state["last_type"] = types[-1] if types else None
    if needle is not None:
        state["has_last_assistant_message"] = found
    if prompt is not None:
        state["has_prompt"] = has_prompt
    return state


def backup(journal, dest):
    src = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=10)
    dst = sqlite3.connect(dest)
    src.backup(dst)
    dst.close()
    src.close()


def prepare_replay(replay_dir, payload, state, journal):
    """Copies of the transcript (as read at hook start) and of the journal, for a replay."""
    os.makedirs(replay_dir, exist_ok=True)
    rdir = os.path.join(replay_dir, f"{len(os.listdir(replay_dir)):03d}")
    home = os.path.join(rdir, "home")
    os.makedirs(home)
    path = payload["transcript_path"]
    side = os.path.join(rdir, os.path.basename(path))
    head = b""
    if state.get("exists"):  # else the whole file lands late, as it did for Claude Code's own run
        with open(path, "rb") as fh:
            head = fh.read(state["size"])
        with open(side, "wb") as fh:
            fh.write(head)
    if journal and os.path.exists(journal):
        backup(journal, os.path.join(home, "journal.db"))
    for name in ("config.toml",):
        src = os.path.join(os.path.dirname(journal or ""), name)
        if os.path.exists(src):
            shutil.copy(src, home)
    return {"dir": rdir, "home": home, "transcript": side, "source": path, "offset": len(head)}


def run_replay(command, payload, replay):
    def late_write():
        time.sleep(REPLAY_DELAY)
        with open(replay["source"], "rb") as fh:
            fh.seek(replay["offset"])
            rest = fh.read()
        with open(replay["transcript"], "ab") as fh:
            fh.write(rest)

    threading.Thread(target=late_write, daemon=True).start()
    env = dict(os.environ, CLAUDE_CHATS_HOME=replay["home"])
    body = json.dumps(dict(payload, transcript_path=replay["transcript"])).encode()
    t1 = time.time()
    proc = subprocess.run(command, input=body, capture_output=True, env=env)
    replay.update(rc=proc.returncode, seconds=round(time.time() - t1, 4), delay=REPLAY_DELAY,
                  stderr=proc.stderr.decode("utf-8", "replace"))
    live = os.path.join(replay["home"], "journal.db")
    if os.path.exists(live):  # a self-contained copy (the hook leaves its commit in the WAL)
        replay["journal"] = os.path.join(replay["dir"], "after.db")
        backup(live, replay["journal"])
    return replay


def main(argv):
    t0 = time.time()
    log = argv[0]
    journal = snapshots = replay_dir = None
    command = []
    rest = argv[1:]
    while rest:
        arg = rest.pop(0)
        if arg == "--journal":
            journal = rest.pop(0)
        elif arg == "--snapshots":
            snapshots = rest.pop(0)
        elif arg == "--replay":
            replay_dir = rest.pop(0)
        elif arg == "--":
            command = rest
            break
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {"_unparsed": raw.decode("utf-8", "replace")}
    event = payload.get("hook_event_name", "?")
    entry = {"event": event, "t": t0, "pid": os.getpid(), "payload": payload,
             "transcript": transcript_state(payload.get("transcript_path"), payload.get("last_assistant_message"),
                                           payload.get("prompt"))}
    if payload.get("agent_transcript_path"):
        entry["agent_transcript"] = transcript_state(payload["agent_transcript_path"])
    state = entry["transcript"]
    replay = None
    if replay_dir and command and payload.get("last_assistant_message") and payload.get("transcript_path") \
            and not state.get("has_last_assistant_message"):
        replay = prepare_replay(replay_dir, payload, state, journal)
    rc = 0
    if command:
        t1 = time.time()
        proc = subprocess.run(command, input=raw, capture_output=True)
        rc = proc.returncode
        entry["command"] = {"argv": command, "rc": rc, "seconds": round(time.time() - t1, 4),
                            "stdout": proc.stdout.decode("utf-8", "replace"),
                            "stderr": proc.stderr.decode("utf-8", "replace")}
        sys.stdout.buffer.write(proc.stdout)
    if journal and snapshots and os.path.exists(journal):
        os.makedirs(snapshots, exist_ok=True)
        n = len(os.listdir(snapshots))
        dest = os.path.join(snapshots, f"{n:03d}-{event}.db")
        try:
            backup(journal, dest)
            entry["snapshot"] = dest
        except sqlite3.Error as exc:
            entry["snapshot_error"] = str(exc)
    if replay:
        entry["replay"] = run_replay(command, payload, replay)
    entry["t_end"] = time.time()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # never fail Claude Code because of the probe
        sys.stderr.write(f"probe_hook: {exc!r}\n")
        sys.exit(0)
