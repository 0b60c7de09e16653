"""What a newcomer meets first (issue 16, item 14): ``chats sessions``, ``chats models list``, and a
hybrid search over a journal only partly embedded."""

import json

from tests.support.stand_ins import chats, line, turns, write


def test_sessions_lists_sessions_not_subagents_and_wastes_no_column_on_missing_names(tmp_path):
    folder = tmp_path / "projects" / "newcomer"
    write(folder / "sess-main.jsonl", [line("user", "plan the heron migration", "sess-main", 0, cwd="/work/newcomer")])
    # a subagent of it, working later (so newest first would list it first)
    write(folder / "sess-main" / "subagents" / "agent-a1.jsonl",
          [line("user", "look at the heron schema", "sess-main", 5, cwd="/work/newcomer", isSidechain=True,
                agentId="a1")])
    chats("import", str(tmp_path / "projects"))
    listed, resume = chats("sessions").splitlines()   # the one session, then the line that resumes it
    assert listed.startswith("sess-main ") and resume.endswith("claude --resume sess-main"), listed
    assert " " * 10 not in listed.split("msgs", 1)[1], listed    # no blank name column
    assert listed.rstrip().endswith("/work/newcomer")
    both = chats("sessions", "--subagents")
    assert "sess-main:agent-a1" in both
    assert [s["session_id"] for s in json.loads(chats("sessions", "--json"))] == ["sess-main"]


def test_models_list_does_not_call_a_model_available_that_is_not_here(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "empty-ollama-store"))
    text = chats("models", "list")
    llama = next(line for line in text.splitlines() if line.strip().startswith("llama"))
    assert "available" not in llama.replace("library installed", ""), llama
    assert "chats models setup" in llama and "ollama pull mxbai-embed-large" in llama
    assert "not on this machine" in text.splitlines()[0]
    listed = json.loads(chats("models", "list", "--json"))
    row = next(p for p in listed["providers"] if p["name"] == "llama")
    assert row["library"] and row["model"] == "missing" and not row["available"]


def test_hybrid_over_a_partly_embedded_journal_says_how_much_has_vectors(tmp_path, test_model_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    folder = tmp_path / "projects" / "newcomer"
    write(folder / "sess-early.jsonl", turns([f"the egret cache note {i}" for i in range(10)], "sess-early"))
    chats("import", str(tmp_path / "projects"))
    assert json.loads(chats("sync", "--json"))["embedded"] == 10
    write(folder / "sess-later.jsonl", turns([f"the egret queue line {i}" for i in range(90)], "sess-later"))
    chats("import", str(tmp_path / "projects"))
    found = json.loads(chats("search", "--json", "egret queue"))
    assert found["modes_run"] == ["fulltext", "semantic"], found["notes"]
    assert any("10 of 100 messages (10%) have vectors" in note and "chats sync" in note
               for note in found["notes"]), found["notes"]


def test_no_coverage_note_for_the_kinds_the_recipe_gives_no_vectors(tmp_path, test_model_path, monkeypatch):
    """With the default ``lean`` recipe thinking gets no vector: a journal full of it is fully embedded."""
    from tests.support import lines

    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    folder = tmp_path / "projects" / "newcomer"
    folder.mkdir(parents=True)
    rows = [lines.user("where does the egret cache live?", session="sess-think")]
    rows += [lines.assistant([{"type": "thinking", "thinking": f"egret thought {i}", "signature": "x"}],
                             session="sess-think") for i in range(12)]
    rows += [lines.assistant("the egret cache lives in the data folder", session="sess-think")]
    (folder / "sess-think.jsonl").write_bytes(lines.encode(*rows))
    chats("import", str(tmp_path / "projects"))
    assert json.loads(chats("sync", "--json"))["chunks"] == 2
    found = json.loads(chats("search", "--json", "egret cache"))
    assert found["modes_run"] == ["fulltext", "semantic"]
    assert not [n for n in found["notes"] if "have vectors" in n], found["notes"]
