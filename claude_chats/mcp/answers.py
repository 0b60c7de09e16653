"""The early answers shipped in the package (``answers.json``), collected from FastMCP itself.

``python -m claude_chats.mcp.answers`` starts ``chats mcp`` in a scratch data
dir, opens it as Claude Code 2.1.332 does in both protocol eras (the modern
one: ``server/discover`` then the lists, each naming its version in ``_meta``;
the legacy one: ``initialize`` then the lists), waits until the front has saved
FastMCP's own answer to each, and writes them to ``answers.json`` under
``front.shipped_key()``. ``tests/mcp/test_front.py`` collects them the same way
and fails when the shipped file differs: change a tool, run this.
"""

import json
import os
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


def collect(timeout=120.0):
    """FastMCP's answers to both eras' openings, as ``chats mcp``'s front saves them."""
    home = tempfile.mkdtemp(prefix="chats-mcp-answers-")
    env = {**os.environ, "CLAUDE_CHATS_HOME": home, "CLAUDE_CHATS_SYNC_INTERVAL": "0"}
    saved = os.path.join(home, front.ANSWERS)
    try:
        for era in (MODERN, LEGACY):
            proc = subprocess.Popen([sys.executable, "-m", "claude_chats.mcp.front"], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + timeout
            for messages, keys in opening(era):
                proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
                proc.stdin.flush()
                while not keys <= set(_answers(saved)):
                    if time.monotonic() > deadline or proc.poll() is not None:
                        proc.kill()
                        raise RuntimeError(f"chats mcp saved {sorted(_answers(saved))}, not {sorted(keys)}")
                    time.sleep(0.05)
            proc.stdin.close()
            proc.wait(30)
        return _answers(saved)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _answers(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["answers"]
    except (OSError, ValueError, KeyError):
        return {}


def main():
    answers = collect()
    front.write_json(front.SHIPPED, {"key": front.shipped_key(), "answers": answers}, 0o644, indent=1)
    print(f"wrote {front.SHIPPED}: {', '.join(sorted(answers))}")


if __name__ == "__main__":
    main()
