"""Access: what claude-chats writes is the owner's only, and no credential reaches any output or file.

Every file and folder created by the hook, import, sync, search, status and
doctor is owner-only (files 0600, folders 0700), in the one-folder layout
(CLAUDE_CHATS_HOME) and the XDG layout. With a database password and an API
key configured and both services failing, every command's output (text and
``--json``), the hook and sync logs, the config file and the journal's own
bytes are searched for them.
"""

import http.server
import json
import os
import stat
import subprocess
import sys
import threading
from urllib.parse import quote

import pytest

from claude_chats import config, models, paths, redact
from claude_chats.localstore.journal import Journal
from claude_chats.sync.runner import run_sync
from tests.support import lines, redaction_corpus
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.fuzzing import LONG
from tests.support.hooks import Transcripts, hook_payload, run_hook

PASSWORD = "Pw-0f-the-DB:s3cr@t/x"          # URL-special characters: it appears percent-encoded in the URL
API_KEY = "sk-proj-" + "TestOnlyNotAKey" * 4
SECRETS = (PASSWORD, quote(PASSWORD, safe=""), API_KEY)


def _seed(tmp_path):
    transcript = tmp_path / "projects" / "sess-1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(lines.encode(*lines.conversation(6)))
    run_hook(json.dumps({"session_id": "sess-1", "transcript_path": str(transcript)}).encode())
    return transcript


def _modes(*roots):
    found = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                found[path] = stat.S_IMODE(os.lstat(path).st_mode)
            found[folder] = stat.S_IMODE(os.lstat(folder).st_mode)
    return found


def _every_command(tmp_path, transcript):
    """Run what a person runs; return the outputs."""
    outputs = []
    for args in (["import", str(transcript.parent)], ["sync", "--json"], ["sync"], ["status", "--json"], ["status"],
                 ["doctor", "--json"], ["doctor"], ["config", "show", "--json"], ["config", "show"],
                 ["search", "quick brown fox", "--json"], ["search", "quick brown fox"],
                 ["search", "fox", "--mode", "semantic"], ["sessions", "--json"], ["show", "sess-1", "--json"]):
        result = chats(*args)
        outputs.append((args, result.output + getattr(result, "stderr", "")))
    background = subprocess.run([sys.executable, "-m", "claude_chats.sync", "--background"], capture_output=True,
                                text=True, timeout=120)
    outputs.append((["background sync"], background.stdout + background.stderr))
    outputs.extend(_mcp_calls())
    return outputs


def _mcp_calls():
    """The MCP tools over the configured stores (Postgres unreachable: answered from the journal)."""
    import asyncio

    from fastmcp import Client
    from fastmcp.exceptions import ToolError

    from claude_chats.mcp.server import create_server

    calls = [("search_memory", {"query": "quick brown fox"}), ("search_memory", {"query": "fox", "mode": "semantic"}),
             ("get_conversation", {"session_id": "sess-1"}), ("get_conversation", {"session_id": "nope"}),
             ("list_recent_sessions", {})]

    async def go():
        out = []
        async with Client(create_server()) as client:
            for tool, arguments in calls:
                try:
                    result = await client.call_tool(tool, arguments)
                    out.append((["mcp", tool], json.dumps(result.structured_content)))
                except ToolError as exc:
                    out.append((["mcp", tool], str(exc)))
        return out
    return asyncio.run(go())


class _Refusing(http.server.BaseHTTPRequestHandler):
    """An embedding API that refuses the key at once, as OpenAI does: 401 (not retried), key masked."""

    echo = False

    def do_POST(self):
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        shown = key if self.echo else key[:8] + "*" * 20 + key[-4:]
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {shown}.", "type":
                                     "invalid_request_error", "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture
def embedding_api():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Refusing
    server.shutdown()
    server.server_close()


@pytest.fixture
def secrets_configured(monkeypatch, embedding_api):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://chats:{quote(PASSWORD, safe='')}@127.0.0.1:9/chats")
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", embedding_api[0])
    return embedding_api[1]


def test_no_credential_in_any_output_log_or_file(tmp_path, secrets_configured):
    transcript = _seed(tmp_path)
    outputs = _every_command(tmp_path, transcript)
    for args, text in outputs:
        for secret in SECRETS:
            assert secret not in text, f"`chats {' '.join(args)}` printed a credential:\n{text}"
    roots = [paths.data_dir(), paths.log_dir(), paths.config_dir()]
    for path in _modes(*roots):
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                data = fh.read()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{path} holds a credential"
    assert any("127.0.0.1" in text or "Postgres" in text for _, text in outputs)   # the failures were reported
    assert any("API key" in text for _, text in outputs)


def test_a_key_echoed_by_the_provider_is_not_printed(tmp_path, secrets_configured):
    secrets_configured.echo = True
    try:
        outputs = _every_command(tmp_path, _seed(tmp_path))
    finally:
        secrets_configured.echo = False
    leaks = [args for args, text in outputs if API_KEY in text]
    assert not leaks, leaks


def test_a_remote_database_without_tls_is_refused_with_the_password_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"postgresql://chats:{quote(PASSWORD, safe='')}@db.example.com/chats")
    _seed(tmp_path)
    for args in (["sync", "--json"], ["sync"], ["status", "--json"], ["search", "fox", "--json"]):
        result = chats(*args)
        text = result.output + result.stderr
        assert "TLS" in text or "sslmode" in text, (args, text)
        for secret in SECRETS:
            assert secret not in text, (args, text)


@pytest.mark.parametrize("layout", ["home", "xdg"])
def test_everything_written_is_owner_only(tmp_path, monkeypatch, layout, secrets_configured):
    if layout == "xdg":
        monkeypatch.delenv("CLAUDE_CHATS_HOME")
        for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
            monkeypatch.setenv(var, str(tmp_path / var.lower()))
    os.umask(0o022)                       # a usual umask: what is private must be made so on purpose
    transcript = _seed(tmp_path)
    run_hook(b"not json")                  # the hook log
    chats("config", "set", "sync_interval", "600")
    _every_command(tmp_path, transcript)
    roots = [r for r in {paths.data_dir(), paths.log_dir(), paths.config_dir()} if os.path.exists(r)]
    modes = _modes(*roots)
    assert any(p.endswith("journal.db") for p in modes) and any(p.endswith("hook.log") for p in modes)
    loose = {p: oct(m) for p, m in modes.items()
             if (m & 0o077) and not (os.path.isdir(p) and p not in roots and _is_parent_of_ours(p, roots))}
    assert not loose, loose


def _is_parent_of_ours(path, roots):
    return any(r.startswith(path + os.sep) for r in roots)


# -- secrets in the conversations themselves: redacted before they leave the machine --------------

def _conversation_with_secrets(tmp_path):
    samples = redaction_corpus.SECRETS[:12]
    convo = [lines.user(f"here is my config: {s.text}", session="leaky") if i % 2 == 0 else
             lines.assistant(f"noted, the value is {s.text}", session="leaky") for i, s in enumerate(samples)]
    transcript = tmp_path / "projects" / "leaky.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_bytes(lines.encode(*convo))
    run_hook(json.dumps({"session_id": "leaky", "transcript_path": str(transcript)}).encode())
    return samples


def _postgres_text(url):
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT content FROM messages").fetchall()
    return "\n".join(r[0] for r in rows)


def test_sync_with_redaction_pushes_placeholders_and_the_journal_keeps_the_original(tmp_path, pg_db_url):
    samples = _conversation_with_secrets(tmp_path)
    with Journal.open() as journal:
        report = run_sync(config.load({"database_url": pg_db_url}), journal=journal, provider=HashEmbedder(),
                          redact=redact.redact, lock=False)
        assert report.ok, report.errors
        local = "\n".join(m["content"] for m in journal.messages("leaky"))
    remote = _postgres_text(pg_db_url)
    for s in samples:
        assert s.secret not in remote and s.secret in local
    assert remote.count("[REDACTED:") >= len(samples)


@pytest.fixture
def default_sync(pg_db_url, monkeypatch):
    """``chats sync --json`` as configured by default (redact on), into ``pg_db_url``, with the test embedder."""
    class Provider(HashEmbedder):
        def __init__(self, **_settings):
            super().__init__()

    monkeypatch.setitem(models.PROVIDERS, "test-hash", Provider)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "test-hash")
    monkeypatch.setenv("DATABASE_URL", pg_db_url)

    def run():
        result = chats("sync", "--json")
        assert json.loads(result.output)["ok"], result.output
    return run


def test_default_sync_pushes_no_secret(tmp_path, pg_db_url, default_sync):
    samples = _conversation_with_secrets(tmp_path)
    default_sync()
    remote = _postgres_text(pg_db_url)
    assert not [s.name for s in samples if s.secret in remote]


def test_default_sync_pushes_no_secret_in_a_session_name(tmp_path, pg_db_url, default_sync):
    import psycopg

    sample = redaction_corpus.SECRETS[0]
    _conversation_with_secrets(tmp_path)
    title = tmp_path / "projects" / "leaky.jsonl"
    with open(title, "ab") as fh:
        fh.write(lines.encode({"type": "custom-title", "customTitle": f"debug {sample.text}", "sessionId": "leaky"}))
    run_hook(json.dumps({"session_id": "leaky", "transcript_path": str(title)}).encode())
    default_sync()
    with psycopg.connect(pg_db_url) as conn:
        names = " ".join(r[0] or "" for r in conn.execute("SELECT name FROM conversations").fetchall())
    assert "debug" in names and sample.secret not in names


class _Embeddings(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible embeddings API that keeps every input it is sent."""

    received = []

    def do_POST(self):
        import base64
        import zlib

        import numpy as np

        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
        self.received.extend(inputs)
        data = []
        for index, text in enumerate(inputs):
            vector = np.zeros(request.get("dimensions", 16), dtype=np.float32)
            for word in str(text).split():
                vector[zlib.crc32(word.encode()) % len(vector)] += 1
            vector[0] += 0.5
            encoded = base64.b64encode(vector.tobytes()).decode() if request.get("encoding_format") == "base64" \
                else vector.tolist()
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        body = json.dumps({"object": "list", "data": data, "model": request["model"],
                           "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_semantic_query_sent_to_a_remote_embedding_api_is_redacted(tmp_path, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Embeddings.received = []
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    monkeypatch.setenv("CLAUDE_CHATS_DIMENSIONS", "16")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    try:
        samples = _conversation_with_secrets(tmp_path)
        assert json.loads(chats("sync", "--json").output)["embedded"] > 0
        synced = "\n".join(map(str, _Embeddings.received))
        assert _Embeddings.received and not [s.name for s in samples if s.secret in synced]
        query = f"where did I paste {samples[0].text}"
        result = chats("search", query, "--mode", "semantic", "--local", "--json")
        assert result.exit_code == 0, result.output
        assert samples[0].secret not in "\n".join(map(str, _Embeddings.received))
    finally:
        server.shutdown()
        server.server_close()


# -- the Postgres role at run time -------------------------------------------------------------

RUNTIME_GRANTS = """
GRANT CONNECT ON DATABASE {db} TO {role};
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


def _runtime_role(pg_db_url):
    """A role with the run-time grants only; returns (its URL, a function that drops it)."""
    import uuid as uuidlib

    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    role, db = f"chats_rt_{uuidlib.uuid4().hex[:8]}", conninfo_to_dict(pg_db_url)["dbname"]
    with psycopg.connect(pg_db_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(RUNTIME_GRANTS.format(db=db, role=role))

    def drop():
        with psycopg.connect(pg_db_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
    return make_conninfo(pg_db_url, user=role), drop


def _sync(url, provider=None, **options):
    with Journal.open() as journal:
        return run_sync(config.load({"database_url": url}), journal=journal, provider=provider or HashEmbedder(),
                        lock=False, **options)


@pytest.fixture
def runtime_role(tmp_path, pg_db_url):
    """A session synced once by the owner (migrations, the space, its vector table), then a role with the
    run-time grants only: (transcripts, the role's URL)."""
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=0)
    transcripts.grow(10)
    run_hook(hook_payload(transcripts, "sess-0"))
    assert _sync(pg_db_url).ok
    url, drop = _runtime_role(pg_db_url)
    yield transcripts, url
    drop()


def test_sync_and_search_run_as_a_role_without_superuser_or_ddl_rights(runtime_role):
    """Everyday sync and search as a role with SELECT/INSERT/UPDATE/DELETE only (RELIABILITY.md
    documents the grants); a new embedding space needs a new vector table: the owner's job."""
    from claude_chats.pgstore.search import open_search
    from claude_chats.search.searcher import Searcher
    from tests.support.fakes import _Fixed

    transcripts, url = runtime_role
    transcripts.grow(40)
    run_hook(hook_payload(transcripts, "sess-0"))
    report = _sync(url)
    assert report.ok and report.pushed == 40 and report.pending_after == 0, report.errors
    other = _sync(url, _OtherModel())
    assert not other.ok and any("permission denied" in e and "\n" not in e for e in other.errors), other.errors
    backend = open_search(url)
    try:
        result = Searcher(None, _Fixed(backend), HashEmbedder).search("sess-0 main message 42", mode="hybrid")
        assert result["source"] == "postgres" and result["hits"], result["notes"]
    finally:
        backend.close()


class _OtherModel(HashEmbedder):
    model_id = "hash-32-other"


@pytest.mark.skipif(not LONG, reason="20,000 messages: long runs only")
def test_a_big_backlog_syncs_as_the_runtime_role(runtime_role):
    transcripts, url = runtime_role
    transcripts.grow(20_000)
    run_hook(hook_payload(transcripts, "sess-0"))
    report = _sync(url, batch_size=5000)
    assert report.ok, report.errors
