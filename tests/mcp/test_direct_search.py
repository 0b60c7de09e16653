"""``search_memory`` answered by ``chats mcp``'s front itself (``mcp.direct``), also while FastMCP loads.

FastMCP's import takes most of a second on two cores, and Claude Code may ask its first memory
search right after the opening; once FastMCP is up, its path for a call costs a warm search 3-4 ms.
The front answers the call itself, with the stores it opened as it started, as FastMCP would
answer it; a call it is not sure FastMCP would take as it is goes to FastMCP. Each test drives a
real process over stdio; a stand-in backend that never answers (or records what reaches it) shows
what the front did alone.
"""

import inspect
import json
import os
import re
import sys
import time

import pytest

from claude_chats import paths
from claude_chats.mcp import answers, direct, front
from tests.support.hooks import CHATS
from tests.support.stand_ins import EmbedServer, chats, provider_env, turns, write
from tests.support.wire import LEGACY, MODERN, Wire

# The front with the real stores and a backend that never answers (``recorded``: the lines that
# reach it are appended to that file): whatever the client gets came from the front.
FRONT = """
import sys, time
from claude_chats.mcp.front import Front
from claude_chats.mcp.opening import open_stores

def backend():
    if len(sys.argv) > 2:
        with open(sys.argv[2], "ab", buffering=0) as recorded:
            for line in sys.stdin.buffer:
                recorded.write(line)
    time.sleep(3600)

Front(sys.argv[1], serve_backend=backend, opener=OPENER).serve()
"""
REAL_STORES = FRONT.replace("OPENER", "open_stores")
# The front without stores of its own, before FastMCP: every tool call is FastMCP's
FASTMCP_ANSWERS = """
import sys
from claude_chats.mcp.front import Front

Front(sys.argv[1]).serve()
"""
# A searcher whose search fails with an exception that is no claude-chats error
BROKEN_STORES = FRONT.replace("OPENER", "Broken").replace("def backend", """class Broken:
    def warm(self):
        pass

    def search(self, *args, **kwargs):
        raise RuntimeError("not a claude-chats error")

def backend""")
TIMINGS = re.compile(r'"timings_ms":\{[^}]*\},?')


@pytest.fixture
def journal(tmp_path, monkeypatch):
    """A journal of three sessions, embedded by a stand-in Ollama that stays up for the test."""
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", "0")
    write(tmp_path / "projects" / "osprey" / "sess-osprey.jsonl",
          turns([f"the osprey cache eviction bug, step {i}" for i in range(8)], "sess-osprey", cwd="/work/osprey"))
    write(tmp_path / "projects" / "kestrel" / "sess-kestrel.jsonl",
          turns(["naïve café: the kestrel résumé parser drops the ü", "fixed — the decoder was latin-1",
                 "the osprey note is elsewhere"], "sess-kestrel", cwd="/work/kestrel"))
    write(tmp_path / "projects" / "heron" / "sess-heron.jsonl",
          turns([f"heron deploy step {i}: the cache warms" for i in range(6)], "sess-heron", cwd="/work/heron"))
    chats("import", str(tmp_path / "projects"))
    server = EmbedServer()
    for key, value in provider_env("ollama", server.url).items():
        monkeypatch.setenv(key, value)
    assert json.loads(chats("sync", "--json"))["embedded"] == 17
    yield
    server.close()


def answers_file():
    return os.path.join(paths.data_dir(), front.ANSWERS)


def call(wire, mid, arguments, era=MODERN, **params):
    meta = {"_meta": answers.MODERN_META} if era == MODERN else {}
    wire.send({"jsonrpc": "2.0", "id": mid, "method": "tools/call",
               "params": {"name": "search_memory", "arguments": arguments, **meta, **params}})


CALLS = [
    {"query": "osprey cache eviction"},
    {"query": "osprey", "mode": "fulltext", "limit": 2, "role": "user", "kinds": ["text"], "max_chars": 1000},
    {"query": "kestrel résumé parser", "mode": "semantic", "limit": 3},
    {"query": "naïve café"},
    {"query": "cache", "session_id": "sess-heron", "since": "2026-01-01", "until": "2026-12-31",
     "project_path": "/work/heron", "include_subagents": False, "origin": "any", "role": None, "kinds": None},
    {"query": "osprey", "since": "garbage"},   # a claude-chats error: isError with its message
]


def comparable(answer):
    """``answer`` without the search's own timings (in the text, byte for byte, and in the structure)."""
    answer = json.loads(json.dumps(answer))
    for block in answer["result"]["content"]:
        block["text"] = TIMINGS.sub("", block["text"])
    answer["result"].get("structuredContent", {}).pop("timings_ms", None)
    return answer


@pytest.mark.parametrize("era", [MODERN, LEGACY])
def test_the_front_answers_a_search_as_fastmcp_does(journal, era):
    alone = Wire([sys.executable, "-c", REAL_STORES, answers_file()])
    alone.start(era)
    for mid, arguments in enumerate(CALLS):
        call(alone, mid, arguments, era)
    direct_answers = {}
    while len(direct_answers) < len(CALLS):   # each in a thread of its own: in any order
        message = alone.read()
        direct_answers[message["id"]] = message
    assert alone.sigint()[0] == 0

    served = Wire([sys.executable, "-c", FASTMCP_ANSWERS, answers_file()])
    served.start(era)
    meta = {"_meta": answers.MODERN_META} if era == MODERN else {}
    served.send({"jsonrpc": "2.0", "id": 90, "method": "tools/call",   # only FastMCP answers it: it is up after
                 "params": {"name": "list_recent_sessions", "arguments": {}, **meta}})
    assert served.answer(90, timeout=60)["result"]["isError"] is False
    for mid, arguments in enumerate(CALLS):
        call(served, mid, arguments, era)
        fastmcps = served.answer(mid, timeout=60)
        assert comparable(direct_answers[mid]) == comparable(fastmcps), arguments
    assert served.sigint()[0] == 0

    found = direct_answers[0]["result"]
    assert found["isError"] is False and found["structuredContent"]["modes_run"] == ["fulltext", "semantic"]
    assert found["structuredContent"]["hits"][0]["session_id"] == "sess-osprey"
    assert json.loads(found["content"][0]["text"]) == found["structuredContent"]
    assert direct_answers[5]["result"]["isError"] is True
    assert "garbage" in direct_answers[5]["result"]["content"][0]["text"]


@pytest.mark.parametrize("arguments, params", [
    ({"query": 3}, {}),
    ({"query": "osprey", "limit": "3"}, {}),      # pydantic would read "3" as 3: FastMCP's to decide
    ({"query": "osprey", "limit": 0}, {}),
    ({"query": "osprey", "limit": 51}, {}),
    ({"query": "osprey", "limit": True}, {}),
    ({"query": "osprey", "limit": 2.0}, {}),
    ({"query": "osprey", "max_chars": 999}, {}),
    ({"query": "osprey", "mode": "HYBRID"}, {}),
    ({"query": "osprey", "kinds": ["nope"]}, {}),
    ({"query": "osprey", "kinds": "text"}, {}),
    ({"query": "osprey", "role": "robot"}, {}),
    ({"query": "osprey", "include_subagents": "yes"}, {}),
    ({"query": "osprey", "unknown": 1}, {}),
    ({"limit": 3}, {}),
    (["osprey"], {}),
    ({"query": "osprey"}, {"name": "get_conversation"}),
    ({"query": "osprey"}, {"_meta": {front.PROTOCOL_VERSION: MODERN}}),   # no client capabilities
    ({"query": "osprey"}, {"_meta": {**answers.MODERN_META, front.PROTOCOL_VERSION: "2099-01-01"}}),
    ({"query": "osprey"}, {"_meta": {**answers.MODERN_META, "claude-chats/lone-surrogates": ["query"]}}),
])
def test_a_call_the_front_is_not_sure_of_goes_to_fastmcp(journal, tmp_path, arguments, params):
    recorded = tmp_path / "backend.jsonl"
    wire = Wire([sys.executable, "-c", REAL_STORES, answers_file(), str(recorded)])
    wire.start(MODERN)
    call(wire, 7, arguments, MODERN, **params)
    forwarded = _forwarded(recorded, 7)
    assert forwarded["params"]["arguments"] == arguments
    _nothing_answered_before_a_ping(wire, 7)
    assert wire.sigint()[0] == 0


def test_a_legacy_call_before_initialize_goes_to_fastmcp(journal, tmp_path):
    recorded = tmp_path / "backend.jsonl"
    wire = Wire([sys.executable, "-c", REAL_STORES, answers_file(), str(recorded)])
    call(wire, 7, {"query": "osprey"}, LEGACY)
    assert _forwarded(recorded, 7)["method"] == "tools/call"
    _nothing_answered_before_a_ping(wire, 7)
    assert wire.sigint()[0] == 0


def test_a_failure_that_is_no_claude_chats_error_goes_to_fastmcp(journal, tmp_path):
    recorded = tmp_path / "backend.jsonl"
    wire = Wire([sys.executable, "-c", BROKEN_STORES, answers_file(), str(recorded)])
    wire.start(MODERN)
    call(wire, 7, {"query": "osprey"})
    assert _forwarded(recorded, 7)["params"]["arguments"] == {"query": "osprey"}
    _nothing_answered_before_a_ping(wire, 7)
    assert wire.sigint()[0] == 0


def test_fastmcp_uses_the_stores_the_front_opened(journal):
    wire = Wire([*CHATS, "mcp"])
    wire.start(MODERN)
    call(wire, 1, {"query": "osprey cache eviction"})   # FastMCP is still loading: the front answers
    assert wire.answer(1, timeout=60)["result"]["structuredContent"]["hits"]
    opened = _journal_descriptors(wire.proc.pid)
    wire.call_fastmcp()          # FastMCP is up, and reads the stores
    call(wire, 2, {"query": "heron deploy"})   # answered by the front
    assert wire.answer(2, timeout=60)["result"]["structuredContent"]["hits"][0]["session_id"] == "sess-heron"
    call(wire, 3, {"query": "heron deploy", "limit": "1"})   # FastMCP's (pydantic reads "1" as 1)
    assert len(wire.answer(3, timeout=60)["result"]["structuredContent"]["hits"]) == 1
    assert opened and _journal_descriptors(wire.proc.pid) == opened   # no second opening of the stores
    assert wire.sigint()[0] == 0


def test_the_direct_searchs_defaults_are_the_tools():
    """``direct.search_memory``'s defaults are those of the schema FastMCP gives (the shipped tools list)."""
    with open(front.SHIPPED, encoding="utf-8") as fh:
        tools = json.load(fh)["answers"][f"tools/list {MODERN}"]["result"]["tools"]
    schema = next(t for t in tools if t["name"] == direct.TOOL)["inputSchema"]
    assert schema["required"] == ["query"]
    parameters = inspect.signature(direct.search_memory).parameters
    defaults = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    assert defaults == {name: spec["default"] for name, spec in schema["properties"].items() if name != "query"}
    assert set(direct.CHECKS) == set(schema["properties"])


def _journal_descriptors(pid):
    """How many descriptors of process ``pid`` hold the journal."""
    journal = os.path.realpath(paths.journal_path())
    folder = f"/proc/{pid}/fd"
    return sum(1 for fd in os.listdir(folder) if _link(os.path.join(folder, fd)) == journal)


def _link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _forwarded(recorded, mid, timeout=30):
    """The request ``mid`` as it reached the backend."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if recorded.exists():
            for line in recorded.read_bytes().splitlines():
                message = json.loads(line)
                if message.get("id") == mid:
                    return message
        time.sleep(0.02)
    raise AssertionError(f"request {mid} never reached the backend")


def _nothing_answered_before_a_ping(wire, mid):
    wire.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    while True:
        message = wire.read()
        assert message.get("id") != mid, f"the front answered {mid} itself: {message}"
        if message.get("id") == "ping":
            return


def test_the_switch_interval_is_back_when_the_last_search_beside_the_import_ends(tmp_path):
    """Two searches that overlap while FastMCP loads: the interval is short while either runs, and as it
    was after both."""
    wire = front.Front(str(tmp_path / "answers.json"), serve_backend=lambda: None)
    before = sys.getswitchinterval()
    try:
        wire._switching(+1)
        wire._switching(+1)
        assert sys.getswitchinterval() == pytest.approx(front.LOADING_SWITCH)
        wire._switching(-1)   # the first to start ends first
        assert sys.getswitchinterval() == pytest.approx(front.LOADING_SWITCH)
        wire._switching(-1)
        assert sys.getswitchinterval() == before
    finally:
        sys.setswitchinterval(before)


def test_many_searches_at_once_are_all_answered_by_a_few_threads(journal):
    wire = Wire([sys.executable, "-c", REAL_STORES, answers_file()])
    wire.start(MODERN)
    threads = int(_status(wire.proc.pid)["Threads"])
    for mid in range(200):
        call(wire, mid, {"query": f"osprey cache eviction {mid}", "mode": "fulltext", "limit": 1})
    most, answered = threads, set()
    while len(answered) < 200:
        message = wire.read()
        answered.add(message["id"])
        most = max(most, int(_status(wire.proc.pid)["Threads"]))
    assert answered == set(range(200))
    assert most <= threads + front.SEARCH_WORKERS + 2, (threads, most)   # + the stores' warm-up
    assert wire.sigint()[0] == 0


def _status(pid):
    with open(f"/proc/{pid}/status") as fh:
        return dict(line.split(":\t", 1) for line in fh if ":\t" in line)


def test_a_model_loaded_before_fastmcp_is_up_does_not_cut_its_wire(tmp_path, monkeypatch, minilm,
                                                                  test_model_path):
    """llama.cpp's load points fd 1 at the null device and back; the first search loads the model while
    FastMCP still loads, and FastMCP's transport claims fd 1 as its wire as it starts (``fdclaim``)."""
    from claude_chats.localstore.journal import Journal
    from claude_chats.models import with_text
    from tests.support.journals import sync_corpus, write_corpus

    with Journal.open(paths.journal_path()) as journal:
        journal.import_files(write_corpus(tmp_path / "projects"))
        sync_corpus(journal, with_text(minilm))
    for key, value in {"CLAUDE_CHATS_MODEL": str(test_model_path), "CLAUDE_CHATS_THREADS": "1",
                       "CLAUDE_CHATS_SYNC_INTERVAL": "0"}.items():
        monkeypatch.setenv(key, value)
    for server in range(3):
        wire = Wire([*CHATS, "mcp"])
        wire.start(MODERN)
        call(wire, 1, {"query": "the id counter is never reset"})   # the front answers: the model loads now
        assert wire.answer(1, timeout=60)["result"]["isError"] is False
        assert wire.call_fastmcp()["structuredContent"]["sessions"], server   # only FastMCP answers it
        assert wire.sigint()[0] == 0
