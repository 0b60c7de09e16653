"""Transcripts Claude Code 2.1.332 wrote (tests/claude_code/fixtures/, made by
make_fixtures.py): what they hold, read with plain json, and ``chats import`` of
them. These run without the CLI."""

import json
import os
import pathlib
import subprocess
import sys

from .harness import Transcript, read_jsonl

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())


def _transcript(scenario, index=0):
    sid = MANIFEST["scenarios"][scenario]["sessions"][index]
    path = FIXTURES / scenario / f"{sid}.jsonl"
    return Transcript(path, read_jsonl(path))


def _chats(*args):
    chats = pathlib.Path(sys.executable).parent / "chats"
    proc = subprocess.run([str(chats), *args], capture_output=True, text=True, env=os.environ, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_every_fixture_line_is_json_of_version_2_1_332():
    for path in FIXTURES.rglob("*.jsonl"):
        for rec in read_jsonl(path):
            if "version" in rec:
                assert rec["version"] == MANIFEST["claude_code_version"]


def test_fixture_facts():
    bash = _transcript("print-bash")
    assert bash.prompts() == ["list the greeting @bash(echo hello-fixture)"]
    assert {r.get("entrypoint") for r in bash.of_type("user")} == {"sdk-cli"}
    assert [r.get("promptSource") for r in bash.of_type("user") if bash.prompts()[0] == r["message"]["content"]] == ["sdk"]
    # each assistant line holds one content block; a reply with a tool call is 2 lines sharing message.id
    assistants = bash.of_type("assistant")
    assert all(len(r["message"]["content"]) == 1 for r in assistants)
    assert assistants[0]["message"]["id"] == assistants[1]["message"]["id"]

    inter = _transcript("interactive-session")
    assert {r.get("entrypoint") for r in inter.of_type("user")} == {"cli"}
    assert {r["aiTitle"] for r in inter.of_type("ai-title")} == {"Scripted session title"}
    assert {r["customTitle"] for r in inter.of_type("custom-title")} == {"lighthouse-notes"}
    assert len(inter.of_type("system", "compact_boundary")) == 1
    commands = [r["commandRun"]["command"] for r in inter.of_type("system", "local_command") if r.get("commandRun")]
    assert commands == ["rename", "recap", "fork"]

    parent, fork = _transcript("print-fork", 0), _transcript("print-fork", 1)
    if len(parent.prompts()) > len(fork.prompts()):
        parent, fork = fork, parent
    shared = {r["uuid"] for r in parent.of_type("user")} & {r["uuid"] for r in fork.of_type("user")}
    assert shared and all(r["sessionId"] == fork.session_id for r in fork.of_type("user"))

    (link,) = {r["prUrl"] for r in _transcript("print-pr-link").of_type("pr-link")}
    assert link == "https://github.com/example/widgets/pull/42"

    sub = _transcript("print-subagent")
    (meta_path,) = (FIXTURES / "print-subagent" / sub.session_id / "subagents").glob("*.meta.json")
    assert json.loads(meta_path.read_text())["agentType"] == "general-purpose"


def test_import_of_the_fixtures_keeps_every_prompt_and_answer():
    _chats("import", str(FIXTURES), "--json")
    for scenario in ("print-bash", "print-subagent", "print-pr-link", "interactive-session"):
        t = _transcript(scenario)
        shown = json.loads(_chats("show", t.session_id, "--json"))
        stored = [m["content"] for m in shown["messages"]]
        for text in t.prompts() + t.assistant_texts():
            assert text in stored, (scenario, text)
