"""Claude Code 2.1.332 with CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 (issue 13 item 7).

The scrub needs bubblewrap (``apt-get install bubblewrap``); without it Claude Code refuses
to start, and these tests skip. The person's shell has the OpenAI key and a database URL
with a password; the conversations were synced from that shell (a fake OpenAI server
embedding them). Inside Claude Code, ``chats mcp`` gets neither: its search runs full text
and its notes say why and how to fix it; ``chats doctor`` in the shell says the same.
"""

import json
import shutil
import sys

import pytest

from claude_chats.scrub import FLAG
from tests.support.fakes import Server, openai_embeddings

from .harness import HERE, tool_result_text

KEY = "sk-test-scrubbed-0123456789abcdef"
SHELL = {FLAG: "1", "OPENAI_API_KEY": KEY, "DATABASE_URL": "postgresql://chats:hunter2pw@db.invalid/chats",
         "PGPASSWORD": "hunter2pw", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE01", "AWS_SECRET_ACCESS_KEY": "abc/def",
         "AWS_SESSION_TOKEN": "tok", "AWS_PROFILE": "work", "AWS_REGION": "eu-west-1",
         "PLAIN_URL": "postgresql://chats@db.invalid/chats"}
SCRUBBED = ("OPENAI_API_KEY", "DATABASE_URL", "PGPASSWORD", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN")
KEPT = ("AWS_PROFILE", "AWS_REGION", "PLAIN_URL", FLAG)
SEARCH = "mcp__conversation-memory__search_memory"

pytestmark = pytest.mark.skipif(not shutil.which("bwrap"), reason="Claude Code's env scrub needs bubblewrap "
                                "(apt-get install bubblewrap)")


@pytest.fixture
def synced(scratch):
    """An earlier session, embedded from the person's shell with the openai provider."""
    earlier = scratch.print_turn("the ocelot migration plan @bash(echo ocelot-plan-ready)")
    assert earlier.returncode == 0, earlier.stderr
    scratch.chats("config", "set", "provider", "openai")
    scratch.chats("config", "set", "model", "text-embedding-3-small")   # install configured a local model
    with Server({"/v1/embeddings": openai_embeddings}) as openai:
        synced = scratch.chats("sync", "--json", OPENAI_API_KEY=KEY, OPENAI_BASE_URL=f"{openai.url}/v1")
    assert json.loads(synced.stdout)["ok"], synced.stdout
    return earlier.session_id


def test_scrubbed_mcp_search_runs_full_text_and_says_why(scratch, synced, tmp_path):
    dump = tmp_path / "env.json"
    added = scratch.claude("mcp", "add", "--scope", "user", "envdump", "--", sys.executable,
                           str(HERE / "env_server.py"), str(dump))
    assert added.returncode == 0, added.stderr
    # the scrub forces the default permission mode: the memory tool is allowed by name
    args = {"query": "ocelot migration plan", "mode": "hybrid", "origin": "any"}   # print mode: machine-made
    res = scratch.print_turn(f"@mcp(search_memory {json.dumps(args)})", "--allowedTools", SEARCH, **SHELL)
    assert res.returncode == 0, res.stderr
    passed = json.loads(dump.read_text())
    assert [v for v in SCRUBBED if v in passed] == [] and all(passed.get(v) == SHELL[v] for v in KEPT), {
        v: passed.get(v) for v in SCRUBBED + KEPT}
    t = scratch.transcript(res.session_id)
    (use,) = [u for u in t.tool_uses() if u["name"] == SEARCH]
    (result,) = [tool_result_text(r) for r in t.tool_results() if r["tool_use_id"] == use["id"]]
    found = json.loads(result)
    assert found["modes_run"] == ["fulltext"] and found["hits"][0]["session_id"] == synced
    (note,) = [n for n in found["notes"] if FLAG in n]
    assert "OPENAI_API_KEY" in note and "chats config set openai_api_key" in note and KEY not in result


def test_doctor_in_the_shell_says_what_the_scrub_takes(scratch, synced):
    with Server({"/v1/embeddings": openai_embeddings}) as openai:   # the model check asks it, not api.openai.com
        doctor = scratch.chats("doctor", "--json", check=False, OPENAI_BASE_URL=f"{openai.url}/v1", **SHELL)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)}
    scrub = checks["scrub"]
    assert scrub["status"] == "fail"
    for name in ("OPENAI_API_KEY", "DATABASE_URL", "PGPASSWORD"):
        assert name in scrub["detail"]
    assert KEY not in json.dumps(scrub) and "hunter2pw" not in json.dumps(scrub)
    assert "config.toml" in scrub["fix"] and "~/.pgpass" in scrub["fix"]
