"""The journal the browser tests look at: real transcripts and a hostile one, imported by ``chats import``.

``REAL`` names a handful of ../shared's Claude Code transcripts (a session whose Agent calls started
subagents, and sessions with tool calls and results); they are copied into the isolated
``$CLAUDE_CONFIG_DIR/projects`` where Claude Code keeps them. ``write_hostile(projects, sink)``
writes a session of its own whose every field a page shows is an attack: ``<script>`` in a prompt
and in thinking, ``<img onerror>`` and markdown ``javascript:`` and ``data:`` links in an answer,
a whole HTML page (meta refresh, iframe, form, style) as a tool result, HTML in the session's name,
its project folder and its branch, and a Task call whose subagent transcript is hostile too. Every
payload, had it run, would set ``window.pwned``, change the title, or call ``sink``.

Fixtures (a plugin of tests/conftest.py): ``ui_journal`` (the corpus copied, the hostile session
written, all imported; a ``Corpus``), ``ui`` (``chats ui`` serving it; stopped after the test).
"""

import json
import pathlib
import shutil
import subprocess
import uuid

import pytest

from tests.support import lines
from tests.support.browser import UI
from tests.support.hooks import CHATS

_REAL = "claude-code-log/real_projects"
WORKTREES = f"{_REAL}/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"   # 6 subagents
TIMELINE = f"{_REAL}/-Users-dain-workspace-claude-code-log-sample/0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
GITHUB_ACTION = f"{_REAL}/-Users-dain-workspace-claude-code-log-sample/fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl"
CACHE_TESTS = f"{_REAL}/-Users-dain-workspace-claude-code-log-sample/37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"
TOKENIZER = f"{_REAL}/-Users-dain-workspace-danieldemmel-me-next/f852ad25-1024-47da-964e-5eaae5bd6e6a.jsonl"
REAL = (WORKTREES, TIMELINE, GITHUB_ACTION, CACHE_TESTS, TOKENIZER)

HOSTILE_SESSION = "6b0c3f4e-8d2a-4c1e-9f7b-2a5d0e1c9b33"
HOSTILE_AGENT = "a3f9c2e71b0d4e5f6"
HOSTILE_PROJECT = "/work/evil\"><img src=x onerror=\"window.pwned='cwd'\">"
HOSTILE_BRANCH = "kumquat\"><svg/onload=window.pwned='branch'>"
HOSTILE_NAME = "<img src=x onerror=\"window.pwned='name'\"><b>kumquat</b> release & <i>review</i>"
HOSTILE_WORD = "kumquat"   # in every hostile message: what a search for it finds


class Corpus:
    """What was imported: ``files`` (relative corpus path -> its copy), ``projects``, ``hostile``
    (the hostile transcript's path) and the import's summary."""

    def __init__(self, projects, files, hostile, summary):
        self.projects, self.files, self.hostile, self.summary = projects, files, hostile, summary

    def path(self, name):
        return self.files[name]


def field(path, name):
    """The first value of ``name`` a transcript's lines carry."""
    for raw in pathlib.Path(path).read_text().splitlines():
        value = json.loads(raw).get(name)
        if value:
            return value
    raise AssertionError(f"no {name} in {path}")


def session_id(path):
    return field(path, "sessionId")


def subagent_files(path):
    """The subagent transcripts of the session at ``path`` (2.1.x layout: ``<session>/subagents/``)."""
    folder = pathlib.Path(path).with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl"))


def copy_real(corpus, projects):
    """Copy ``REAL`` (with their subagent folders) where Claude Code keeps transcripts."""
    copied = {}
    for name in REAL:
        source = corpus / name
        if not source.is_file():
            pytest.skip(f"../shared/corpus/transcripts/{name} not present")
        target = projects / pathlib.Path(name).relative_to(_REAL)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        if source.with_suffix("").is_dir():
            shutil.copytree(source.with_suffix(""), target.with_suffix(""))
        copied[name] = target
    return copied


def _chain(objs):
    """Link the lines into one conversation (each line's parent is the one before)."""
    parent = None
    for obj in objs:
        if "uuid" in obj:
            obj["parentUuid"] = parent
            parent = obj["uuid"]
    return objs


def hostile_lines(sink):
    """The hostile session's lines; ``sink`` is the URL each payload would call."""
    env = {"session": HOSTILE_SESSION, "gitBranch": HOSTILE_BRANCH, "version": "2.1.114"}
    user = lambda content, ts, **extra: lines.user(content, ts=ts, cwd=HOSTILE_PROJECT, **env, **extra)  # noqa: E731
    said = lambda blocks, ts, **extra: lines.assistant(blocks, ts=ts, cwd=HOSTILE_PROJECT, **env, **extra)  # noqa: E731
    prompt = (f"Review the {HOSTILE_WORD} release notes: <script>window.pwned='script';document.title='pwned';"
              f"fetch('{sink}/script')</script> and tell me what breaks")
    answer = (f"The {HOSTILE_WORD} release looks fine.\n\n"
              f"<img src=x onerror=\"window.pwned='img';fetch('{sink}/img')\">\n\n"
              f"Read [the {HOSTILE_WORD} notes](javascript:window.pwned='link';fetch('{sink}/link')) or "
              f"[the data page](data:text/html,<script>window.pwned='data'</script>) or "
              f"<a href=\"javascript:window.pwned='anchor'\">this anchor</a>.\n\n"
              f"![tracker]({sink}/markdown-image)\n\n"
              f"```html\n<script>window.pwned='code'</script>\n```\n\n"
              f"<style>body {{ display: none }}</style>")
    page = (f"<html><head><meta http-equiv=\"refresh\" content=\"0;url={sink}/refresh\"></head><body>"
            f"<h1>Injected {HOSTILE_WORD} heading</h1><script>window.pwned='tool';fetch('{sink}/tool')</script>"
            f"<iframe src=\"{sink}/iframe\"></iframe><form action=\"{sink}/form\" method=\"post\">"
            f"<button>go</button></form></body></html>")
    task_prompt = f"Survey the {HOSTILE_WORD} modules <script>window.pwned='subprompt'</script>"
    report = f"Three {HOSTILE_WORD} modules. <svg onload=\"window.pwned='svg'\"></svg>"
    bash_id, task_id = "toolu_01HostileBash0000000000", "toolu_01HostileTask0000000000"
    objs = [
        user(prompt, "2026-11-20T09:00:00.000Z"),
        said([{"type": "thinking", "thinking": f"<script>window.pwned='thinking'</script> the {HOSTILE_WORD} plan",
               "signature": "sig"}], "2026-11-20T09:00:02.000Z", message_id="msg_hostile_1"),
        said(answer, "2026-11-20T09:00:03.000Z", message_id="msg_hostile_1"),
        said([{"type": "tool_use", "id": bash_id, "name": "Bash",
               "input": {"command": f"curl -s {sink}/page", "description": f"<b>fetch</b> the {HOSTILE_WORD} page"}}],
             "2026-11-20T09:00:04.000Z", message_id="msg_hostile_2"),
        user([{"type": "tool_result", "tool_use_id": bash_id, "content": page}], "2026-11-20T09:00:05.000Z",
             toolUseResult={"stdout": page, "stderr": "", "interrupted": False, "isImage": False}),
        said([{"type": "tool_use", "id": task_id, "name": "Task",
               "input": {"description": f"<i>survey</i> the {HOSTILE_WORD} modules", "prompt": task_prompt,
                         "subagent_type": "general-purpose"}}], "2026-11-20T09:00:06.000Z",
             message_id="msg_hostile_3"),
        user([{"type": "tool_result", "tool_use_id": task_id, "content": [{"type": "text", "text": report}]}],
             "2026-11-20T09:01:00.000Z",
             toolUseResult={"status": "completed", "prompt": task_prompt, "agentId": HOSTILE_AGENT,
                            "agentType": "general-purpose", "content": [{"type": "text", "text": report}],
                            "totalDurationMs": 54000, "totalTokens": 1200, "totalToolUseCount": 2}),
        said(f"Done: the {HOSTILE_WORD} release is ready.", "2026-11-20T09:01:02.000Z", message_id="msg_hostile_4"),
    ]
    title = {"type": "custom-title", "customTitle": HOSTILE_NAME, "sessionId": HOSTILE_SESSION}
    agent = {"isSidechain": True, "agentId": HOSTILE_AGENT}
    sub = [user(task_prompt, "2026-11-20T09:00:07.000Z", **agent),
           said(f"Found them. <img src=x onerror=\"window.pwned='subagent'\"> "
                f"[the {HOSTILE_WORD} map](javascript:window.pwned='sublink')", "2026-11-20T09:00:50.000Z",
                message_id="msg_hostile_sub", **agent)]
    return _chain(objs) + [title], _chain(sub)


def write_hostile(projects, sink):
    """Write the hostile session (and its subagent) under ``projects``; the session file's path."""
    main, sub = hostile_lines(sink)
    folder = projects / "-work-evil"
    path = folder / f"{HOSTILE_SESSION}.jsonl"
    agent = folder / HOSTILE_SESSION / "subagents" / f"agent-{HOSTILE_AGENT}.jsonl"
    agent.parent.mkdir(parents=True)
    path.write_bytes(lines.encode(*main))
    agent.write_bytes(lines.encode(*sub))
    agent.with_suffix(".meta.json").write_text(json.dumps({"agentType": "general-purpose",
                                                           "description": "<i>survey</i> the modules"}))
    return path


def chats_import():
    """``chats import`` (a process) of the default transcripts folder; its JSON summary."""
    out = subprocess.run(CHATS + ["import", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    assert summary["errors"] == [] and summary["messages"] > 0, summary
    return summary


def next_turn(path, text, reply):
    """Two lines (a prompt and its answer) continuing the transcript at ``path``, as Claude Code appends them."""
    for raw in reversed(path.read_text().splitlines()):
        obj = json.loads(raw)
        if obj.get("uuid") and obj.get("cwd"):
            last = obj
            break
    else:
        raise AssertionError(f"no message line in {path}")
    env = {"session": last["sessionId"], "cwd": last["cwd"], "version": last.get("version", "1.0.0"),
           "gitBranch": last.get("gitBranch", "")}
    prompt = lines.user(text, ts="2026-11-21T08:00:00.000Z", **env)
    answer = lines.assistant(reply, ts="2026-11-21T08:00:02.000Z", message_id=f"msg_{uuid.uuid4().hex[:12]}", **env)
    prompt["parentUuid"], answer["parentUuid"] = last["uuid"], prompt["uuid"]
    return lines.encode(prompt, answer)


@pytest.fixture
def ui_journal(corpus, sink, isolated_home, tmp_path):
    """REAL and the hostile session, in ``$CLAUDE_CONFIG_DIR/projects``, imported by ``chats import``."""
    projects = tmp_path / "claude" / "projects"
    files = copy_real(corpus, projects)
    hostile = write_hostile(projects, sink.url)
    return Corpus(projects, files, hostile, chats_import())


@pytest.fixture
def ui(ui_journal, tmp_path):
    """``chats ui`` over ``ui_journal``; stopped (SIGTERM) after the test."""
    server = UI.start(tmp_path / "ui")
    yield server
    server.stop()
