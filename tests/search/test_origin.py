"""Issue 17: sessions scripts and SDK runs started are recorded, flagged, and left out by default.

Transcripts the real Claude Code 2.1.332 wrote (tests/claude_code/fixtures): ``claude -p``
(``entrypoint: sdk-cli``) and an interactive session (``cli``); an Agent SDK session
(``sdk-py``) and one older than the field (none: a person's) built here. Search (Postgres and
the journal alike), ``chats sessions`` and ``list_recent_sessions`` show a person's sessions by
default; ``origin`` "machine" or "any" brings the others.
"""

import json
import shutil

import pytest
from click.testing import CliRunner

from claude_chats import models
from claude_chats.cli import main
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from tests.support import ROOT, lines
from tests.support.fakes import HashEmbedder

FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"
PRINT = "5de512e1-8a19-4408-b753-822dd8f9d4de"          # claude -p: sdk-cli
INTERACTIVE = "1222c558-d5a7-4e7e-9982-7ad0468e14bf"    # the terminal UI: cli
HUMAN, MACHINE = {INTERACTIVE, "sess-old"}, {PRINT, "sess-sdk"}


def chats(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def recorded(tmp_path):
    folder = tmp_path / "projects"
    folder.mkdir()
    shutil.copy(FIXTURES / "print-bash" / f"{PRINT}.jsonl", folder)
    shutil.copy(FIXTURES / "interactive-session" / f"{INTERACTIVE}.jsonl", folder)
    (folder / "sess-sdk.jsonl").write_bytes(lines.encode(
        lines.user("run the nightly report", session="sess-sdk", entrypoint="sdk-py"),
        lines.assistant("The command printed: nightly-ok", session="sess-sdk", entrypoint="sdk-py")))
    (folder / "sess-old.jsonl").write_bytes(lines.encode(
        lines.user("an old question", session="sess-old"),
        lines.assistant("The command printed: old-ok", session="sess-old")))
    chats("import", folder)
    return folder


def _found(*args):
    result = json.loads(chats("search", "command printed", "--mode", "fulltext", "-n", "50", "--per-session", "0",
                              "--json", *args))
    return {hit["session_id"] for hit in result["hits"]}, {hit["source"] for hit in result["hits"]}


def test_the_journal_flags_what_scripts_and_sdk_runs_started(recorded):
    with Journal.open() as journal:
        flags = {row["session_id"]: (row["entrypoint"], row["machine_made"]) for row in journal.sessions(limit=50)}
    assert flags == {PRINT: ("sdk-cli", 1), INTERACTIVE: ("cli", 0), "sess-sdk": ("sdk-py", 1), "sess-old": (None, 0)}


def test_search_and_session_lists_leave_them_out_by_default(recorded):
    assert _found("--local")[0] == HUMAN
    assert _found("--local", "--origin", "machine")[0] == MACHINE
    assert _found("--local", "--origin", "any")[0] == HUMAN | MACHINE
    listed = {s["session_id"] for s in json.loads(chats("sessions", "--json"))}
    assert listed == HUMAN
    assert {s["session_id"] for s in json.loads(chats("sessions", "--origin", "any", "--json"))} == HUMAN | MACHINE
    searcher = Searcher(LocalSearch.open())
    try:
        assert {s["session_id"] for s in searcher.recent_sessions(limit=50)["sessions"]} == HUMAN
        assert {s["session_id"] for s in searcher.recent_sessions(limit=50, origin="machine")["sessions"]} == MACHINE
    finally:
        searcher.close()


def test_postgres_filters_them_as_the_journal_does(recorded, pg_db_url, monkeypatch):
    monkeypatch.setitem(models.PROVIDERS, HashEmbedder.name, HashEmbedder)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", HashEmbedder.name)
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    assert json.loads(chats("sync", "--json"))["ok"]
    for origin, wanted in (("human", HUMAN), ("machine", MACHINE), ("any", HUMAN | MACHINE)):
        sessions, sources = _found("--origin", origin)
        assert sources == {"postgres"} and sessions == wanted, origin
    # only a machine-made session holds the words: Postgres' answer says so, as the journal's does
    result = json.loads(chats("search", "nightly report", "--mode", "fulltext", "--json"))
    assert result["source"] == "postgres" and result["hits"] == []
    assert any("but 1 machine-made session (" in n and "--origin any" in n for n in result["notes"]), result["notes"]
    with pytest.raises(Exception, match="origin must be one of"):
        Searcher(LocalSearch.open()).search("x", origin="robots")
