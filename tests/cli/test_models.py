"""``chats models list|check|pull`` over a real journal and the test model."""

import json

import pytest

from claude_chats import paths
from claude_chats.localstore import db, vectors, writer
from claude_chats.models import canary_vector, embed_texts
from tests.support.cli import chats


def run(*args):
    return chats("models", *args)


@pytest.fixture
def journal_with_vectors(minilm):
    conn = db.connect(paths.journal_path())
    conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('s', '2026-01-01')")
    conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content) "
                 "VALUES ('u', ?, 0, 'user', 'text', 'hello there')", (writer.session_number(conn, "s"),))
    space_id = vectors.ensure_space(conn, minilm.space, canary_vector(minilm))
    [chunks] = embed_texts(minilm, ["hello there"])
    vectors.write_message_vectors(conn, space_id, 1, chunks)
    conn.close()


@pytest.fixture
def configured(monkeypatch, test_model_path):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "1")
    monkeypatch.setenv("CLAUDE_CHATS_EMBED_TEXT", "plain")  # the fixture's vectors are of the bare text


def test_list_without_a_journal():
    result = run("list")
    assert result.exit_code == 0
    assert "configured: llama mxbai-embed-large (default)" in result.output
    assert "spaces in the journal: none yet" in result.output
    for name in ("llama", "ollama", "bedrock", "openai"):
        assert f"  {name}" in result.output


def test_list_shows_spaces_and_counts(journal_with_vectors, configured):
    result = run("list", "--json")
    data = json.loads(result.output)
    assert data["spaces"] == [{"id": 1, "key": "llama/all-MiniLM-L6-v2.f16/384/{}", "vectors": 1, "messages": 1}]
    assert {p["name"] for p in data["providers"]} == {"llama", "ollama", "bedrock", "openai"}
    assert "1 vectors, 1 messages" in run("list").output


def test_check_passes_with_the_same_model(journal_with_vectors, configured):
    result = run("check")
    assert result.exit_code == 0, result.output
    assert "ok       llama all-MiniLM-L6-v2.f16 (384 dims) (1 vectors): canary cosine 1.0000" in result.output


def test_check_fails_with_another_model(journal_with_vectors, configured, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_DIMENSIONS", "128")
    result = run("check", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["configured"] == "llama/all-MiniLM-L6-v2.f16/128/{}"
    assert [s["status"] for s in data["spaces"]] == ["other"]


def test_check_tells_vectors_of_another_embedded_text(journal_with_vectors, configured, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_EMBED_TEXT", "context")
    result = run("check", "--json")
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and data["configured"] == 'llama/all-MiniLM-L6-v2.f16/384/{"text":"context-1"}'
    assert result.stderr.startswith("Error: no stored vectors of the configured") and "chats sync" in result.stderr
    assert [(s["status"], s["key"]) for s in data["spaces"]] == [("other", "llama/all-MiniLM-L6-v2.f16/384/{}")]
    assert "another embedded text" in data["spaces"][0]["detail"]


def test_check_without_vectors(configured):
    result = run("check")
    assert result.exit_code == 0 and "nothing to check" in result.output


def test_pull_offline_is_a_clear_message(monkeypatch, tmp_path):
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-store"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # what an offline machine is told to set (a refused
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # connection gives the same message, slower)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = run("pull", "mxbai-embed-large")
    assert result.exit_code == 1
    assert "cannot download mxbai-embed-large from Hugging Face" in result.output
    assert "chats models convert" in result.output and "Traceback" not in result.output


def test_pull_of_an_unknown_name(monkeypatch, tmp_path):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-store"))
    result = run("pull", "no-such-model")
    assert result.exit_code == 1 and "not a Hugging Face repo" in result.output
