"""Claude Code's CLAUDE_CODE_SUBPROCESS_ENV_SCRUB (issue 13 item 7): what it takes, what search and sync say,
what ``chats doctor`` says. What the scrub removes was observed with the real CLI
(tests/claude_code/test_scrub.py); here each consequence is checked in-process."""

import asyncio
import json

import pytest
from fastmcp import Client

from claude_chats import config, doctor, install, scrub
from claude_chats.mcp.server import create_server
from claude_chats.stores import open_searcher
from claude_chats.sync.runner import run_sync

KEY = "sk-test-0123456789abcdefghijklmnop"


@pytest.fixture
def scrubbed(monkeypatch, tmp_path):
    """A process Claude Code started with the scrub on: the flag passed on, the secrets gone, no ~/.aws."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(scrub.FLAG, "1")
    for name in ("OPENAI_API_KEY", *scrub.AWS_SECRETS, "PGPASSWORD", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("0", False), ("", False), ("no", False)])
def test_the_flag(value, on):
    assert scrub.scrub_on({scrub.FLAG: value}) is on


def test_a_url_with_a_password_is_scrubbed_whatever_its_name():
    assert scrub.scrubbed_by_value("postgresql://u:pw@db.example.com/chats")
    assert not scrub.scrubbed_by_value("postgresql://u@db.example.com/chats")
    assert not scrub.scrubbed_by_value("postgresql:///chats?host=/tmp")


def test_openai_without_its_key_says_the_scrub_took_it(scrubbed, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    reason = scrub.missing_credential(config.load())
    assert "OPENAI_API_KEY" in reason and "chats config set openai_api_key" in reason
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")   # a local server needs no key
    assert scrub.missing_credential(config.load()) is None


def test_openai_with_its_key_in_config_toml_is_fine(scrubbed, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    config.write_values({"openai_api_key": KEY})
    assert scrub.missing_credential(config.load()) is None


def test_bedrock_without_keys_or_files_says_so(scrubbed, monkeypatch, tmp_path):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "bedrock")
    assert "~/.aws/credentials" in scrub.missing_credential(config.load())
    (tmp_path / "home" / ".aws").mkdir(parents=True)
    (tmp_path / "home" / ".aws" / "credentials").write_text("[default]\n")
    assert scrub.missing_credential(config.load()) is None


def test_without_the_scrub_nothing_is_said(monkeypatch):
    monkeypatch.delenv(scrub.FLAG, raising=False)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    assert scrub.missing_credential(config.load()) is None


def search(journal, **arguments):
    server = create_server(lambda: open_searcher(journal_path=journal.path))

    async def go():
        async with Client(server) as client:
            return (await client.call_tool("search_memory", arguments)).structured_content
    return asyncio.run(go())


def test_mcp_search_falls_back_to_full_text_with_the_reason(scrubbed, monkeypatch, synced_journal):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    result = search(synced_journal, query="the pod is OOMKilled in CrashLoopBackOff")
    assert result["modes_run"] == ["fulltext"] and result["hits"][0]["session_id"] == "s-k8s"
    (note,) = [n for n in result["notes"] if scrub.FLAG in n]
    assert note.startswith("embedding model unavailable, hybrid ran full text only")
    assert "OPENAI_API_KEY" in note and "config.toml" in note


def test_sync_under_the_scrub_says_why_nothing_is_embedded(scrubbed, monkeypatch, empty_journal):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    report = run_sync(config.load(), journal=empty_journal, lock=False)
    assert not report.ok and any(scrub.FLAG in e and "openai_api_key" in e for e in report.errors), report.errors


def check():
    return {c.name: c for c in doctor.run(checks=(doctor.check_scrub,))}["scrub"]


def test_doctor_names_what_the_scrub_takes_and_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DATABASE_URL", "postgresql://chats:pw@db.example.com/chats?sslmode=require")
    monkeypatch.delenv(scrub.FLAG, raising=False)
    off = check()
    assert off.status == doctor.PASS and "would remove" in off.detail and "OPENAI_API_KEY" in off.detail
    monkeypatch.setenv(scrub.FLAG, "1")
    on = check()
    assert on.status == doctor.FAIL
    assert "OPENAI_API_KEY" in on.detail and "DATABASE_URL" in on.detail and KEY not in on.detail + on.fix
    assert "pw" not in on.detail.replace("password", "")
    assert "chats config set openai_api_key" in on.fix and "~/.pgpass" in on.fix


def test_doctor_reads_the_flag_from_claude_codes_settings_and_passes_once_fixed(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv(scrub.FLAG, raising=False)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with open(install.settings_path(), "w") as fh:
        json.dump({"env": {scrub.FLAG: "1"}}, fh)
    failed = check()
    assert failed.status == doctor.FAIL and install.settings_path() in failed.detail
    monkeypatch.delenv("OPENAI_API_KEY")
    config.write_values({"openai_api_key": KEY})
    fixed = check()
    assert fixed.status == doctor.PASS and "on (env of" in fixed.detail
