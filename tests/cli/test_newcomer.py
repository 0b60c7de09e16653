"""What a newcomer meets first (issue 16, item 14): ``chats sessions``, ``chats models list``, and a
hybrid search over a journal only partly embedded."""

import json
import uuid as uuidlib

from click.testing import CliRunner

from claude_chats.cli import main


def line(kind, text, session, index, cwd="/work/newcomer", **extra):
    message = {"role": "user", "content": text} if kind == "user" else {
        "id": f"msg_{uuidlib.uuid4().hex[:8]}", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}]}
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.0", "gitBranch": "main", "type": kind, "message": message,
            "uuid": str(uuidlib.uuid4()), "timestamp": f"2026-01-0{1 + index // 60}T00:{index % 60:02d}:00.000Z",
            **extra}


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_sessions_lists_sessions_not_subagents_and_wastes_no_column_on_missing_names(tmp_path):
    folder = tmp_path / "projects" / "newcomer"
    write(folder / "sess-main.jsonl", [line("user", "plan the heron migration", "sess-main", 0)])
    # a subagent of it, working later (so newest first would list it first)
    write(folder / "sess-main" / "subagents" / "agent-a1.jsonl",
          [line("user", "look at the heron schema", "sess-main", 5, isSidechain=True, agentId="a1")])
    chats("import", str(tmp_path / "projects"))
    listed = chats("sessions").splitlines()
    assert len(listed) == 1 and listed[0].startswith("sess-main "), listed
    assert " " * 10 not in listed[0].split("msgs", 1)[1], listed    # no blank name column
    assert listed[0].rstrip().endswith("/work/newcomer")
    both = chats("sessions", "--subagents")
    assert "sess-main:agent-a1" in both
    assert [s["session_id"] for s in json.loads(chats("sessions", "--json"))] == ["sess-main"]


def test_models_list_does_not_call_a_model_available_that_is_not_here(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "empty-ollama-store"))
    text = chats("models", "list")
    llama = next(line for line in text.splitlines() if line.strip().startswith("llama"))
    assert "available" not in llama.replace("library installed", ""), llama
    assert "chats models pull mxbai-embed-large" in llama
    assert "not on this machine" in text.splitlines()[0]
    listed = json.loads(chats("models", "list", "--json"))
    row = next(p for p in listed["providers"] if p["name"] == "llama")
    assert row["library"] and row["model"] == "missing" and not row["available"]


def test_hybrid_over_a_partly_embedded_journal_says_how_much_has_vectors(tmp_path, test_model_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    folder = tmp_path / "projects" / "newcomer"
    write(folder / "sess-early.jsonl", [line("user" if i % 2 == 0 else "assistant", f"the egret cache note {i}",
                                             "sess-early", i) for i in range(10)])
    chats("import", str(tmp_path / "projects"))
    assert json.loads(chats("sync", "--json"))["embedded"] == 10
    write(folder / "sess-later.jsonl", [line("user" if i % 2 == 0 else "assistant", f"the egret queue line {i}",
                                             "sess-later", i) for i in range(90)])
    chats("import", str(tmp_path / "projects"))
    found = json.loads(chats("search", "--json", "egret queue"))
    assert found["modes_run"] == ["fulltext", "semantic"], found["notes"]
    assert any("10 of 100 messages (10%) have vectors" in note and "chats sync" in note
               for note in found["notes"]), found["notes"]
