"""``"current"`` over a real ``chats mcp``, with something hostile planted as Claude Code's pid file.

``<claude config dir>/sessions/<pid>.json`` of the server's parent (here: this test process) is read
for ``session_id="current"`` and ``project_path="current"``. A FIFO there hung the tool call for ever,
a symlink to ``/dev/zero`` read until memory ran out (the server runs under a 1 GiB data limit here,
so the test cannot take the machine with it), a NUL in ``sessionId`` gave the masked "Error calling
tool". Now each is a tool error saying which file and why (issue 21, item 8).
"""

import json
import os
import resource

import pytest

from claude_chats import paths
from tests.support.wire import RawWire

DATA_LIMIT = 1 << 30   # chats mcp needs about 200 MB


def limit_memory():
    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT, DATA_LIMIT))


def pid_file():
    folder = os.path.join(paths.claude_config_dir(), "sessions")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{os.getpid()}.json")   # chats mcp's parent is this process


def record(**fields):
    return json.dumps({"pid": os.getpid(), "cwd": "/work/proj", **fields})


def write(path, data):
    with open(path, "w" if isinstance(data, str) else "wb") as fh:
        fh.write(data)


PLANTED = {
    "a FIFO": (os.mkfifo, "not a regular file"),
    "a link to /dev/zero": (lambda p: os.symlink("/dev/zero", p), "symbolic link"),
    "a link to a good record": (lambda p: (write(p + ".real", record(sessionId="s-1")), os.symlink(p + ".real", p)),
                                "symbolic link"),
    "a huge record": (lambda p: write(p, record(sessionId="s-1", pad="x" * (1 << 20))), "larger than"),
    "a NUL in sessionId": (lambda p: write(p, record(sessionId="s-\u0000-1")), "control characters"),
    "a newline in sessionId": (lambda p: write(p, record(sessionId="s-1\n[claude-chats] ok")), "control characters"),
}


@pytest.mark.parametrize("what", list(PLANTED))
def test_a_hostile_pid_file_is_a_tool_error_naming_it(tmp_path, what):
    plant, why = PLANTED[what]
    path = pid_file()
    plant(path)
    wire = RawWire(str(tmp_path), preexec_fn=limit_memory)
    try:
        for request_id, (tool, arguments) in enumerate([("get_conversation", {"session_id": "current"}),
                                                         ("list_recent_sessions", {"project_path": "current"})], 2):
            wire.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                  "params": {"name": tool, "arguments": arguments}}))
            answer = wire.reply(request_id, timeout=120)
            assert answer is not None, f"{tool}: no answer (the read blocked)"
            assert answer["result"]["isError"] is True, answer
            text = answer["result"]["content"][0]["text"]
            assert path in text and why in text and "list_recent_sessions" in text, text
    finally:
        wire.close()


def test_a_good_pid_file_still_names_the_session(tmp_path):
    write(pid_file(), record(sessionId="s-after-clear"))
    wire = RawWire(str(tmp_path), preexec_fn=limit_memory)
    try:
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "get_conversation", "arguments": {"session_id": "current"}}}))
        text = wire.reply(2, timeout=120)["result"]["content"][0]["text"]
    finally:
        wire.close()
    assert "s-after-clear" in text and "pid file" not in text, text   # looked up: not stored here
