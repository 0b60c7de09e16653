"""`chats import/search/show/sessions` through the real CLI over a real journal."""

import json
import subprocess

import platformdirs
import pytest

from claude_chats import paths
from tests.support import lines
from tests.support.cli import chats
from tests.support.hooks import CHATS
from tests.support.journals import store_session


@pytest.fixture
def projects(tmp_path):
    folder = tmp_path / "claude" / "projects" / "-work-proj"
    folder.mkdir(parents=True, exist_ok=True)
    convo = [
        lines.user("why does the build fail with ECONNREFUSED 127.0.0.1:5433?", session="s-a"),
        lines.assistant("Postgres is not listening on port 5433; start it with docker compose up -d.",
                        session="s-a"),
        lines.user("and the flaky test in test_sync.py?", session="s-a"),
        lines.assistant([{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                          "input": {"command": "pytest tests/test_sync.py -x"}}], session="s-a"),
    ]
    (folder / "s-a.jsonl").write_bytes(lines.encode(*convo))
    other = tmp_path / "claude" / "projects" / "-elsewhere"
    other.mkdir()
    (other / "s-b.jsonl").write_bytes(lines.encode(
        lines.user("postgres tuning for the elsewhere project", session="s-b", cwd="/elsewhere"),
        {"type": "custom-title", "customTitle": "pg tuning", "sessionId": "s-b"}))
    return tmp_path / "claude" / "projects"


def test_import_default_folder_then_again_is_idempotent(projects):
    first = chats("import", "--json")
    assert first.exit_code == 0
    summary = json.loads(first.output)
    assert (summary["files"], summary["sessions"], summary["messages"]) == (2, 2, 5)
    again = json.loads(chats("import", "--json").output)
    assert again["messages"] == 0
    text = chats("import", str(projects)).output
    assert "0 new messages" in text


def test_search_finds_with_context_and_filters(projects):
    chats("import")
    hits = json.loads(chats("search", "ECONNREFUSED", "--json").output)["hits"]
    assert {h["session_id"] for h in hits} == {"s-a"}   # the match, and the neighbour it lends to
    assert hits[0]["seq"] == 0 and "ECONNREFUSED" in hits[0]["text"]
    assert [c["seq"] for c in hits[0]["context"]] == [1, 2]
    both = json.loads(chats("search", "postgres", "--json").output)["hits"]
    assert {h["session_id"] for h in both} == {"s-a", "s-b"}
    only = json.loads(chats("search", "postgres", "--project", "/work", "--json").output)["hits"]
    assert {h["session_id"] for h in only} == {"s-a"}
    tool = json.loads(chats("search", "test_sync", "--json").output)["hits"]
    assert any(h["kind"] == "tool_use" and h["text"].startswith("[Bash] pytest") for h in tool)


@pytest.mark.parametrize("query", [
    '"unbalanced', "(((", "NEAR(build fail)", "*", "build*", "col:umn", "a - b", "AND", "OR NOT",
    "'; DROP TABLE messages; --", "🙂 postgres 🙂", "\\", "^", "{}", "\x00",
])
def test_any_typed_text_is_searched_as_text(projects, query):
    chats("import")
    result = chats("search", query, "--json")
    assert result.exit_code == 0, result.output
    json.loads(result.output)
    assert json.loads(chats("sessions", "--json").output)  # the journal is intact


def test_show_and_sessions(projects):
    chats("import")
    shown = json.loads(chats("show", "s-a", "--start", "1", "--end", "2", "--json").output)
    assert [m["seq"] for m in shown["messages"]] == [1, 2]
    assert shown["session"]["project_path"] == "/work/proj"
    listed = json.loads(chats("sessions", "--json").output)
    names = {s["session_id"]: s["name"] for s in listed}
    assert names == {"s-a": None, "s-b": "pg tuning"}
    assert json.loads(chats("sessions", "--project", "/elsewhere", "--json").output)[0]["session_id"] == "s-b"


def test_hits_and_sessions_say_how_to_resume_them(projects):
    """Issue 17: each hit and session has its `claude --resume` line; `chats restore` first once
    Claude Code no longer has the transcript."""
    chats("import")
    (projects / "-elsewhere" / "s-b.jsonl").unlink()
    listed = chats("sessions").output
    assert "    cd /work/proj && claude --resume s-a\n" in listed
    assert "    chats restore s-b && cd /elsewhere && claude --resume s-b\n" in listed
    found = chats("search", "postgres").output
    assert "    resume: cd /work/proj && claude --resume s-a\n" in found
    assert "    resume: chats restore s-b && cd /elsewhere && claude --resume s-b\n" in found


def test_unknown_session_is_a_one_line_error(projects):
    chats("import")
    result = chats("show", "nope")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == ["Error: no session 'nope' in the journal (see `chats sessions`)"]


def test_import_of_missing_default_folder_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "nowhere"))
    result = chats("import")
    assert result.exit_code == 1 and "no transcripts folder" in result.output


def test_paths_match_platformdirs(monkeypatch):
    monkeypatch.delenv("CLAUDE_CHATS_HOME")
    assert paths.data_dir() == platformdirs.user_data_dir("claude-chats", appauthor=False)
    assert paths.config_dir() == platformdirs.user_config_dir("claude-chats", appauthor=False)
    assert paths.log_dir() == platformdirs.user_log_dir("claude-chats", appauthor=False)


def test_stored_text_never_reaches_the_terminal_as_control_characters():
    """What a transcript or another machine stored is printed by `chats show` and `chats search` with
    every control character but newline and tab escaped: no stored byte retitles the terminal (OSC),
    moves the cursor (CSI, C1 0x9b), rings or hides the lines after it (CR, bidi override)."""
    hostile = "retitled \x1b]2;owned\x07 and \x9b2J wiped\rover \u202edesrever heron"
    store_session("sess-\x1b[2Jx", [f"the heron migration {hostile}", "line one\n\tline two"],
                  name="name \x1b[31mred", project="/work/\x1b]2;p\x07proj")
    for args in (["show", "sess-\x1b[2Jx"], ["search", "heron", "--mode", "fulltext", "--local"]):
        res = subprocess.run([*CHATS, *args], capture_output=True, timeout=60)
        assert res.returncode == 0, res.stderr
        out = res.stdout.decode()
        assert "heron" in out
        assert not [c for c in out if not c.isprintable() and c not in "\n\t"], repr(out)
        assert "\\x1b" in out
    shown = subprocess.run([*CHATS, "show", "sess-\x1b[2Jx"], capture_output=True, timeout=60).stdout.decode()
    assert "line one\n\tline two" in shown   # a message's own lines and tabs stay as they were
