"""Fuzzing what people and the assistant type: search queries, filters, ids, CLI arguments, MCP calls.

Every search mode (hybrid, semantic, full text) over a real journal with real
vectors, every ``chats`` journal command through the real CLI, and the three
MCP tools through an in-memory client must answer, or fail with a one-line
message (a ``ClaudeChatsError``, ``Error: ...`` from the CLI, a ``ToolError``
from MCP); never a traceback, never text read as FTS5 or SQL syntax.
"""

import asyncio
import json
import pathlib

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from hypothesis import given, seed
from hypothesis import strategies as st

from claude_chats import models, paths
from claude_chats.errors import ClaudeChatsError
from claude_chats.mcp.server import create_server
from claude_chats.search import core as search
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.fuzzing import FILE_NAMES, HOSTILE_IDS, HOSTILE_PATHS, check_journal, fuzz_settings
from tests.support.journals import CONVERSATIONS, build_journal, local_searcher, searcher_opener, sync_corpus

# Ids with a lone surrogate (JSON "\ud800" from an MCP client) get a clear ToolError: see the test at the end.
IDS = [i for i in HOSTILE_IDS if not any("\ud800" <= c <= "\udfff" for c in i)]
# Sequence numbers within SQLite's 64 bits (beyond them: the tests below), edges included.
seqs = st.one_of(st.none(), st.integers(-10, 2**63 - 1), st.sampled_from([0, -1, 2**31, 2**63 - 1]))
SYNTAX = ['"', "'", "*", "^", "(", ")", ":", "-", "+", "NEAR", "AND", "OR", "NOT", "content:", "{", "}", "\\",
          "%", "_", ";", "--", "/*", "\x00", "\n", "🎉", "İ", "ß", "\u200b", "  "]
WORDS = ["migration", "flaky", "docker", "port", "5432", "pod", "OOMKilled", "the", "a", "ölçü", "日本語"]
queries = st.one_of(
    st.text(max_size=80),
    st.lists(st.sampled_from(SYNTAX + WORDS), max_size=12).map(" ".join),
    st.lists(st.sampled_from(SYNTAX + WORDS), max_size=12).map("".join),
    st.sampled_from(["", " ", "x" * 10_000, " ".join(["w"] * 500), "'; DROP TABLE messages; --",
                     '" OR 1=1 --', "NEAR(migration flaky, 2)", "content: docker", "migration*", "^flaky"]),
)
times = st.one_of(st.none(), st.sampled_from(["2026-01-02", "2026-01-02T10:00:00Z", "2026-13-45", "yesterday",
                                              "0000-00-00", "9999-12-31T23:59:59+14:00", "", "2026-01-01T25:61"]),
                  st.text(max_size=20))
filters = st.fixed_dictionaries({}, optional={
    "project_path": st.one_of(st.sampled_from(["/work/alpha", "/work/alpha/", "/", "/work/al%", "/work/alph_"]
                                              + HOSTILE_PATHS), st.text(max_size=20)),
    "session_id": st.one_of(st.sampled_from(list(CONVERSATIONS)), st.sampled_from(IDS)),
    "role": st.one_of(st.sampled_from(["user", "assistant", "system"]), st.text(max_size=8)),
    "since": times, "until": times,
    "include_subagents": st.booleans(),
    "kinds": st.lists(st.one_of(st.sampled_from(["text", "tool_use", "thinking", "meta"]), st.text(max_size=6)),
                      max_size=3),
    "limit": st.integers(-5, 10_000), "per_session": st.integers(-3, 50),
})


def one_line(message):
    return bool(message) and "\n" not in message.strip() and "Traceback" not in message


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    journal = build_journal(tmp_path_factory.mktemp("fuzz-search"))
    sync_corpus(journal, HashEmbedder())
    yield local_searcher(journal, HashEmbedder)
    journal.close()


@seed(401)
@fuzz_settings(120, 4_000)
@given(queries, st.sampled_from(search.MODES), filters)
def test_every_search_mode_answers_any_query_or_says_why(searcher, query, mode, options):
    try:
        result = searcher.search(query, mode=mode, **options)
    except ClaudeChatsError as exc:
        assert one_line(str(exc)), str(exc)
        return
    assert result["mode"] == mode and result["source"] == "local"
    assert set(result["modes_run"]) <= {"fulltext", "semantic"}
    assert isinstance(result["hits"], list)
    json.dumps(result)   # what the MCP tool and --json print


@seed(402)
@fuzz_settings(60, 2_000)
@given(st.one_of(st.sampled_from(list(CONVERSATIONS) + IDS), st.text(max_size=30)),
       seqs, seqs, st.integers(-5, 1000), st.one_of(st.none(), st.sampled_from(["/work/alpha"] + HOSTILE_PATHS)))
def test_reading_and_listing_answer_any_ids_and_ranges(searcher, session, start, end, limit, project):
    for action in (lambda: searcher.conversation(session, start, end, limit=max(limit, 1)),
                   lambda: searcher.recent_sessions(limit=max(limit, 1), project_path=project)):
        try:
            json.dumps(action())
        except ClaudeChatsError as exc:
            assert one_line(str(exc)), str(exc)


# -- the CLI -------------------------------------------------------------------------------

class _TestProvider(HashEmbedder):
    """The test embedder under a provider name the CLI can be configured with."""

    default_model = "hash-32"

    def __init__(self, **_settings):
        super().__init__()


@pytest.fixture
def cli_journal(monkeypatch):
    """The journal at the configured location, synced with vectors of the test provider."""
    monkeypatch.setitem(models.PROVIDERS, "test-hash", _TestProvider)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "test-hash")
    home = pathlib.Path(paths.data_dir())
    home.mkdir(parents=True, exist_ok=True)
    journal = build_journal(home)
    sync_corpus(journal, _TestProvider())
    journal.close()
    hostile = home.parent / "hostile"   # transcripts with hostile names, to import by relative path
    for name in FILE_NAMES:
        (hostile / name).parent.mkdir(parents=True, exist_ok=True)
        (hostile / name).write_bytes(lines.encode(*lines.conversation(2, session=name)))
    monkeypatch.chdir(hostile.parent)
    return home


def _search_args(query, mode, options):
    args = ["search", "--mode", mode, "--local"]
    for key, flag in (("project_path", "--project"), ("session_id", "--session"), ("role", "--role"),
                      ("since", "--since"), ("until", "--until"), ("limit", "--limit"),
                      ("per_session", "--per-session")):
        if options.get(key) is not None:
            args += [flag, options[key]]
    for kind in options.get("kinds", []):
        args += ["--kind", kind]
    if options.get("include_subagents") is False:
        args.append("--no-subagents")
    return args + ["--", query]   # a query may start with "-" ("-h" is the help option, as for a person)


cli_calls = st.one_of(
    st.builds(_search_args, queries, st.sampled_from(search.MODES), filters),
    st.builds(lambda s, a, b: ["show", s] + (["--start", a] if a is not None else []) + (["--end", b] if b else []),
              st.one_of(st.sampled_from(list(CONVERSATIONS) + HOSTILE_IDS), st.text(max_size=20)),
              seqs, seqs),
    st.builds(lambda n, p: ["sessions", "--limit", n] + (["--project", p] if p is not None else []),
              st.integers(-3, 200_000), st.one_of(st.none(), st.sampled_from(HOSTILE_PATHS), st.text(max_size=20))),
    st.builds(lambda name: ["import", name], st.sampled_from(["/nonexistent/x.jsonl", "hostile"] + HOSTILE_PATHS[2:5]
                                                             + [f"hostile/{n}" for n in FILE_NAMES])),
)


def _no_null(args):
    return all("\x00" not in str(a) for a in args)   # a NUL cannot be passed in argv at all


@seed(403)
@fuzz_settings(60, 2_000)
@given(cli_calls.filter(_no_null), st.booleans())
def test_every_journal_command_answers_or_gives_a_one_line_error(cli_journal, args, as_json):
    if as_json and args[0] != "import":
        args = [args[0], "--json", *args[1:]]
    result = chats(*args)
    assert "Traceback" not in result.output
    if result.exit_code == 0:
        if as_json and args[0] != "import":
            json.loads(result.stdout)
        return
    assert result.exit_code in (1, 2), (args, result.exit_code, result.output)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and one_line(errors[0]), result.stderr
    if result.exit_code == 1:
        assert one_line(result.stderr), result.stderr
    check_journal(paths.journal_path())


@pytest.mark.parametrize("option", ["--start", "--end"])
def test_show_with_a_sequence_number_beyond_64_bits_is_a_one_line_error(cli_journal, option):
    result = chats("show", "s-migrate", option, 2**63)
    assert isinstance(result.exception, SystemExit) and result.exit_code in (1, 2), repr(result.exception)
    assert [line for line in result.stderr.splitlines() if line.startswith("Error")], result.stderr


admin_calls = st.one_of(
    st.builds(lambda k, v: ["config", "set", k, v], st.one_of(st.sampled_from(
        ["provider", "model", "dimensions", "threads", "sync_interval", "redact", "database_url",
         "allow_insecure_remote", "nope", ""]), st.text(max_size=12)), st.one_of(st.sampled_from(
        ["", "0", "-1", "1e9", "off", "5m", "yes", "maybe", "postgresql://u:p@h/db", "llama", "x" * 500]),
        st.text(max_size=20))),
    st.builds(lambda k: ["config", "unset", k], st.one_of(st.sampled_from(["model", "nope"]), st.text(max_size=8))),
    st.builds(lambda how, target, flags: ["purge", how, target] + flags, st.sampled_from(["--session", "--project"]),
              st.one_of(st.sampled_from(HOSTILE_IDS + HOSTILE_PATHS + ["s-long", "/work/gamma"]), st.text(max_size=12)),
              st.sampled_from([["--dry-run"], ["--yes"], ["--dry-run", "--json"], ["--yes", "--json"]])),
    st.sampled_from([["status", "--offline"], ["status", "--offline", "--json"], ["models", "list"],
                     ["models", "check"], ["config", "show", "--json"], ["install", "--print"],
                     ["uninstall", "--print"], ["purge", "--yes"], ["purge"]]),
    st.builds(lambda opt, value: ["install", "--print", opt, value],
              st.sampled_from(["--provider", "--model", "--database-url", "--schedule"]),
              st.one_of(st.sampled_from(["off", "5m", "nonsense", "openai", "http://x:y@remote/db"]),
                        st.text(max_size=15))),
)


@seed(405)
@fuzz_settings(40, 1_000)
@given(admin_calls.filter(_no_null))
def test_every_admin_command_answers_or_gives_a_one_line_error(cli_journal, args):
    result = chats(*args)
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert result.exit_code in (1, 2), (args, result.exit_code, result.output)
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
        assert len(errors) == 1 and one_line(errors[0]), (args, result.stderr)
    check_journal(paths.journal_path())


# -- MCP -------------------------------------------------------------------------------------

mcp_calls = st.one_of(
    st.builds(lambda q, options: ("search_memory", {"query": q, **{k: v for k, v in options.items()
                                                                  if k not in ("per_session",)}}),
              queries, filters),
    st.builds(lambda s, a, b, n: ("get_conversation", {"session_id": s, "start_seq": a, "end_seq": b, "limit": n}),
              st.one_of(st.sampled_from(list(CONVERSATIONS) + IDS), st.text(max_size=20)),
              seqs, seqs, st.integers(-5, 600)),
    st.builds(lambda n, p, sub: ("list_recent_sessions", {"limit": n, "project_path": p, "include_subagents": sub}),
              st.integers(-5, 300), st.one_of(st.none(), st.sampled_from(HOSTILE_PATHS)), st.booleans()),
    st.builds(lambda args: ("search_memory", args), st.dictionaries(st.text(max_size=10), st.integers(), max_size=3)),
)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    journal = build_journal(tmp_path_factory.mktemp("fuzz-mcp"))
    sync_corpus(journal, HashEmbedder())
    yield create_server(searcher_opener(journal, HashEmbedder))
    journal.close()


@seed(404)
@fuzz_settings(8, 200)
@given(st.lists(mcp_calls, min_size=1, max_size=15))
def test_mcp_tools_answer_or_raise_a_tool_error(mcp_server, calls):
    async def go():
        async with Client(mcp_server) as client:
            for tool, arguments in calls:
                try:
                    result = await client.call_tool(tool, arguments)
                except ToolError as exc:
                    # An unexpected exception would be masked as "Error calling tool ...": a bug to report.
                    assert "Error calling tool" not in str(exc), (tool, arguments, str(exc))
                    continue
                assert isinstance(result.structured_content, dict)
    asyncio.run(go())


@pytest.mark.parametrize("argument", ["start_seq", "end_seq"])
def test_get_conversation_beyond_64_bits_is_a_clear_tool_error(mcp_server, argument):
    async def go():
        async with Client(mcp_server) as client:
            with pytest.raises(ToolError) as info:
                await client.call_tool("get_conversation", {"session_id": "s-migrate", argument: 2**63})
            assert "Error calling tool" not in str(info.value), str(info.value)
    asyncio.run(go())


@pytest.mark.parametrize("tool, arguments", [
    ("search_memory", {"query": "migration", "session_id": "s-\ud800"}),
    ("search_memory", {"query": "migration \ud800"}),
    ("search_memory", {"query": "migration", "project_path": "/work/\udcff"}),
    ("get_conversation", {"session_id": "s-\ud800"}),
    ("list_recent_sessions", {"project_path": "/work/\ud800"}),
], ids=["session filter", "query", "project filter", "conversation", "recent sessions"])
def test_a_lone_surrogate_in_mcp_arguments_is_a_clear_answer(mcp_server, tool, arguments):
    async def go():
        async with Client(mcp_server) as client:
            try:
                await client.call_tool(tool, arguments)
            except ToolError as exc:
                assert "Error calling tool" not in str(exc), str(exc)
    asyncio.run(go())
