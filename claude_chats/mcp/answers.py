"""The early answers shipped in the package (``answers.json``), collected from FastMCP itself.

``python -m claude_chats.mcp.answers`` starts ``chats mcp`` in a scratch data
dir, opens it as Claude Code 2.1.332 does in both protocol eras (the modern
one: ``server/discover`` then the lists, each naming its version in ``_meta``;
the legacy one: ``initialize`` then the lists), waits until the front has saved
FastMCP's own answer to each, then calls a tool and keeps what FastMCP's answer
to a tool call wraps the result in (by version: the modern era's ``resultType``
and ``_meta``; nothing in the legacy one, ``mcp.direct`` writes the rest), and
writes them to ``answers.json`` under ``front.shipped_key()``. ``tests/mcp/test_front.py`` collects them the same way
and fails when the shipped file differs: change a tool, run this.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from . import front

CLIENT = {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"}
CAPABILITIES = {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}
MODERN, LEGACY = "2026-07-28", "2025-11-25"
LISTS = ("tools/list", "prompts/list", "resources/list")
MODERN_META = {front.PROTOCOL_VERSION: MODERN, "io.modelcontextprotocol/clientInfo": CLIENT,
               "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}   # every modern request's _meta


def opening(era):
    """The steps of Claude Code's opening in ``era`` (as its wire shows): each step's messages, and the
    answers it waits for before the next (a legacy client sends the lists once ``initialize`` is answered)."""
    if era == MODERN:
        meta = {"_meta": MODERN_META}
        return [([{"jsonrpc": "2.0", "id": "probe", "method": "server/discover", "params": meta}],
                 {f"server/discover {MODERN}"}),
                ([{"jsonrpc": "2.0", "id": i, "method": m, "params": meta} for i, m in enumerate(LISTS)],
                 {f"{m} {MODERN}" for m in LISTS})]
    return [([{"jsonrpc": "2.0", "id": "init", "method": "initialize",
               "params": {"protocolVersion": LEGACY, "capabilities": CAPABILITIES, "clientInfo": CLIENT}}],
             {f"initialize {LEGACY}"}),
            ([{"jsonrpc": "2.0", "method": "notifications/initialized"},
              *({"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(LISTS))],
             {f"{m} {LEGACY}" for m in LISTS})]


# A tool the front never answers itself (FastMCP does): its answer's envelope is FastMCP's
CALL = {"name": "list_recent_sessions", "arguments": {}}
RESULT_KEYS = ("content", "structuredContent", "isError")   # what mcp.direct writes itself


def collect(timeout=120.0):
    """FastMCP's answers to both eras' openings, as ``chats mcp``'s front saves them, and the envelope
    of its answer to a tool call in each: ``(answers, calls)``."""
    home = tempfile.mkdtemp(prefix="chats-mcp-answers-")
    env = {**os.environ, "CLAUDE_CHATS_HOME": home, "CLAUDE_CHATS_SYNC_INTERVAL": "0"}
    saved = os.path.join(home, front.ANSWERS)
    calls = {}
    try:
        for era in (MODERN, LEGACY):
            proc = subprocess.Popen([sys.executable, "-m", "claude_chats.mcp.front"], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + timeout
            for messages, keys in opening(era):
                proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
                proc.stdin.flush()
                while not keys <= set(_answers(saved)):
                    if time.monotonic() > deadline or proc.poll() is not None:
                        proc.kill()
                        raise RuntimeError(f"chats mcp saved {sorted(_answers(saved))}, not {sorted(keys)}")
                    time.sleep(0.05)
            params = {**CALL, "_meta": MODERN_META} if era == MODERN else CALL
            _send(proc, {"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": params})
            result = _answer(proc, "call", deadline)["result"]
            calls[era] = {key: value for key, value in result.items() if key not in RESULT_KEYS}
            proc.stdin.close()
            proc.wait(30)
        return _answers(saved), calls
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _send(proc, message):
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc, mid, deadline):
    """The message with id ``mid`` on ``proc``'s output (the opening's answers before it are skipped)."""
    buf = b""
    while True:
        while b"\n" not in buf:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(proc.stdout.fileno(), 1 << 16) if ready else b""
            if not chunk:
                proc.kill()
                raise RuntimeError(f"chats mcp gave no answer to {mid!r}")
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        message = json.loads(line)
        if message.get("id") == mid:
            return message


def _answers(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["answers"]
    except (OSError, ValueError, KeyError):
        return {}


def main():
    answers, calls = collect()
    front.write_json(front.SHIPPED, {"key": front.shipped_key(), "answers": answers, "calls": calls}, 0o644,
                     indent=1)
    print(f"wrote {front.SHIPPED}: {', '.join(sorted(answers))}")


if __name__ == "__main__":
    main()
