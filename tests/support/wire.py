"""``chats mcp`` as a process, spoken to in raw JSON-RPC lines, byte for byte (no MCP client between)."""

import json
import os
import select
import subprocess

import pytest

from tests.support.hooks import CHATS


class RawWire:
    """``chats mcp`` started in ``cwd`` and initialized (the legacy era's ``initialize``)."""

    def __init__(self, cwd, env=None, preexec_fn=None):
        self.proc = subprocess.Popen([*CHATS, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=dict(env or os.environ), cwd=cwd,
                                     preexec_fn=preexec_fn)
        self.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert self.reply(1)["result"]["serverInfo"]
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def send(self, text):
        self.proc.stdin.write((text if isinstance(text, bytes) else text.encode("utf-8")) + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout=30):
        """The next line the server writes that is not a request or notification of its own (an answer,
        or an array of answers), or None when none comes within ``timeout`` seconds."""
        while True:
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            if not ready:
                return None
            line = self.proc.stdout.readline()
            if not line:
                return None
            message = json.loads(line)
            if not (isinstance(message, dict) and "method" in message):
                return message

    def reply(self, request_id, timeout=30):
        """The answer to ``request_id``, or None when none comes within ``timeout`` seconds."""
        while True:
            message = self.answer(timeout)
            if message is None or isinstance(message, dict) and message.get("id") == request_id:
                return message

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def wire(tmp_path):
    """A ``RawWire`` in the test's folder, closed after the test (import it into a test module)."""
    w = RawWire(str(tmp_path))
    yield w
    w.close()
