"""Input that was a traceback, a hang or an aborted run is a one-line error or an answer (issue 16, item 9).

Through ``chats`` as the person runs it: click's runner in process, or a real process
(with a timeout and a memory limit) where the old behaviour was a hang or filling the
memory.
"""

import json
import os
import resource
import subprocess
import sys

import pytest
from click.testing import CliRunner

from claude_chats import paths
from claude_chats.cli import main

CHATS = os.path.join(os.path.dirname(sys.executable), "chats")


def chats(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def one_error_line(result):
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def write_transcript(path, session, words):
    """Two lines of ``session`` at ``path`` (a str, a Path, or bytes for a name that is not UTF-8)."""
    rows = [{"type": "user", "uuid": f"{session}-{i}", "sessionId": session, "cwd": "/work/proj",
             "timestamp": "2026-01-01T10:00:00.000Z", "message": {"role": "user", "content": f"{words} {i}"}}
            for i in range(2)]
    with open(path, "wb") as fh:
        fh.write(b"".join(json.dumps(r).encode() + b"\n" for r in rows))


def process(*args, timeout=60):
    """``chats`` as a process, with at most 1 GiB of memory."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    return subprocess.run([CHATS, *args], capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


# -- search bounds at the ends of the calendar ------------------------------------------------

@pytest.mark.parametrize("bound", [["--until", "9999-12-31"], ["--since", "0001-01-01T00:00:00+05:00"],
                                   ["--until", "9999-12-31T23:59:59-05:00"]])
def test_search_bounds_beyond_the_calendar_answer(tmp_path, bound):
    write_transcript(tmp_path / "a.jsonl", "s-cal", "calendar edge")
    chats("import", str(tmp_path / "a.jsonl"))
    result = chats("search", "calendar", "--local", "--mode", "fulltext", "--json", *bound)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["hits"]) == 2


# -- durations that overflow ---------------------------------------------------------------

@pytest.mark.parametrize("key, value", [("sync_interval", "1e400m"), ("embed_timeout", "infm"),
                                        ("sync_interval", "99999999999999999999d")])
def test_config_set_of_an_overflowing_duration(key, value):
    assert "not a valid duration" in one_error_line(chats("config", "set", key, value))
    assert not os.path.exists(paths.config_path())


@pytest.mark.parametrize("line", ['sync_interval = "1e400m"', 'embed_timeout = "infm"', "sync_interval = inf"])
def test_an_overflowing_duration_in_the_file_is_one_line_for_every_command(line, monkeypatch):
    monkeypatch.delenv("CLAUDE_CHATS_SYNC_INTERVAL")
    paths.ensure_private_dir(paths.config_dir())
    with open(paths.config_path(), "w") as fh:
        fh.write(line + "\n")
    for args in (["config", "show"], ["status"], ["search", "x", "--local"], ["sync"]):
        message = one_error_line(chats(*args))
        assert paths.config_path() in message and "duration" in message, (args, message)


# -- import: one bad file name does not stop the others ---------------------------------------

def test_a_file_name_that_is_not_utf8_does_not_abort_the_import(tmp_path):
    folder = tmp_path / "projects"
    folder.mkdir()
    write_transcript(os.path.join(os.fsencode(folder), b"bad-\xff-name.jsonl"), "s-bad", "undecodable")
    write_transcript(folder / "zz-later.jsonl", "s-later", "imported later")
    result = chats("import", str(folder), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{"):])
    assert summary["messages"] == 2 and len(summary["errors"]) == 1
    assert "bad-\\xff-name.jsonl" in summary["errors"][0] and "not valid UTF-8" in summary["errors"][0]
    found = json.loads(chats("search", "imported", "--local", "--mode", "fulltext", "--json").output)
    assert {hit["session_id"] for hit in found["hits"]} == {"s-later"}


# -- eval: the files it reads and writes ---------------------------------------------------------

def query_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"query": "anything", "relevant_session_ids": ["s-1"]}) + "\n")
    return str(path)


def test_eval_checks_where_it_writes_the_misses_before_it_runs(tmp_path):
    line = one_error_line(chats("eval", query_file(tmp_path), "--mode", "fulltext", "--save-misses",
                                "/nonexistent/misses.jsonl"))
    assert "/nonexistent" in line and "does not exist" in line


@pytest.mark.parametrize("source", ["/dev/zero", "fifo"])
def test_eval_refuses_what_is_not_a_regular_file(tmp_path, source):
    if source == "fifo":
        source = str(tmp_path / "queries.fifo")
        os.mkfifo(source)
    proc = process("eval", source, "--mode", "fulltext", timeout=30)
    assert proc.returncode == 1 and proc.stderr.strip().startswith("Error: ") and "not a regular file" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# -- CLAUDE_CHATS_HOME pointing at a file -----------------------------------------------------------

@pytest.mark.parametrize("below", ["", "sub"])
def test_claude_chats_home_at_a_file(tmp_path, below):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    home = str(a_file / below) if below else str(a_file)
    for args in (["status"], ["config", "show"], ["search", "x"], ["import", str(a_file)]):
        message = one_error_line(chats(*args, env={"CLAUDE_CHATS_HOME": home}))
        assert "CLAUDE_CHATS_HOME" in message and str(a_file) in message


def test_a_local_model_left_configured_for_openai_says_what_to_set(tmp_path):
    """`chats install` configures a local GGUF by name; a person who then switches the provider to
    openai keeps that name: the sync's error says it is not an OpenAI model and what to run."""
    pytest.importorskip("openai")
    write_transcript(tmp_path / "s.jsonl", "sess-1", "the tapir release notes")
    assert chats("import", str(tmp_path)).exit_code == 0
    for key, value in (("model", "all-MiniLM-L6-v2"), ("provider", "openai"), ("openai_api_key", "sk-test")):
        assert chats("config", "set", key, value).exit_code == 0
    result = chats("sync", "--json")
    assert result.exit_code == 1
    (error,) = json.loads(result.output)["errors"]
    assert "'all-MiniLM-L6-v2' has no known dimensions" in error
    assert "`chats config set model text-embedding-3-small`" in error
