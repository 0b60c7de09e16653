"""``chats mcp``'s first answers, given before FastMCP has loaded; then a pass-through to it.

Importing FastMCP and building the server takes 1.5-2.5 s on two cores (most
of it the ``mcp`` SDK's package import, which brings its client, HTTP stack
and two protocol eras of pydantic models), while Claude Code waits for the
first answers before it lists the tools, and gives up on its
``server/discover`` probe after 3 s. Those answers do not change from one run
to the next, so the front (stdlib only) gives them at once from what it knows,
while FastMCP loads in a thread of the same process. Claude Code 2.1.332 opens
in the modern protocol era (``server/discover``, then ``tools/list``,
``prompts/list`` and ``resources/list``, each naming the version in
``_meta``), or in the legacy one (``initialize``, then the lists). The front
knows the answers from

1. ``mcp-answers.json`` in the data dir: FastMCP's own answers, saved by an
   earlier run, under the ``fingerprint`` of this Python, every module of
   claude-chats (size and time) and the installed FastMCP, mcp and pydantic;
2. else ``answers.json`` beside this module, shipped in the package: FastMCP's
   answers for this release (``python -m claude_chats.mcp.answers`` writes it;
   ``tests/mcp/test_front.py`` fails when it differs from FastMCP's), used when
   ``shipped_key()`` (the content of the modules the tools are written in and
   the installed FastMCP, mcp and pydantic versions) is the one it was made
   under. So the first start after an install or an upgrade is fast too.

Everything the client sends goes on to FastMCP, in order, through a pipe that
stands for its stdin (each line through ``stdin.rewrite``, see there): the
requests answered early go with the front's own ids (``OWN``), so FastMCP's
answers to them are not passed on but compared with what was sent. An answer
that differs is never kept quiet: FastMCP's is saved for the next start, the
difference is said on stderr (Claude Code's MCP log), and a tools list is
announced with ``notifications/tools/list_changed``. Any other message and
every answer of FastMCP's pass through unchanged. When no answer is known, the
request waits for FastMCP, as before, and FastMCP's answer is saved.

Started by ``chats mcp`` (with an ``opener``), the front also opens the stores as
it starts and answers ``search_memory`` itself, while FastMCP loads and after
(``mcp.direct``: the same call and the same answer as FastMCP's tool, which is
then never asked); FastMCP's tools use the same stores. A call it is not sure
FastMCP would take as it is goes on to FastMCP like any other message.

The wire moves to private descriptors and FastMCP gets the pipes as fds 0
and 1, which the ``mcp`` SDK's stdio transport claims as it claims a real
stdio (fd 0 then reads the null device, fd 1 writes to stderr): a library that
prints or moves fd 1 cannot corrupt the protocol, and a line that is not JSON
on the pipe goes to stderr. Until that claim, a model load (which moves fd 1)
waits (``fdclaim``). SIGINT and
SIGTERM (how Claude Code stops a stdio server: SIGINT, SIGTERM 0.1 s later,
then SIGKILL) end the process within ``STOP_GRACE``: FastMCP gets end of input
to close the stores, and the process exits whether or not it has finished.
"""

import hashlib
import io
import json
import os
import signal
import sys
import threading
import time

from .. import fdclaim, paths
from . import stdin
from .opening import Opening, open_stores

ANSWERS = "mcp-answers.json"
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "answers.json")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The modules the tools' names, descriptions and schemas are written in (server.py, and the constants it
# takes from direct (search_memory's limits and choices), transcript.KINDS and search.core.MAX_CHARS)
TOOL_MODULES = ("mcp/server.py", "mcp/direct.py", "transcript.py", "search/core.py")
OWN = "claude-chats-front/"   # id prefix of the copies of early-answered requests sent on to FastMCP
STOP_GRACE = 0.05             # seconds FastMCP gets to close the stores on SIGINT/SIGTERM
END_GRACE = 10.0              # ... on end of input
BACKEND_GONE = 1.0            # seconds the pump gets to pass on FastMCP's last lines when FastMCP fails
# The distributions whose code shapes the answers (by their dist-info folders' names: name and version)
SHAPED_BY = ("fastmcp", "fastmcp_slim", "mcp", "mcp_types", "pydantic", "pydantic_core")
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"   # a modern-era request's _meta key
LISTS = ("tools/list", "prompts/list", "resources/list", "resources/templates/list")
CLAIM_POLL = 0.01   # seconds between two looks at fd 1 while FastMCP has not claimed it (_watch_claim)
# threads answering searches (started as needed): they take the searcher's lock in turn, more would only wait;
# a client asking many at once cannot make the front start a thread for each
SEARCH_WORKERS = 2
LOADING_SWITCH = 0.00005   # seconds: the GIL's switch interval for a search while FastMCP loads (Front._switching)
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def main():
    """Serve the conversation-memory MCP server over stdio (what ``chats mcp`` runs)."""
    Front(os.path.join(paths.data_dir(), ANSWERS), opener=open_stores).serve()


# --- what the answers depend on ---------------------------------------------------------------------


def distributions(names=SHAPED_BY):
    """``{name: "name-version"}`` of the installed distributions ``names``, from their dist-info folders
    (a listing of ``sys.path``'s folders: no import, no metadata parsing)."""
    found = {}
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info"):
                name = entry.split("-", 1)[0].lower().replace(".", "_")
                if name in names and name not in found:   # the first on sys.path is the one imported
                    found[name] = entry[:-len(".dist-info")]
    return {name: found.get(name, "absent") for name in names}


def fingerprint():
    """The key of the saved answers: this Python, every module of claude-chats, the distributions above."""
    parts = [sys.version]
    for path in sorted(_modules(_PACKAGE)):
        try:
            st = os.stat(path)
            parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:absent")
    parts.extend(distributions().values())
    return "\n".join(parts)


def shipped_key():
    """The key of the shipped answers: the content of ``TOOL_MODULES`` and the distributions above.

    A change elsewhere that altered the answers would still be caught: by FastMCP's answer at run time
    and by the test that collects them."""
    digest = hashlib.sha256()
    for name in TOOL_MODULES:
        try:
            with open(os.path.join(_PACKAGE, name), "rb") as fh:
                digest.update(fh.read())
        except OSError:
            digest.update(b"absent")
    return {"modules": digest.hexdigest()[:16], **distributions()}


def _modules(folder):
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
            yield from _modules(entry.path)
        elif entry.name.endswith(".py"):
            yield entry.path


def backend(opening=None):
    """FastMCP serving over ``sys.stdin`` and ``sys.stdout`` (the front's pipes), with the stores
    ``opening`` opens (None: its own)."""
    from .server import create_server

    create_server(opening=opening).run(transport="stdio", show_banner=False, log_level="WARNING")


class Front:
    """The stdio wire of ``chats mcp``: early answers from ``answers_path`` (else ``shipped_path``),
    the rest to ``serve_backend``.

    ``serve_backend()`` runs the MCP server over ``sys.stdin``/``sys.stdout``, which ``serve`` points at
    its pipes (default: FastMCP, ``backend``); ``serve`` never returns (the process exits when the client
    or the backend ends). With ``opener`` (what opens the stores: ``opening.open_stores``), the front
    opens them as it starts and answers ``search_memory`` itself (``mcp.direct``: also while FastMCP
    loads), and FastMCP's tools use the same stores.
    """

    def __init__(self, answers_path, serve_backend=None, shipped_path=SHIPPED, opener=None):
        self.answers_path, self.opener = answers_path, opener
        self.serve_backend = serve_backend or (lambda: backend(self.opening))
        self.opening = None
        self.key = fingerprint()
        self.answers = self._load()                   # FastMCP's answers saved on this machine
        # ... shipped with this release, and the envelope of a tool call's answer by protocol version
        self.shipped, self.calls = _load_shipped(shipped_path)
        self.expected = {}            # request id FastMCP will answer -> (answer key, what the client got early)
        self.version = None           # the protocol version agreed in initialize
        self.backend_spoke = False
        self.own_ids = 0
        self.lock = threading.Lock()  # one writer on the wire at a time
        self.backend_lock = threading.Lock()   # ... and on FastMCP's input
        self.switch_lock, self.searching, self.switch_interval = threading.Lock(), 0, None   # see _switching
        self.jobs, self.pool_lock, self.workers, self.idle = None, threading.Lock(), 0, 0   # searches (_search)
        self.stopping = False

    # --- the process's plumbing -------------------------------------------------------------------

    def serve(self):
        self.wire_in, self.wire_out = _private(0), _private(1)
        # FastMCP gets the pipes as fds 0 and 1 themselves, so the MCP SDK's stdio transport claims them
        # as it claims a real stdio: it moves them to private descriptors and points fd 1 at stderr while
        # it serves. Whatever plays with fd 1 meanwhile (llama.cpp's loader dup2()s the null device over
        # sys.stdout's descriptor and back, from another thread) cannot cut the wire.
        to_backend, self.backend_in = os.pipe()
        backend_out, from_backend = os.pipe()
        sys.stdout.flush()
        for pipe_end, fd in ((to_backend, 0), (from_backend, 1)):
            os.dup2(pipe_end, fd)
            os.close(pipe_end)
        os.set_inheritable(self.backend_in, False)
        os.set_inheritable(backend_out, False)
        fdclaim.hold()   # no model load plays with fd 1 until FastMCP's transport has claimed it
        threading.Thread(target=self._watch_claim, args=(_identity(1),), name="chats-fd-claim", daemon=True).start()
        if self.opener is not None:
            self.opening = Opening(self.opener)
        self.backend = threading.Thread(target=self._run_backend, name="chats-fastmcp", daemon=True)
        self.backend.start()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        self.pump = threading.Thread(target=self._pump, args=(backend_out,), name="chats-mcp-out", daemon=True)
        self.pump.start()
        with io.open(self.wire_in, "rb", closefd=False) as wire:
            for line in wire:
                if not self._from_client(line):
                    break
        # The client is gone. A FastMCP still loading has opened nothing yet; one serving closes the stores.
        self._end(END_GRACE if self.backend_spoke else 0, 0)

    def _watch_claim(self, pipe):
        """Open ``fdclaim``'s gate once fd 1 is no longer FastMCP's pipe (``pipe``: its identity): the MCP
        SDK's stdio transport has claimed it. Also when FastMCP ends, or after ``fdclaim.WAIT``."""
        deadline = time.monotonic() + fdclaim.WAIT
        try:
            while _identity(1) == pipe and not self.stopping and time.monotonic() < deadline:
                time.sleep(CLAIM_POLL)
        finally:
            fdclaim.release()

    def _run_backend(self):
        try:
            self.serve_backend()
        except BaseException:   # noqa: BLE001 - told on stderr; then the process ends
            import traceback

            traceback.print_exc(file=sys.stderr)
        finally:
            fdclaim.release()
            if not self.stopping:   # FastMCP ended before its input did: it failed
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)   # its end of the pipe: the pump passes on what is left, then sees the end
                os.close(null)
                self.pump.join(BACKEND_GONE)
                sys.stderr.flush()
                os._exit(1)

    def _end(self, grace, code):
        """Give FastMCP end of input (it closes the stores on it), wait up to ``grace``, exit."""
        if not self.stopping:   # once: a second close could hit a descriptor reused by another thread
            self.stopping = True
            os.close(self.backend_in)
        self.backend.join(grace)
        sys.stderr.flush()
        os._exit(code)

    def _on_signal(self, signum, frame):
        self._end(STOP_GRACE if self.backend_spoke else 0, 0)

    def _write(self, message):
        data = message if isinstance(message, bytes) else (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self.lock:
            try:
                while data:
                    data = data[os.write(self.wire_out, data):]
            except OSError:   # the client is gone
                os._exit(0)

    def _to_backend(self, message):
        data = message if isinstance(message, bytes) else (json.dumps(message) + "\n").encode()
        with self.backend_lock:   # a line longer than the pipe's atomic write must not interleave
            try:
                while data:
                    data = data[os.write(self.backend_in, data):]
            except OSError:
                return False
        return True

    # --- what the client sends --------------------------------------------------------------------

    def _from_client(self, line):
        """Answer early what can be while FastMCP loads; pass everything on to it. False once it takes no more."""
        line = stdin.rewrite(line)   # a lone surrogate escape would make the SDK drop the line unanswered
        message = _parse(line.decode("utf-8", "replace"))   # as the SDK reads it
        refusal = _refusal(message, line)
        if refusal is not None:   # the SDK would drop the line unanswered: the client would wait for ever
            if refusal:
                self._write(refusal)
            return True
        answerable = isinstance(message, dict) and type(message.get("id")) in (str, int)
        method = message.get("method") if answerable else None
        key = self._answer_key(method, message.get("params") if method else None)
        if method == "ping" and not self.backend_spoke:
            self._write({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return True
        if method == "tools/call" and self._search(message, line):
            return True
        if key is None:
            return self._to_backend(line)
        saved = None if self.backend_spoke else self.answers.get(key, self.shipped.get(key))
        if saved is None:   # FastMCP answers (it is up, or nothing is known); its answer is saved
            self.expected[message["id"]] = (key, None)
            return self._to_backend(line)
        if method == "initialize" and "result" in saved:
            self.version = saved["result"].get("protocolVersion")
        self._write({"jsonrpc": "2.0", "id": message["id"], **saved})
        self.own_ids += 1
        own = f"{OWN}{self.own_ids}"
        self.expected[own] = (key, saved)
        return self._to_backend({**message, "id": own})

    def _answer_key(self, method, params):
        """The key of a request whose answer is the same every run, or None.

        Two protocol eras: the modern one (2026-07-28, what Claude Code 2.1.332 speaks when the server
        answers its ``server/discover`` probe) names its version in every request's ``_meta`` and has
        no ``initialize``; the legacy one agrees on a version in ``initialize``."""
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get(PROTOCOL_VERSION) or self.version
        if method == "server/discover" and self.version is None:
            return f"{method} {version}"
        if method == "initialize":
            return f"initialize {params.get('protocolVersion')}"
        if method in LISTS and version and not params.get("cursor"):
            return f"{method} {version}"
        return None

    def _search(self, message, line):
        """Queue a ``search_memory`` call for the front's search threads (True), if it is one the front may
        answer for FastMCP (``direct.arguments``) in a protocol version whose answers' envelope is known."""
        if self.opening is None:
            return False
        from . import direct

        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) and isinstance(params.get("_meta"), dict) else {}
        named = meta.get(PROTOCOL_VERSION)
        envelope = self.calls.get(named or self.version)
        arguments = direct.arguments(params, named) if isinstance(envelope, dict) else None
        if arguments is None:
            return False
        with self.pool_lock:
            if self.jobs is None:
                import queue   # (2.8 ms: not before the first search)

                self.jobs = queue.SimpleQueue()
            self.jobs.put((message["id"], line, arguments, envelope))
            if self.idle == 0 and self.workers < SEARCH_WORKERS:
                self.workers += 1
                threading.Thread(target=self._search_worker, name="chats-search", daemon=True).start()
        return True

    def _search_worker(self):
        while True:
            with self.pool_lock:
                self.idle += 1
            job = self.jobs.get()
            with self.pool_lock:
                self.idle -= 1
            self._answer_search(*job)

    def _answer_search(self, mid, line, arguments, envelope):
        from . import direct

        loading = not self.backend_spoke
        if loading:
            self._switching(+1)
        try:
            outcome = direct.search_memory(self.opening.get(), **arguments)
        except Exception as exc:  # noqa: BLE001 - FastMCP answers what the front cannot
            outcome = direct.error_text(exc)
        finally:
            if loading:
                self._switching(-1)
        data = direct.answer(mid, envelope, outcome) if outcome is not None else None
        if data is None:   # FastMCP answers it, as it would have without the front
            self._to_backend(line)
        else:
            self._write(data)

    def _switching(self, step):
        """The GIL's switch interval short while a search runs beside FastMCP's import (``step`` +1 as one
        starts, -1 as it ends): the importing thread holds the GIL for 5 ms at a time by default, and the
        search, which lets it go around each SQLite call, waited that long to have it back: 0.4-0.6 s of
        the first search at a million messages against 0.06-0.15 s at 50 us. Once FastMCP is up, the
        default (level or better for a warm search)."""
        with self.switch_lock:
            if self.searching == 0 and step > 0:
                self.switch_interval = sys.getswitchinterval()
                sys.setswitchinterval(LOADING_SWITCH)
            self.searching += step
            if self.searching == 0:
                sys.setswitchinterval(self.switch_interval)

    # --- what FastMCP answers ---------------------------------------------------------------------

    def _pump(self, fd):
        with io.open(fd, "rb") as out:
            for line in out:
                message = _parse(line)
                if message is _NOT_JSON:
                    sys.stderr.write(line.decode("utf-8", "replace"))   # a stray print, kept off the wire
                    continue
                self.backend_spoke = True
                mid = message.get("id") if isinstance(message, dict) and "method" not in message else None
                if mid is not None and isinstance(mid, (str, int)) and mid in self.expected:
                    self._answered(mid, message)
                    if isinstance(mid, str) and mid.startswith(OWN):
                        continue
                self._write(line)
        # the end of FastMCP's output: the client's end of input, a signal or FastMCP's failure ends the process

    def _answered(self, mid, message):
        key, sent = self.expected.pop(mid)
        answer = {k: message[k] for k in ("result", "error") if k in message}
        if key.startswith("initialize ") and "result" in answer:
            self.version = answer["result"].get("protocolVersion")
        if "result" not in answer:
            # FastMCP refused this request (a probe without the envelope Claude Code sends, say): that says
            # what the request lacked, not what the next client will be answered; nothing is kept
            return
        if self.answers.get(key) != answer:
            self.answers[key] = answer
            self._save()
        if sent is not None and answer != sent:
            sys.stderr.write(f"claude-chats: the early answer to {key} was out of date; saved FastMCP's\n")
            if key.startswith("tools/list "):
                self._write(LIST_CHANGED)

    # --- the saved answers ------------------------------------------------------------------------

    def _load(self):
        saved = _read_json(self.answers_path)
        if not isinstance(saved, dict) or saved.get("fingerprint") != self.key:
            return {}
        answers = saved.get("answers")
        return dict(answers) if isinstance(answers, dict) else {}

    def _save(self):
        try:
            paths.ensure_private_dir(os.path.dirname(self.answers_path))
            write_json(self.answers_path, {"fingerprint": self.key, "answers": self.answers}, 0o600)
        except OSError as exc:   # the next start is slow again; nothing else depends on it
            sys.stderr.write(f"claude-chats: could not save {self.answers_path}: {exc}\n")


def _load_shipped(path):
    """The shipped answers and tool-call envelopes, if made under this release's ``shipped_key()``."""
    shipped = _read_json(path)
    if not isinstance(shipped, dict) or shipped.get("key") != shipped_key():
        return {}, {}
    answers, calls = shipped.get("answers"), shipped.get("calls")
    return (dict(answers) if isinstance(answers, dict) else {}), (dict(calls) if isinstance(calls, dict) else {})


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def write_json(path, data, mode, indent=None):
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=indent)
        if indent is not None:
            fh.write("\n")
    os.replace(tmp, path)


_NOT_JSON = object()
PARSE_ERROR, INVALID_REQUEST = -32700, -32600   # JSON-RPC 2.0's codes
BATCH_REFUSED = ("Invalid Request: batches are not supported (MCP removed JSON-RPC batching in its 2025-06-18 "
                 "revision); send each message on a line of its own")


def _refusal(message, line):
    """What the front answers itself to a line that is no single JSON-RPC 2.0 message, which the MCP SDK
    drops unanswered; None for a line to pass on, [] for one to drop without a word (a blank line, a
    batch of notifications).

    As JSON-RPC 2.0 says: a line that is not JSON gets -32700 Parse error (id null); an empty array one
    -32600 Invalid Request; a batch an array of -32600, one per element that expects an answer (each
    with its request's id, else null), since the SDK takes one message a line; any other message that
    is not JSON-RPC 2.0 a -32600 with its id if it has one."""
    if message is _NOT_JSON:
        if not line.strip():
            return []
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON (one JSON-RPC message a line)")
    if isinstance(message, list):
        if not message:
            return _error(None, INVALID_REQUEST, "Invalid Request: an empty batch")
        return [_error(_request_id(m), INVALID_REQUEST, BATCH_REFUSED) for m in message if _expects_answer(m)]
    if _well_formed(message):
        return None
    if not _expects_answer(message):
        return []
    return _error(_request_id(message), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")


def _error(mid, code, text):
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": text}}


def _request_id(message):
    mid = message.get("id") if isinstance(message, dict) else None
    return mid if type(mid) in (str, int) else None


def _expects_answer(message):
    """False for a notification (a method, no id) and a response (no method): JSON-RPC answers neither."""
    return not isinstance(message, dict) or ("id" in message if "method" in message else
                                              not ("result" in message or "error" in message))


def _well_formed(message):
    """A JSON-RPC 2.0 request, notification or response, as the MCP SDK reads one."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        return (isinstance(message["method"], str) and (message.get("params") is None or isinstance(message["params"], dict))
                and ("id" not in message or type(message["id"]) in (str, int)))
    return type(message.get("id")) in (str, int) and ("result" in message) != ("error" in message)


def _parse(line):
    try:
        return json.loads(line)
    except ValueError:
        return _NOT_JSON


def _identity(fd):
    """What ``fd`` refers to (device and inode), or None."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _private(fd):
    """A private, non-inherited duplicate of ``fd`` (the wire to the client)."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    return private


if __name__ == "__main__":
    main()
