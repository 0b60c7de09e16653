"""A scripted fake of the Anthropic Messages API, for driving the real Claude Code CLI.

The server listens on 127.0.0.1 (a free port) in a thread. ``POST /v1/messages``
answers as the real API does: server-sent events when the body says
``"stream": true`` (message_start, content_block_start / delta / stop for text,
thinking and tool_use with input_json_delta, message_delta with the stop reason,
message_stop), one JSON message otherwise. ``POST /v1/messages/count_tokens``
answers a token count. Every request (method, path, headers, parsed body) is
recorded in ``FakeAnthropic.requests`` so tests can assert what Claude Code sent.

The reply is chosen by markers in the latest prompt the person typed (the last
``user`` message with text that is not a tool result); the number of assistant
messages since that prompt says which step of the script is due, so the server
keeps no conversation state (forks and resumes script themselves):

    @reply(TEXT)          answer TEXT
    @think                a thinking block first, then the text
    @bash(COMMAND)        a Bash tool call, then (after its tool_result) a text
                          answer quoting the result
    @mcp(TOOL JSON)       the MCP tool with the JSON input, then a text answer quoting
                          the result; when the tool is deferred (not in the request's
                          ``tools``), ToolSearch {"query": "select:mcp__conversation-memory__TOOL"}
                          first (the name as the request lists it: a plugin's server
                          is mcp__plugin_<plugin>_conversation-memory__TOOL)
    @agent(PROMPT)        an Agent tool call (general-purpose subagent, PROMPT),
                          then a text answer; ``@bgagent(PROMPT)`` runs it in the
                          background (run_in_background)
    @slow(SECONDS)        wait before streaming (to let a test act mid-turn)
    anything else         "Scripted reply to: <the prompt>"

Side requests Claude Code makes (title generation, compaction summary, session
name, away summary, topic detection, ...) are told apart by their system prompt
or last message and answered with something sensible (see ``classify``).
"""

from __future__ import annotations

import http.server
import json
import re
import socketserver
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"
MCP_SERVER = "conversation-memory"
MCP_WAIT = 3.0  # seconds the scripted model "thinks" when the MCP tool is not listed yet

COMPACT_SUMMARY = (
    "Summary of the conversation so far (scripted by the fake API): the user asked "
    "scripted questions and got scripted answers. COMPACT-SUMMARY-MARKER."
)
AI_TITLE = "Scripted session title"
AWAY_SUMMARY = "While you were away: scripted recap of the session. AWAY-SUMMARY-MARKER."

_MARKER = re.compile(r"@(reply|bash|mcp|agent|bgagent|slow)\((.*?)\)(?=\s|$)|@(think)\b", re.S)


def _text_of(content: Any) -> str:
    """The text blocks of a message content (string or list of blocks)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "\n".join(parts)


def _is_tool_result_message(msg: dict) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _strip_reminders(text: str) -> str:
    text = re.sub(r"<system-reminder>.*?</system-reminder>", "", text, flags=re.S)
    return text.strip()


def latest_prompt(messages: list[dict]) -> tuple[str, int, int]:
    """(the latest typed prompt, its message index, assistant messages since).

    A prompt is a user message with text outside system reminders that is not a
    tool-result message. Claude Code may put several text blocks (context
    reminders, the prompt) in one user message: the last non-reminder block wins.
    """
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") != "user" or _is_tool_result_message(msg):
            continue
        content = msg.get("content")
        blocks = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        ]
        texts = [_strip_reminders(t) for t in blocks]
        texts = [t for t in texts if t]
        if not texts:
            continue
        since = sum(1 for m in messages[i + 1:] if m.get("role") == "assistant")
        return texts[-1], i, since
    return "", -1, 0


def tool_results_since(messages: list[dict], index: int) -> list[str]:
    """Text of every tool_result after message ``index``, in order."""
    out = []
    for msg in messages[index + 1:]:
        if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            continue
        for block in msg["content"]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                c = block.get("content")
                out.append(c if isinstance(c, str) else _text_of(c))
    return out


def _system_text(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def _last_user_text(body: dict) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return _text_of(msg.get("content"))
    return ""


def classify(body: dict) -> str:
    """Which kind of request this is: 'main' (a conversation turn) or a side job.

    Side jobs seen from 2.1.332: 'title' (haiku, system "You are naming a coding
    session", a JSON schema {title}: the ``ai-title`` record), 'compact' (the
    /compact summariser: last user text "Your task is to create a detailed
    summary ..."), 'away-summary' ("The user stepped away and is coming back"),
    'session-name' (kebab-case name), and any other request with a JSON-schema
    output format ('json').
    """
    system = _system_text(body)
    last = _last_user_text(body)
    if "create a detailed summary of th" in last or "create a detailed summary of th" in system:
        return "compact"
    if "naming a coding session" in system:
        return "title"
    if "stepped away and is coming back" in last or "stepped away and is coming back" in system:
        return "away-summary"
    if "kebab-case name" in last or "kebab-case name" in system:
        return "session-name"
    if _json_schema(body) is not None:
        return "json"
    if not body.get("tools") and body.get("max_tokens", 0) <= 1:
        return "quota"
    return "main"


def _json_schema(body: dict):
    fmt = (body.get("output_config") or {}).get("format") or {}
    return fmt.get("schema") if fmt.get("type") == "json_schema" else None


def _fill_schema(schema: dict):
    """A small value matching a JSON schema (strings say 'scripted')."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: _fill_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("number", "integer"):
        return 0
    return "scripted"


@dataclass
class Block:
    type: str  # text | thinking | tool_use
    text: str = ""
    name: str = ""
    input: dict = field(default_factory=dict)
    id: str = ""


@dataclass
class Reply:
    blocks: list[Block]
    stop_reason: str = "end_turn"
    delay: float = 0.0


def _tool_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def side_reply(kind: str, body: dict) -> Reply:
    if kind == "compact":
        return Reply([Block("text", f"<analysis>scripted</analysis>\n<summary>\n{COMPACT_SUMMARY}\n</summary>")])
    if kind == "title":
        return Reply([Block("text", json.dumps({"title": AI_TITLE}))])
    if kind == "session-name":
        return Reply([Block("text", json.dumps({"name": "scripted-session-name"}))])
    if kind == "away-summary":
        return Reply([Block("text", AWAY_SUMMARY)])
    if kind == "json":
        return Reply([Block("text", json.dumps(_fill_schema(_json_schema(body) or {})))])
    return Reply([Block("text", "ok")])


def script_reply(body: dict) -> Reply:
    """The scripted answer to a conversation turn (see the module docstring)."""
    messages = body.get("messages") or []
    prompt, index, step = latest_prompt(messages)
    results = tool_results_since(messages, index)
    markers = list(_MARKER.finditer(prompt))
    delay = 0.0
    think = False
    action = None
    for m in markers:
        if m.group(3) == "think":
            think = True
        elif m.group(1) == "slow":
            delay = float(m.group(2))
        elif action is None:
            action = (m.group(1), m.group(2))
    blocks: list[Block] = []
    last = _last_user_text(body)
    if "<task-notification>" in last and not _is_tool_result_message(messages[-1]):
        result = re.search(r"<result>(.*?)</result>", last, re.S)
        return Reply([Block("text", "Background agent finished: " + (result.group(1).strip() if result else "no result"))])
    if think and step == 0:
        blocks.append(Block("thinking", f"Thinking about: {prompt[:80]}"))
    if action is None:
        return Reply(blocks + [Block("text", f"Scripted reply to: {prompt}")], delay=delay)
    kind, arg = action
    if kind == "reply":
        return Reply(blocks + [Block("text", arg)], delay=delay)
    if kind == "bash":
        if step == 0:
            blocks += [Block("text", f"Running `{arg}`."),
                       Block("tool_use", name="Bash", input={"command": arg, "description": "scripted command"})]
            return Reply(blocks, stop_reason="tool_use", delay=delay)
        out = (results[-1] if results else "").strip()
        return Reply([Block("text", f"The command printed: {out}")], delay=delay)
    if kind == "mcp":
        tool, _, args = arg.partition(" ")
        full = _mcp_tool_name(body, tool)
        loaded = _loaded_tool(body, tool)
        if loaded and not _called(messages, index, loaded):   # in `tools` (alwaysLoad): call it at once
            inp = json.loads(args) if args.strip() else {}
            return Reply(blocks + [Block("tool_use", name=loaded, input=inp)], stop_reason="tool_use", delay=delay)
        if step == 0 and not loaded:  # deferred: load its schema first
            if full:
                query = f"select:{full}"
            else:
                # Not listed yet: Claude Code sends the first request before a slow MCP server
                # (a plugin's) has connected. Search by keyword, a little later, as a model would.
                query, delay = f"+{MCP_SERVER} {tool}", max(delay, MCP_WAIT)
            blocks.append(Block("tool_use", name="ToolSearch", input={"query": query, "max_results": 1}))
            return Reply(blocks, stop_reason="tool_use", delay=delay)
        full = full or f"mcp__{MCP_SERVER}__{tool}"
        if not _called(messages, index, full):
            inp = json.loads(args) if args.strip() else {}
            return Reply([Block("tool_use", name=full, input=inp)], stop_reason="tool_use", delay=delay)
        out = (results[-1] if results else "").strip()
        return Reply([Block("text", f"The memory tool answered: {out}")], delay=delay)
    if kind in ("agent", "bgagent"):
        if step == 0:
            inp = {"description": "scripted subagent", "prompt": arg, "subagent_type": "general-purpose",
                   "run_in_background": kind == "bgagent"}
            blocks.append(Block("tool_use", name="Agent", input=inp))
            return Reply(blocks, stop_reason="tool_use", delay=delay)
        out = (results[-1] if results else "").strip()
        if kind == "bgagent":
            return Reply([Block("text", "The subagent runs in the background.")], delay=delay)
        return Reply([Block("text", f"The subagent said: {out[:300]}")], delay=delay)
    return Reply([Block("text", f"Scripted reply to: {prompt}")])


def _mcp_tool_name(body: dict, tool: str) -> str | None:
    """The full name of MCP tool ``tool`` as this request lists it (deferred names are in the
    messages; a plugin's server is ``mcp__plugin_<plugin>_<server>__<tool>``), or None."""
    names = set(re.findall(r"mcp__[A-Za-z0-9_.-]*?__" + re.escape(tool) + r"\b", json.dumps(body)))
    for name in sorted(names, key=len):
        if MCP_SERVER in name:
            return name
    return None


def _loaded_tool(body: dict, tool: str) -> str | None:
    """The full name of MCP tool ``tool`` when its schema is in the request's ``tools`` (not deferred)."""
    for t in body.get("tools") or []:
        name = t.get("name", "")
        if name.startswith("mcp__") and MCP_SERVER in name and name.endswith("__" + tool):
            return name
    return None


def _called(messages: list[dict], index: int, name: str) -> bool:
    for msg in messages[index + 1:]:
        if msg.get("role") != "assistant" or not isinstance(msg.get("content"), list):
            continue
        if any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == name for b in msg["content"]):
            return True
    return False


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _usage(out_tokens: int) -> dict:
    return {"input_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "output_tokens": out_tokens, "service_tier": "standard"}


def _block_json(block: Block) -> dict:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "thinking":
        return {"type": "thinking", "thinking": block.text, "signature": "fake-signature"}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _events(reply: Reply, model: str, msg_id: str) -> list[bytes]:
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": _usage(1)}})]
    out.append(_sse("ping", {"type": "ping"}))
    for i, block in enumerate(reply.blocks):
        if block.type == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            words = re.findall(r"\S*\s*", block.text) or [""]
            for chunk in _chunks(words, 4):
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "text_delta", "text": chunk}}))
        elif block.type == "thinking":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "thinking_delta", "thinking": block.text}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "signature_delta", "signature": "fake-signature"}}))
        else:
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": block.id, "name": block.name, "input": {}}}))
            raw = json.dumps(block.input)
            step = max(1, len(raw) // 3)
            for j in range(0, len(raw), step):
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "input_json_delta", "partial_json": raw[j:j + step]}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                                      "usage": {"output_tokens": 12}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def _chunks(words: list[str], n: int) -> list[str]:
    return ["".join(words[i:i + n]) for i in range(0, len(words), n)] or [""]


@dataclass
class Request:
    """One request as received; ``body`` is the parsed JSON, ``kind`` what ``classify`` said."""

    method: str
    path: str
    headers: dict
    body: Any
    kind: str = ""
    time: float = 0.0

    def text(self) -> str:
        """Every text the request carries (system, messages, tool results), for ``in`` checks."""
        return json.dumps(self.body, ensure_ascii=False) if self.body is not None else ""


class FakeAnthropic:
    """The fake API server. ``with FakeAnthropic() as api: api.url``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, log_dir=None):
        self.requests: list[Request] = []
        self.log_dir = log_dir  # when set, every request is also written there as NNN-kind.json
        self.lock = threading.Lock()
        self.overrides: list = []  # callables body -> Reply | None, tried first
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _body(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _record(self, body, kind=""):
                req = Request(self.command, self.path, dict(self.headers), body, kind, time.time())
                with outer.lock:
                    outer.requests.append(req)
                    n = len(outer.requests)
                if outer.log_dir:
                    import pathlib
                    d = pathlib.Path(outer.log_dir)
                    d.mkdir(parents=True, exist_ok=True)
                    (d / f"{n:03d}-{kind or 'req'}.json").write_text(json.dumps(
                        {"method": req.method, "path": req.path, "headers": req.headers, "body": body}, indent=1))
                return req

            def _send_json(self, status: int, obj: Any):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._record(None)
                path = self.path.split("?")[0]
                if path.startswith("/v1/models"):
                    self._send_json(200, {"data": [{"type": "model", "id": MODEL, "display_name": "Fake"}],
                                          "has_more": False})
                    return
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

            def do_HEAD(self):
                self._record(None)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                body = self._body()
                path = self.path.split("?")[0]
                if path == "/v1/messages/count_tokens":
                    self._record(body, "count_tokens")
                    self._send_json(200, {"input_tokens": 100})
                    return
                if path != "/v1/messages" or not isinstance(body, dict):
                    self._record(body, "other")
                    self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                kind = classify(body)
                req = self._record(body, kind)
                reply = None
                for fn in list(outer.overrides):
                    reply = fn(body, kind)
                    if reply is not None:
                        break
                if reply is None:
                    reply = script_reply(body) if kind == "main" else side_reply(kind, body)
                for b in reply.blocks:
                    if b.type == "tool_use" and not b.id:
                        b.id = _tool_id()
                req.reply = reply  # type: ignore[attr-defined]
                if reply.delay:
                    time.sleep(reply.delay)
                model = body.get("model") or MODEL
                msg_id = "msg_" + uuid.uuid4().hex[:24]
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    try:
                        for ev in _events(reply, model, msg_id):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                            self.wfile.flush()
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                else:
                    self._send_json(200, {
                        "id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": [_block_json(b) for b in reply.blocks], "stop_reason": reply.stop_reason,
                        "stop_sequence": None, "usage": _usage(12)})

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):  # clients hang up: not our business
                pass

        self.server = Server((host, port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-anthropic", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeAnthropic":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- what the tests look at ------------------------------------------

    def messages_requests(self, kind: str | None = "main") -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path.split("?")[0] == "/v1/messages"
                    and (kind is None or r.kind == kind)]

    def main_after(self, t: float) -> list[Request]:
        """Conversation requests received after time ``t`` (``time.time()``)."""
        return [r for r in self.messages_requests() if r.time > t]

    def paths(self) -> list[str]:
        with self.lock:
            return [f"{r.method} {r.path}" for r in self.requests]

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()


if __name__ == "__main__":  # run by hand: python -m tests.claude_code.fake_api [PORT]
    import sys

    api = FakeAnthropic(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0,
                        log_dir=sys.argv[2] if len(sys.argv) > 2 else None).start()
    print(api.url, flush=True)
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        api.stop()
