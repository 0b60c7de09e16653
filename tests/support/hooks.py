"""The hook and ``chats`` as processes, and transcripts that grow as Claude Code writes them.

``run_hook`` runs the hook as Claude Code does (JSON on stdin; it must exit 0 and
print nothing); ``hook_event`` runs it for one event of a transcript, from the
transcript's folder (as Claude Code does; from the checkout ``-m`` would import the
checkout's package), and returns what it printed; ``hook_log`` reads what it logged. ``Transcripts`` is a project
folder whose sessions and subagents grow by ``grow(n)`` lines, with stable uuids;
``start``, ``finish`` and ``kill_after`` run a process, wait for it, or SIGKILL it.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from claude_chats import paths
from tests.support import lines

HOOK = [sys.executable, "-m", "claude_chats.hook"]
CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]
PAD = " ".join(["lorem ipsum dolor sit amet"] * 8)   # ~200 characters a message: real work to kill in


def run_hook(payload, timeout=60, preexec_fn=None):
    """The hook run on ``payload`` (bytes, or an object sent as JSON): it exits 0 and prints nothing."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run(HOOK, input=data, capture_output=True, timeout=timeout, preexec_fn=preexec_fn)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == b""
    return proc


def hook_event(path, event, session="sess-1", **fields):
    """The hook run for ``event`` of the transcript at ``path``: it exits 0, writes nothing to stderr;
    its stdout (hook JSON, or nothing)."""
    data = json.dumps({"session_id": session, "transcript_path": str(path), "hook_event_name": event,
                       "cwd": "/work/proj", **fields}).encode()
    proc = subprocess.run(HOOK, input=data, capture_output=True, timeout=60, cwd=os.path.dirname(path) or None)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr[-2000:]
    return proc.stdout


def hook_log():
    """The entries of the hook's log: one JSON object per line, always."""
    path = os.path.join(paths.log_dir(), "hook.log")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines()]


def convo(session, start, n, agent=None):
    """Lines ``start``..``start+n`` of a session (or of one of its subagents), with stable uuids."""
    out = []
    for i in range(start, start + n):
        uid = str(uuid.uuid5(uuid.NAMESPACE_OID, f"{session}/{agent}/{i}"))
        text = f"{session} {agent or 'main'} message {i}: {PAD}"
        extra = {"isSidechain": True, "agentId": agent} if agent else {}
        make = lines.user if i % 2 == 0 else lines.assistant
        out.append(make(text, session=session, uid=uid, **extra))
    return out


class Transcripts:
    """A project folder whose sessions (each with subagents) grow by ``grow()``."""

    def __init__(self, root, sessions=2, agents=2):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.sizes = {}
        self.files = {}
        for s in range(sessions):
            session = f"sess-{s}"
            self.files[(session, None)] = root / f"{session}.jsonl"
            for a in range(agents):
                path = root / session / "subagents" / f"agent-a{a}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                self.files[(session, f"a{a}")] = path
        for key in self.files:
            self.sizes[key] = 0

    def grow(self, n):
        for (session, agent), path in self.files.items():
            data = lines.encode(*convo(session, self.sizes[(session, agent)], n, agent))
            with open(path, "ab") as fh:
                fh.write(data)
            self.sizes[(session, agent)] += n

    def uuids(self):
        return {str(uuid.uuid5(uuid.NAMESPACE_OID, f"{s}/{a}/{i}"))
                for (s, a), size in self.sizes.items() for i in range(size)}

    def sessions(self):
        return sorted({s for s, _ in self.files})


def hook_payload(transcripts, session):
    """What Claude Code sends the hook at the end of a turn of ``session``."""
    return json.dumps({"session_id": session, "transcript_path": str(transcripts.root / f"{session}.jsonl"),
                       "hook_event_name": "Stop"}).encode()


def start(argv, data=None):
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if data is not None:
        proc.stdin.write(data)
        proc.stdin.close()
        proc.stdin = None   # written and closed: communicate() must not flush it
    return proc


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def kill_after(proc, delay):
    """SIGKILL ``proc`` after ``delay`` seconds; True when it was still running (a real kill)."""
    deadline = time.monotonic() + delay
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        time.sleep(min(0.002, max(0.0, deadline - time.monotonic())))
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGKILL)
    finish(proc)
    return alive


def wait_for(path, seconds=60):
    """Whether ``path`` exists and is not empty within ``seconds`` (what a background process writes)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if path.exists() and path.stat().st_size:
            return True
        time.sleep(0.1)
    return False
