"""``chats mcp`` as a process, spoken to in raw JSON-RPC lines, byte for byte (no MCP client between)."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from claude_chats.mcp import answers, front
from tests.support.hooks import CHATS

MODERN, LEGACY = answers.MODERN, answers.LEGACY


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


class Wire:
    """A ``chats mcp``-like process ``cmd`` (the front, with FastMCP or a stand-in behind it), opened as
    Claude Code opens it (``start``) and stopped as it stops it (``sigint``)."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def read(self, timeout=30):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0, deadline - time.monotonic()))
            assert ready, f"no message within {timeout} s"
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, f"stdout closed; stderr: {self.proc.stderr.read().decode()[-2000:]}"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def answer(self, request_id, timeout=30):
        while True:
            message = self.read(timeout)
            if message.get("id") == request_id and "method" not in message:
                return message

    def start(self, era=MODERN, timeout=30):
        """Claude Code's opening in ``era``: ``{answer key: the answer as the client got it}``."""
        got = {}
        for messages, keys in answers.opening(era):
            for message in messages:
                self.send(message)
            for message in messages:
                if "id" in message:
                    key = front.Front._answer_key(_Versioned(era), message["method"], message.get("params"))
                    got[key] = {k: v for k, v in self.answer(message["id"], timeout).items()
                                if k not in ("jsonrpc", "id")}
        return got

    def call_fastmcp(self, request_id=90):
        """A tool call only FastMCP answers (after what came before it): its result."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
            "name": "list_recent_sessions", "arguments": {"limit": 1}, "_meta": answers.MODERN_META}})
        answer = self.answer(request_id, timeout=60)
        result = answer.get("result", answer)
        assert result.get("isError") is False, answer
        return result

    def sigint(self):
        started = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(10)
        return code, time.monotonic() - started


class _Versioned:
    """Stands for a front in ``_answer_key``: the legacy version is known once initialize is answered."""

    def __init__(self, era):
        self.version = LEGACY if era == LEGACY else None
