"""``chats mcp``'s front: early answers (saved, else shipped) given before FastMCP loads, checked against
FastMCP's, and the stop.

Each test drives a real process over stdio with newline-delimited JSON-RPC,
as Claude Code 2.1.332 does (``mcp.answers.opening``: the modern era's
``server/discover`` and lists, or the legacy ``initialize``), and stops it as
Claude Code does (SIGINT first).
"""

import json
import os
import pathlib
import sys
import time

import pytest

from claude_chats import paths
from claude_chats.mcp import answers, front
from tests.support.wire import Wire

CHATS = pathlib.Path(sys.executable).with_name("chats")
MODERN, LEGACY = answers.MODERN, answers.LEGACY

# A backend that never answers: whatever the client gets came from the front.
SILENT_BACKEND = """
import os, sys, time
from claude_chats.mcp.front import Front
def silent():
    time.sleep(3600)
Front(sys.argv[1], serve_backend=silent, shipped_path=sys.argv[2]).serve()
"""


def answers_file():
    return os.path.join(paths.data_dir(), front.ANSWERS)


def save_answers(saved):
    os.makedirs(paths.data_dir(), exist_ok=True)
    with open(answers_file(), "w") as fh:
        json.dump({"fingerprint": front.fingerprint(), "answers": saved}, fh)


def silent(shipped=os.devnull):
    return Wire([sys.executable, "-c", SILENT_BACKEND, answers_file(), str(shipped)])


TOOL = {"name": "saved_tool", "inputSchema": {"type": "object"}}
SAVED = {
    f"server/discover {MODERN}": {"result": {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}},
    f"tools/list {MODERN}": {"result": {"tools": [TOOL]}},
    f"prompts/list {MODERN}": {"result": {"prompts": []}},
    f"resources/list {MODERN}": {"result": {"resources": []}},
    f"initialize {LEGACY}": {"result": {"protocolVersion": LEGACY, "capabilities": {"tools": {}},
                                        "serverInfo": {"name": "conversation-memory", "version": "x"}}},
    f"tools/list {LEGACY}": {"result": {"tools": [TOOL]}},
    f"prompts/list {LEGACY}": {"result": {"prompts": []}},
    f"resources/list {LEGACY}": {"result": {"resources": []}},
}


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_saved_answers_are_given_before_the_backend_answers_anything(era):
    save_answers(SAVED)
    wire = silent()
    got = wire.start(era)
    assert got == {key: answer for key, answer in SAVED.items() if key.endswith(era)}
    wire.send({"jsonrpc": "2.0", "id": [3], "method": "ping"})   # not a valid id: left to the backend
    wire.proc.stdin.write(b"not json\n")
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert wire.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    code, took = wire.sigint()
    assert code == 0 and took < 2


def test_answers_saved_under_another_fingerprint_are_not_used():
    os.makedirs(paths.data_dir(), exist_ok=True)
    with open(answers_file(), "w") as fh:
        json.dump({"fingerprint": "another version", "answers": SAVED}, fh)
    wire = silent()
    wire.send(answers.opening(MODERN)[0][0][0])   # the probe
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert wire.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}   # the probe was left to the backend
    assert not wire.buf
    assert wire.sigint()[0] == 0


def test_the_shipped_answers_are_fastmcps():
    """answers.json is what FastMCP answers today: a change to a tool must come with a new file."""
    with open(front.SHIPPED, encoding="utf-8") as fh:
        shipped = json.load(fh)
    fix = "run `python -m claude_chats.mcp.answers` and commit claude_chats/mcp/answers.json"
    assert shipped["key"] == front.shipped_key(), f"answers.json was made under another key: {fix}"
    collected = answers.collect()
    assert (shipped["answers"], shipped["calls"]) == collected, f"answers.json differs from FastMCP's answers: {fix}"


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_the_shipped_answers_are_given_when_none_are_saved(era):
    with open(front.SHIPPED, encoding="utf-8") as fh:
        shipped = json.load(fh)["answers"]
    wire = silent(front.SHIPPED)
    assert wire.start(era) == {key: answer for key, answer in shipped.items() if key.endswith(era)}
    assert wire.sigint()[0] == 0


def test_shipped_answers_under_another_key_are_not_used(tmp_path):
    other = tmp_path / "answers.json"
    other.write_text(json.dumps({"key": {**front.shipped_key(), "fastmcp": "fastmcp-0.0.1"}, "answers": SAVED}))
    wire = silent(other)
    wire.send(answers.opening(MODERN)[0][0][0])
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert wire.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert not wire.buf
    assert wire.sigint()[0] == 0


def test_chats_mcp_saves_fastmcps_answers_and_gives_the_same_ones_next_time():
    first = Wire([str(CHATS), "mcp"])
    opened = first.start()
    assert {t["name"] for t in opened[f"tools/list {MODERN}"]["result"]["tools"]} == {
        "search_memory", "get_conversation", "list_recent_sessions"}
    assert opened[f"server/discover {MODERN}"]["result"]["supportedVersions"] == [MODERN]
    first.call_fastmcp()   # FastMCP has answered everything before it
    code, _ = first.sigint()
    assert code == 0
    saved = json.load(open(answers_file()))["answers"]
    assert set(saved) == set(opened)
    assert os.stat(answers_file()).st_mode & 0o777 == 0o600

    second = Wire([str(CHATS), "mcp"])
    assert second.start() == opened
    called = second.call_fastmcp()   # waits for FastMCP and the stores
    assert called["structuredContent"]["sessions"] == []
    assert second.sigint()[0] == 0


def test_a_stale_saved_tools_list_is_replaced_said_and_announced():
    first = Wire([str(CHATS), "mcp"])
    real = first.start()
    first.call_fastmcp()
    first.sigint()
    key = f"tools/list {MODERN}"
    save_answers({**json.load(open(answers_file()))["answers"], key: SAVED[key]})

    wire = Wire([str(CHATS), "mcp"])
    assert wire.start()[key] == SAVED[key]   # what was saved, at once
    assert wire.read(timeout=60) == front.LIST_CHANGED
    wire.send({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": answers.MODERN_META}})
    assert wire.answer(7)["result"] == real[key]["result"]
    assert json.load(open(answers_file()))["answers"][key] == real[key]
    assert wire.sigint()[0] == 0
    assert f"the early answer to {key} was out of date" in wire.proc.stderr.read().decode()


# chats mcp's FastMCP with a tool that starts two threads doing what llama.cpp's loader does (its
# suppress_stdout_stderr): dup2 the null device over sys.stdout's descriptor and back, racing.
FD_GAMES = """
import os, sys, threading, time
from claude_chats.mcp import front
from claude_chats.mcp.server import create_server

def games():
    while True:
        fd = sys.stdout.fileno()
        saved = os.dup(fd)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
        time.sleep(0.002)
        os.dup2(saved, fd)
        os.close(saved)

def backend():
    server = create_server()

    @server.tool
    def start_games() -> str:
        for _ in range(2):
            threading.Thread(target=games, daemon=True).start()
        return "started"

    server.run(transport="stdio", show_banner=False, log_level="WARNING")

front.Front(sys.argv[1], serve_backend=backend, shipped_path=os.devnull).serve()
"""


def test_what_a_library_does_to_fd_1_does_not_cut_the_wire():
    """llama.cpp's loader, from the stores' thread, used to swap the null device into the pipe FastMCP
    wrote to: answers were lost, or the pipe closed and chats mcp exited (test_stdio, now and then)."""
    wire = Wire([sys.executable, "-c", FD_GAMES, answers_file()])
    wire.start(timeout=60)
    wire.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
        "name": "start_games", "arguments": {}, "_meta": answers.MODERN_META}})
    assert wire.answer(99, timeout=60)["result"]["isError"] is False
    for i in range(20):
        wire.call_fastmcp(request_id=100 + i)
    assert wire.sigint()[0] == 0


def test_end_of_input_ends_chats_mcp():
    wire = Wire([str(CHATS), "mcp"])
    wire.start()
    wire.proc.stdin.close()
    assert wire.proc.wait(30) == 0


def test_a_stray_print_does_not_reach_the_wire():
    save_answers(SAVED)
    noisy = SILENT_BACKEND.replace("time.sleep(3600)", "print('noise'); os.write(1, b'C noise\\n'); time.sleep(3600)")
    wire = Wire([sys.executable, "-c", noisy, answers_file(), os.devnull])
    wire.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    time.sleep(0.5)
    assert wire.answer(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    wire.sigint()
    assert b"noise" not in wire.buf
    assert b"C noise" in wire.proc.stderr.read()


def test_fastmcps_refusal_of_a_malformed_request_is_not_kept_for_the_next_start():
    """A probe without the client's capabilities: FastMCP refuses it, but Claude Code's next probe, with
    them, must still be answered as FastMCP answers that one."""
    wire = Wire([str(CHATS), "mcp"])
    probe = {"jsonrpc": "2.0", "id": "probe", "method": "server/discover",
             "params": {"_meta": {front.PROTOCOL_VERSION: MODERN}}}
    wire.send(probe)
    wire.answer("probe")
    wire.call_fastmcp()   # FastMCP has answered the front's copy of the probe before this
    assert wire.sigint()[0] == 0
    saved = json.load(open(answers_file()))["answers"] if os.path.exists(answers_file()) else {}
    assert "error" not in saved.get(f"server/discover {MODERN}", {}), saved.get(f"server/discover {MODERN}")
